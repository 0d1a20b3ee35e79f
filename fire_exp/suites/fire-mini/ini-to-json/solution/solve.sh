#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
python3 - <<'PY'
import configparser, json
cp = configparser.ConfigParser()
cp.read("conf/app.ini")
def typed(v):
    if v in ("true", "false"):
        return v == "true"
    return int(v) if v.lstrip("-").isdigit() else v
json.dump({s: {k: typed(v) for k, v in cp[s].items()} for s in cp.sections()},
          open("conf/app.json", "w"), indent=2)
PY
