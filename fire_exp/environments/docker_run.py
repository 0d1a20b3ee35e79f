"""A process in a container outside the agent's session (``Environment.run``): its own
``docker exec``, its output streamed as it comes, its process group killed on timeout."""

from __future__ import annotations

import contextlib
import secrets
import shlex
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from fire_exp.environments.base import ExecResult, Stream
from fire_exp.environments.failure import EnvironmentFailure

_KILL_GRACE_S = 5.0  # seconds for a killed run's output to drain


def run_streamed(api: Any, container: Any, command: str, *, timeout: float, workdir: str,
                 user: str, environment: dict[str, str], stream: Stream | None,
                 cancelled: threading.Event, name: str,
                 shell: Sequence[str] = ("bash",)) -> ExecResult:
    """Run ``command`` in ``container`` as a process of its own exec, outside the agent's
    session (``Environment.run``): its output streamed to ``stream`` as it comes, its
    whole process group killed when ``timeout`` passes (exit 124) or on cancel. ``shell``
    is the bash that runs it (the box runtime's, ``docker_runtime.BASH``)."""
    start = time.monotonic()
    pid_file = f"/tmp/.fire-exp-run-{secrets.token_hex(4)}.pid"
    script = f"echo $$ > {pid_file}; exec {shlex.join(shell)} -c {shlex.quote(command)}"
    exec_id = api.exec_create(container.id, [*shell, "-c", script], workdir=workdir,
                              user=user, environment=environment)["Id"]
    out, err = bytearray(), bytearray()
    errors: list[BaseException] = []

    def pump() -> None:
        try:
            for chunk_out, chunk_err in api.exec_start(exec_id, stream=True, demux=True):
                out.extend(chunk_out or b"")
                err.extend(chunk_err or b"")
                if stream is not None and (chunk_out or chunk_err):
                    stream((chunk_out or chunk_err or b"").decode("utf-8", "replace"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    worker = threading.Thread(target=pump, daemon=True, name=name)
    worker.start()
    deadline = start + timeout
    while worker.is_alive() and time.monotonic() < deadline and not cancelled.is_set():
        worker.join(min(0.25, max(deadline - time.monotonic(), 0.0)))
    timed_out = worker.is_alive()
    if timed_out:
        # The exec'd bash leads its own session and process group: kill the group
        # (bash's kill: dash's takes no ``--``).
        container.exec_run([*shell, "-c", f"kill -9 -- -$(< {pid_file})"])
        worker.join(_KILL_GRACE_S)
    container.exec_run(["sh", "-c", f"rm -f {pid_file}"], workdir="/")
    if errors:
        raise EnvironmentFailure(f"a command could not run in the container: {errors[0]}")
    code = 124 if timed_out else int(api.exec_inspect(exec_id).get("ExitCode") or 0)
    return ExecResult(exit_code=code, stdout=out.decode("utf-8", "replace"),
                      stderr=err.decode("utf-8", "replace"), timed_out=timed_out,
                      duration_s=time.monotonic() - start)


@contextlib.contextmanager
def archive_stream(api: Any, container: Any, src: str) -> Iterator[Iterator[bytes]]:
    """The tar of the container's ``src`` as the engine streams it, in 1 MB chunks; the
    response is closed on leaving, read to its end or not (``fetch.py`` stops at its cap:
    the engine's copy of the rest is cut off, never read). Raises docker's NotFound."""
    response = api._get(api._url("/containers/{0}/archive", container.id),  # noqa: SLF001
                        params={"path": src}, stream=True,
                        headers={"Accept-Encoding": "identity"})
    try:
        api._raise_for_status(response)  # noqa: SLF001
        yield response.iter_content(1 << 20, False)
    finally:
        response.close()
