"""merged.json is the recursive merge of base.json and override.json."""

import json
import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
expected = json.load(open(os.path.join(tests, "expected.json")))
try:
    got = json.load(open(os.path.join(work, "config", "merged.json")))
except (OSError, ValueError) as exc:
    sys.exit(f"merged.json unreadable: {exc}")
if got != expected:
    sys.exit(f"merged.json differs from the recursive merge: {got}")
print("ok")
