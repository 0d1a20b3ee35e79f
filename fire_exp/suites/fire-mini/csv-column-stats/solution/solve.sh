#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
python3 - <<'PY'
import csv, json
summary = {}
with open("data/sales.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        s = summary.setdefault(row["region"], {"count": 0, "total": 0.0})
        s["count"] += 1
        s["total"] += float(row["amount"])
for s in summary.values():
    s["total"] = round(s["total"], 2)
json.dump(summary, open("summary.json", "w"), indent=1, sort_keys=True)
PY
