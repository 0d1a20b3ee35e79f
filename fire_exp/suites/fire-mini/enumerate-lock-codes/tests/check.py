"""codes.txt lists every valid code, once each, ascending."""

import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
want = open(os.path.join(tests, "expected.txt")).read().split()
try:
    got = [line.strip() for line in open(os.path.join(work, "codes.txt")) if line.strip()]
except OSError:
    sys.exit("codes.txt is missing")
if got != want:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    sys.exit(f"codes.txt is wrong: missing {missing}, not valid {extra}, {len(got)} lines")
print("ok")
