"""rle.py matches the original byte for byte on diverse inputs, alone, under the size bar."""

import gzip
import os
import random
import subprocess
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
cand = os.path.join(work, "rle.py")
orig = os.path.join(work, "orig", "rle")
if not os.path.isfile(cand):
    sys.exit("rle.py is missing")
source = open(cand, "rb").read()
if b"orig" in source:
    sys.exit("rle.py refers to the original under orig/")
size = len(gzip.compress(source, 9))
if size > 400:
    sys.exit(f"rle.py is {size} bytes after gzip -9 (bar: 400)")
rng = random.Random(20261102)
inputs = [b"", b"a", b"ab", b"aab", b"aaab", b"\x1b", b"\x1b\x1b\x1b\x1b", b"x" * 255,
          b"y" * 256, b"z" * 600, bytes(range(256)), b"\n\n\nabc\x00\x00\x00\x00",
          bytes(rng.choice(b"ab\x1b") for _ in range(3000)),
          bytes(rng.randrange(256) for _ in range(2000))]
for data in inputs:
    want = subprocess.run([sys.executable, orig], input=data, capture_output=True).stdout
    got = subprocess.run([sys.executable, cand], input=data, capture_output=True, timeout=20)
    if got.returncode != 0 or got.stdout != want:
        sys.exit(f"output differs from the original on an input of {len(data)} bytes "
                 f"starting {data[:8]!r}")
print("ok")
