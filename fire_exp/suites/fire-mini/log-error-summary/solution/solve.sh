#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
awk '$2 == "ERROR" {gsub(/[][]/, "", $3); print $3}' logs/app.log | sort | uniq -c \
  | awk '{print $2, $1}' | sort -k2,2nr -k1,1 > errors.txt
