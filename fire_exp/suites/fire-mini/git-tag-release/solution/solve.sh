#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}/repo"
rev="$(git log --format='%H %s' | awk '$2 == "Release" && $3 == "1.2.0" {print $1}')"
git -c user.name=oracle -c user.email=oracle@example.com tag -a v1.2.0 -m "Version 1.2.0" "$rev"
