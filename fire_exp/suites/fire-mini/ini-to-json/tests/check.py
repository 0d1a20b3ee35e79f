"""app.json is the typed JSON form of app.ini."""

import json
import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
want = json.load(open(os.path.join(tests, "expected.json")))
try:
    got = json.load(open(os.path.join(work, "conf", "app.json")))
except (OSError, ValueError) as exc:
    sys.exit(f"app.json unreadable: {exc}")
if got != want or any(type(got[s][k]) is not type(v) for s in want for k, v in want[s].items()):
    sys.exit(f"app.json differs: {got}")
print("ok")
