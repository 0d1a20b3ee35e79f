"""top_words.txt holds the ten most frequent words with their counts, in order."""

import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
want = open(os.path.join(tests, "expected.txt")).read().split("\n")
try:
    got = open(os.path.join(work, "top_words.txt")).read().split("\n")
except OSError:
    sys.exit("top_words.txt is missing")
if [g.strip() for g in got if g.strip()] != [w for w in want if w]:
    sys.exit(f"top_words.txt is wrong: {got[:4]}")
print("ok")
