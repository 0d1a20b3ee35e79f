#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
cat > status_server.py <<'PY'
import json
import os
from http.server import BaseHTTPRequestHandler, HTTPServer

WORK = os.environ.get("FIRE_WORKDIR", "/app")


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/status":
            self.send_error(404)
            return
        version = open(os.path.join(WORK, "VERSION")).read().strip()
        body = json.dumps({"status": "ok", "version": version}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)


HTTPServer(("127.0.0.1", int(os.environ.get("FIRE_PORT", "8000"))), Handler).serve_forever()
PY
setsid nohup python3 status_server.py > server.log 2>&1 < /dev/null &
sleep 1
python3 -c "import os, urllib.request; print(urllib.request.urlopen('http://127.0.0.1:%s/status' % os.environ.get('FIRE_PORT', '8000')).read().decode())"
