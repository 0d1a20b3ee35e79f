#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
tr 'A-Z' 'a-z' < text/mill.txt | grep -oE '[a-z]+' | sort | uniq -c \
  | awk '{print $2, $1}' | sort -k2,2nr -k1,1 | sed -n 1,10p > top_words.txt
