#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}/doc"
python3 build.py
grep -n 'Overfull \\hbox' out/report.log || true
sed -i -e 's#annual-inventory-report-final.csv#annual-\\-inventory-\\-report-\\-final.csv#' \
  -e 's#Independent-Booksellers-#Independent-\\-Booksellers-\\-#' report.src
python3 build.py
! grep -n 'Overfull \\hbox' out/report.log
