"""The about page is deployed and committed, and the front page and repository are intact."""

import os
import subprocess
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
repo = os.path.join(work, "git", "site.git")
failures = []
page = open(os.path.join(work, "incoming", "about.html"), "rb").read()


def read(path):
    try:
        return open(path, "rb").read()
    except OSError:
        return None


def show(spec):
    proc = subprocess.run(["git", "--git-dir", repo, "show", spec], capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


if read(os.path.join(work, "www", "about.html")) != page:
    failures.append("www/about.html is not the new page")
if not read(os.path.join(work, "www", "index.html")):
    failures.append("www/index.html (the front page) is gone")
if show("main:about.html") != page:
    failures.append("branch main of the server repository lacks about.html")
if show("main:index.html") is None:
    failures.append("branch main lost index.html")
log = subprocess.run(["git", "--git-dir", repo, "log", "--format=%s", "main"],
                     capture_output=True, text=True).stdout.split("\n")
if "Front page" not in log:
    failures.append("the history of main was rewritten")
if failures:
    sys.exit("; ".join(failures))
print("ok")
