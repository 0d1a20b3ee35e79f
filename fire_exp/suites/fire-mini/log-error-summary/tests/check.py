"""errors.txt counts ERROR-level lines per component, sorted."""

import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
expected = open(os.path.join(tests, "expected.txt")).read().split("\n")
try:
    got = open(os.path.join(work, "errors.txt")).read().split("\n")
except OSError as exc:
    sys.exit(f"errors.txt unreadable: {exc}")
if [g.strip() for g in got if g.strip()] != [e for e in expected if e]:
    sys.exit(f"errors.txt is wrong: {got[:5]}")
print("ok")
