#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
# Work on a byte copy of the whole evidence folder (the -wal sidecar holds the rows).
cp -a evidence /tmp/evidence-copy
python3 - <<'PY'
import csv
import sqlite3

con = sqlite3.connect("/tmp/evidence-copy/orders.db")
rows = con.execute("SELECT id, customer, amount_cents FROM orders ORDER BY id").fetchall()
with open("recovered.csv", "w", newline="") as fh:
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(["id", "customer", "amount_cents"])
    writer.writerows(rows)
print(len(rows), "rows recovered")
PY
