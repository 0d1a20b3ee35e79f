#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
tail -n +2 data/signups.csv | cut -d, -f2 | tr -d ' ' | tr 'A-Z' 'a-z' | LC_ALL=C sort -u > emails.txt
