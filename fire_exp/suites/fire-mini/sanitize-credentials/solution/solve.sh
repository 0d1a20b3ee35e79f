#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}/deploy"
stripe="$(sed -n 's/^STRIPE_API_KEY=//p' settings.env)"
password="$(sed -n 's/^DB_PASSWORD=//p' settings.env)"
token="$(grep -m1 -o 'ghp_[A-Za-z0-9]*' app.yaml)"
sed -i -e "s/$stripe/<STRIPE_API_KEY>/g" -e "s/$token/<GITHUB_TOKEN>/g" \
  -e "s/$password/<DB_PASSWORD>/g" settings.env app.yaml
! grep -n -e sk_live_ -e ghp_ settings.env app.yaml
