"""No overfull box in a fresh build; the output is that build's; only \\- was inserted."""

import os
import shutil
import subprocess
import sys
import tempfile

work = os.environ.get("FIRE_WORKDIR", "/app")
tests = os.environ.get("FIRE_TESTS", "/tests")
doc = os.path.join(work, "doc")
failures = []
src = open(os.path.join(doc, "report.src"), encoding="utf-8").read()
if src.replace("\\-", "") != open(os.path.join(tests, "expected", "report.src"),
                                  encoding="utf-8").read():
    failures.append("report.src changed beyond inserting \\- hyphens")
with tempfile.TemporaryDirectory() as tmp:
    for name in ("build.py", "report.src"):
        shutil.copy(os.path.join(doc, name), tmp)
    subprocess.run([sys.executable, os.path.join(tmp, "build.py")], check=True,
                   capture_output=True)
    fresh = open(os.path.join(tmp, "out", "report.txt"), encoding="utf-8").read()
    fresh_log = open(os.path.join(tmp, "out", "report.log"), encoding="utf-8").read()
if "Overfull \\hbox" in fresh_log:
    failures.append("a build of the final source still has an Overfull \\hbox")
try:
    left = open(os.path.join(doc, "out", "report.txt"), encoding="utf-8").read()
    left_log = open(os.path.join(doc, "out", "report.log"), encoding="utf-8").read()
except OSError:
    failures.append("out/report.txt or out/report.log is missing")
else:
    if left != fresh:
        failures.append("out/report.txt is not the output of the final source")
    if "Overfull \\hbox" in left_log:
        failures.append("out/report.log still reports an Overfull \\hbox")
if failures:
    sys.exit("; ".join(failures))
print("ok")
