"""emails.txt holds each distinct normalized address once, sorted."""

import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
want = open(os.path.join(tests, "expected.txt")).read().split()
try:
    got = [line for line in open(os.path.join(work, "emails.txt")).read().split("\n") if line]
except OSError:
    sys.exit("emails.txt is missing")
if got != want:
    sys.exit(f"emails.txt is wrong: {len(got)} lines, expected {len(want)}")
print("ok")
