"""The session host in a box that offers only one-shot exec and file transfer.

Harbor's and Modal's sandboxes run a command and return its output, and copy files; no
process keeps a stream to the harness. There the session host runs detached
(``session_host.py --files FOLDER LEASE_S``): requests go into the FIFO
``FOLDER/requests``, the host writes each reply to ``FOLDER/replies/ID``, and each request
is one exec that writes the request and waits for its reply. The protocol and the client
are the same as everywhere (``session_client.py``); only :class:`FileChannel` differs.

No stream ends when the harness dies, so the watchdog watches a lease instead: the
harness touches ``FOLDER/lease`` every ``lease_s / 4`` seconds (a one-shot exec of its
own); a host whose lease is older than ``lease_s`` kills every process of the attempt and
exits, so nothing the agent started outlives the harness by more than ``lease_s``.

The box needs ``sh`` and ``mkfifo`` for this transport (busybox's will do); the host's
command line is the backend's to give (:meth:`FileChannel.start`): a python3 of the box's,
or one the backend brings along as the Docker backend brings its box runtime
(``docker_runtime.PYTHON``, with ``--shell`` naming the runtime's bash), so the image need
have no Python. A coding-agent CLI's hooks in such a box take the same road: requests left
in a spool, collected and answered by one-shot execs (``hook_transport/files.py``).
"""

from __future__ import annotations

import itertools
import json
import shlex
import threading
from collections.abc import Callable, Sequence
from typing import Any

from fire_exp.environments.base import ExecResult
from fire_exp.environments.failure import EnvironmentFailure

# argv, timeout (seconds) -> what the command did; a command of the box's default user.
OneShot = Callable[[Sequence[str], float], ExecResult]
LEASE_S = 30.0
_GONE = 3  # the request exec's exit code when the host is not there

# argv: folder, lease seconds, then the host's command line (PYTHON... PROGRAM MARKER LOG).
_START = r"""set -e
d=$1; lease=$2; shift 2
mkdir -p "$d/replies"; chmod 700 "$d"
rm -f "$d/requests"; mkfifo -m 600 "$d/requests"; touch "$d/lease"
"$@" --files "$d" "$lease" <> "$d/requests" > "$d/host.out" 2> "$d/host.err" &
echo $! > "$d/pid"
"""

# argv: folder, request id, the request's JSON line. Writes it, waits for its reply.
_REQUEST = r"""d=$1; id=$2; pid=$(cat "$d/pid" 2>/dev/null)
gone() { echo "the session host ${pid:-?} is gone: $(tail -c 400 "$d/host.err" 2>/dev/null)" >&2; exit 3; }
kill -0 "$pid" 2>/dev/null || gone
printf '%s\n' "$3" > "$d/requests"
while [ ! -e "$d/replies/$id" ]; do
  kill -0 "$pid" 2>/dev/null || [ -e "$d/replies/$id" ] || gone
  sleep 0.05
done
cat "$d/replies/$id" && rm -f "$d/replies/$id"
"""


class FileChannel:
    """Requests and replies through files in the box, one one-shot exec each.

    Args:
        exec_once: the box's one-shot exec.
        folder: the box folder of the transport (the box's default user's alone).
        lease_s: the watchdog's lease; renewed every quarter of it while open.
    """

    def __init__(self, exec_once: OneShot, folder: str, lease_s: float = LEASE_S) -> None:
        self.exec_once = exec_once
        self.folder = folder
        self.lease_s = lease_s
        self._ids = itertools.count(1)
        self._closed = threading.Event()
        self._renewer = threading.Thread(target=self._renew, daemon=True,
                                         name=f"lease {folder}")
        self._renewer.start()

    @classmethod
    def start(cls, exec_once: OneShot, folder: str, host: Sequence[str],
              lease_s: float = LEASE_S) -> FileChannel:
        """Start the host command line ``host`` (``PYTHON... PROGRAM MARKER LOG
        [--shell JSON]``, the python3 the backend runs it with) detached in the box with
        its transport in ``folder``."""
        done = exec_once(["sh", "-c", _START, "sh", folder, str(lease_s), *host], 60.0)
        if done.exit_code != 0:
            raise EnvironmentFailure(f"the agent's session host did not start (exit "
                                     f"{done.exit_code}): {done.output.strip()[-400:]}")
        return cls(exec_once, folder, lease_s)

    def request(self, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        n = str(next(self._ids))
        done = self.exec_once(["sh", "-c", _REQUEST, "sh", self.folder, n,
                               json.dumps(req | {"id": n})], timeout)
        if done.timed_out:
            raise EnvironmentFailure("the agent's session stopped answering")
        if done.exit_code != 0:
            raise EnvironmentFailure(f"the agent's session died: {done.output.strip()[-600:]}")
        try:
            reply: dict[str, Any] = json.loads(done.stdout)
        except json.JSONDecodeError as exc:
            raise EnvironmentFailure(f"the agent's session failed: {done.output[:400]}") \
                from exc
        return reply

    def _renew(self) -> None:
        touch = ["sh", "-c", f"touch {shlex.quote(self.folder)}/lease"]
        while not self._closed.wait(self.lease_s / 4):
            try:
                self.exec_once(touch, self.lease_s / 2)
            except Exception:  # noqa: BLE001 - a missed renewal is retried; the lease allows 3
                pass

    def close(self) -> None:
        """Stop renewing the lease: the host's watchdog ends the attempt's processes."""
        self._closed.set()
        if self._renewer is not threading.current_thread():
            self._renewer.join(timeout=self.lease_s)
