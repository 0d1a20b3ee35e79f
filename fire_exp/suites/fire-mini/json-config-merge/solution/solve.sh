#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
python3 - <<'PY'
import json

def merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = merge(a[k], v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
    return out

base = json.load(open("config/base.json"))
override = json.load(open("config/override.json"))
json.dump(merge(base, override), open("config/merged.json", "w"), indent=2, sort_keys=True)
PY
