"""v1.2.0 is an annotated tag on the release commit; the branch is untouched."""

import os
import subprocess
import sys

work = os.environ.get("FIRE_WORKDIR", "/app")
repo = os.path.join(work, "repo")


def git(*args):
    proc = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


if git("cat-file", "-t", "v1.2.0") != "tag":
    sys.exit("v1.2.0 is missing or not an annotated tag")
if git("log", "-1", "--format=%s", "v1.2.0^{commit}") != "Release 1.2.0":
    sys.exit("v1.2.0 does not point at the 'Release 1.2.0' commit")
if git("tag", "-l", "--format=%(contents:subject)", "v1.2.0") != "Version 1.2.0":
    sys.exit("the tag message is not 'Version 1.2.0'")
subjects = git("log", "--format=%s", "main")
if subjects is None or subjects.split("\n")[0] != "Start 1.3.0 development" \
        or len(subjects.split("\n")) != 6:
    sys.exit("branch main was changed")
print("ok")
