"""The key-value service answers after the agent's session has ended, and persists values."""

import os
import sys
import time
import urllib.error
import urllib.request
import uuid

port = os.environ.get("FIRE_PORT", "8000")
work = os.environ.get("FIRE_WORKDIR", "/app")
base = f"http://127.0.0.1:{port}/kv/"


def call(method, key, data=None):
    req = urllib.request.Request(base + key, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=3) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


key = "k" + uuid.uuid4().hex[:8]
for _ in range(10):
    try:
        status, _ = call("GET", key)
        break
    except OSError:
        time.sleep(0.3)
else:
    sys.exit("nothing is listening on port " + port)
assert status == 404, f"unknown key answered {status}"
assert call("PUT", key, b"value-\x00-bytes")[0] == 201, "PUT must answer 201"
assert call("GET", key) == (200, b"value-\x00-bytes"), "GET must return the stored bytes"
stored = os.listdir(os.path.join(work, "data"))
assert any(key in name for name in stored), f"value not persisted in data/: {stored}"
print("ok")
