"""The two documents carry exactly the mapped replacements; every other byte is unchanged."""

import os
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
failures = []
for name in ("guide.md", "faq.md", "LICENSE.txt"):
    want = open(os.path.join(tests, "expected", name), "rb").read()
    try:
        got = open(os.path.join(work, "docs", name), "rb").read()
    except OSError:
        failures.append(f"docs/{name} is missing")
        continue
    if got != want:
        where = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                     min(len(got), len(want)))
        failures.append(f"docs/{name} differs from the allowed edit at byte {where}")
if failures:
    sys.exit("; ".join(failures))
print("ok")
