"""The status server answers after the agent's session has ended."""

import json
import os
import sys
import time
import urllib.error
import urllib.request

port = os.environ.get("FIRE_PORT", "8000")
work = os.environ.get("FIRE_WORKDIR", "/app")
version = open(os.path.join(work, "VERSION")).read().strip()
base = f"http://127.0.0.1:{port}"


def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=3) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""


for _ in range(10):  # allow a freshly relaunched server a moment
    try:
        status, body = get("/status")
        break
    except OSError:
        time.sleep(0.3)
else:
    sys.exit("nothing is listening on port " + port)
assert status == 200, f"/status answered {status}"
assert json.loads(body) == {"status": "ok", "version": version}, body
assert get("/nope")[0] == 404, "other paths must answer 404"
print("ok")
