"""summary.json holds the right count and total per region."""

import json
import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
expected = json.load(open(os.path.join(tests, "expected.json")))
try:
    got = json.load(open(os.path.join(work, "summary.json")))
except (OSError, ValueError) as exc:
    sys.exit(f"summary.json unreadable: {exc}")
if set(got) != set(expected):
    sys.exit(f"regions {sorted(got)} != {sorted(expected)}")
for region, want in expected.items():
    have = got[region]
    if have.get("count") != want["count"] or abs(float(have.get("total", -1)) - want["total"]) > 0.005:
        sys.exit(f"{region}: {have} != {want}")
print("ok")
