"""Every credential is replaced by its placeholder; every other byte is unchanged."""

import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
failures = []
for name in ("settings.env", "app.yaml", "README.md"):
    want = open(os.path.join(tests, "expected", name), "rb").read()
    try:
        got = open(os.path.join(work, "deploy", name), "rb").read()
    except OSError:
        failures.append(f"deploy/{name} is missing")
        continue
    if got != want:
        where = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                     min(len(got), len(want)))
        failures.append(f"deploy/{name} differs from the allowed edit at byte {where}")
if failures:
    sys.exit("; ".join(failures))
print("ok")
