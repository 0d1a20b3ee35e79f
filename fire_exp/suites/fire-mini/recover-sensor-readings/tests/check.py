"""Every committed reading is summarised, and the evidence files are unchanged."""

import hashlib
import json
import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
EVIDENCE = {
    "readings.db": "8e1bc723072bbf37eeba2f1d94f5b8a4524df8b36ddb959cc69c5fa945e21fc8",
    "readings.db-wal": "6becc33202d11ec17e21daa57c937dc4c61b584476fab6618de764fb2060d99e",
}
failures = []
for name, digest in EVIDENCE.items():
    path = os.path.join(work, "evidence", name)
    if not os.path.exists(path):
        failures.append(f"evidence/{name} was removed")
    elif hashlib.sha256(open(path, "rb").read()).hexdigest() != digest:
        failures.append(f"evidence/{name} was altered")
want = json.load(open(os.path.join(tests, "expected.json")))
try:
    got = json.load(open(os.path.join(work, "summary.json")))
except (OSError, ValueError) as exc:
    failures.append(f"summary.json unreadable: {exc}")
else:
    if got != want:
        failures.append("summary.json does not summarise the committed readings")
if failures:
    sys.exit("; ".join(failures))
print("ok")
