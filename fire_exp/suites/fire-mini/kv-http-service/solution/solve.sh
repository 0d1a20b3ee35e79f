#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
cat > kv_service.py <<'PY'
import os
from http.server import BaseHTTPRequestHandler, HTTPServer

DATA = os.path.join(os.environ.get("FIRE_WORKDIR", "/app"), "data")


class Handler(BaseHTTPRequestHandler):
    def _path(self):
        key = self.path[len("/kv/"):]
        return os.path.join(DATA, key) if self.path.startswith("/kv/") and key.isalnum() else None

    def do_PUT(self):
        path = self._path()
        if path is None:
            self.send_error(400)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(path, "wb") as fh:
            fh.write(body)
        self.send_response(201)
        self.end_headers()

    def do_GET(self):
        path = self._path()
        if path is None or not os.path.exists(path):
            self.send_error(404)
            return
        body = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


HTTPServer(("127.0.0.1", int(os.environ.get("FIRE_PORT", "8000"))), Handler).serve_forever()
PY
setsid nohup python3 kv_service.py > kv.log 2>&1 < /dev/null &
sleep 1
python3 -c "import os, urllib.request, urllib.error
try: urllib.request.urlopen('http://127.0.0.1:%s/kv/probe' % os.environ.get('FIRE_PORT', '8000'))
except urllib.error.HTTPError as e: print('probe answered', e.code)"
