"""answer.txt holds the token total of the subset."""

import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
want = open(os.path.join(tests, "expected.txt")).read().strip()
try:
    got = open(os.path.join(work, "answer.txt")).read().strip()
except OSError:
    sys.exit("answer.txt is missing")
if got != want:
    sys.exit(f"answer.txt holds {got!r}, not the subset's token total")
print("ok")
