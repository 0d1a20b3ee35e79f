"""The archive is extracted into out/ and manifest.txt lists its files' SHA-256, sorted."""

import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
want = [line for line in open(os.path.join(tests, "expected.txt")).read().split("\n") if line]
for line in want:
    if not os.path.isfile(os.path.join(work, "out", "release-1.0", line.split("  ", 1)[1])):
        sys.exit("the archive is not extracted into out/")
try:
    got = [line for line in open(os.path.join(work, "manifest.txt")).read().split("\n") if line]
except OSError:
    sys.exit("manifest.txt is missing")
if got != want:
    sys.exit(f"manifest.txt is wrong: {got[:3]}")
print("ok")
