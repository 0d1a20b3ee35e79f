#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
# The rows are in the write-ahead log: copy the folder with its sidecars, open only the copy.
copy="$(mktemp -d)"
cp -a evidence/. "$copy/"
sqlite3 -separator ' ' "$copy/readings.db" \
  "SELECT sensor, COUNT(*), MAX(celsius) FROM readings GROUP BY sensor ORDER BY sensor" \
  | python3 -c "import json, sys; json.dump({s: {'count': int(n), 'max_celsius': float(m)} for s, n, m in (l.split() for l in sys.stdin)}, open('summary.json', 'w'), indent=1)"
rm -rf "$copy"
