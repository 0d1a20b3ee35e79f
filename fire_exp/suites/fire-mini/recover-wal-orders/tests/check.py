"""Every committed row is recovered, and the evidence files are unchanged."""

import hashlib
import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
EVIDENCE = {
    "orders.db": "6ee5e780637e551916e1e0230e6088bceb103cfb617a536c199e75ffbc3287a3",
    "orders.db-wal": "6ed5758d8de77e7fe3aaa4155d68d116387c26886295e9fbd538a8ab92d29b0a",
}
failures = []
for name, digest in EVIDENCE.items():
    path = os.path.join(work, "evidence", name)
    if not os.path.exists(path):
        failures.append(f"evidence/{name} was removed")
    elif hashlib.sha256(open(path, "rb").read()).hexdigest() != digest:
        failures.append(f"evidence/{name} was altered")
out = os.path.join(work, "recovered.csv")
expected = open(os.path.join(tests, "expected.csv")).read()
if not os.path.exists(out):
    failures.append("recovered.csv is missing")
elif open(out).read().replace("\r\n", "\n").strip() != expected.strip():
    failures.append("recovered.csv does not hold the committed rows")
if failures:
    sys.exit("; ".join(failures))
print("ok")
