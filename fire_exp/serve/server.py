"""llama.cpp's own ``llama-server`` serving one model to both real agent CLIs.

The C++ server (built by ``.ci/llama-server`` from the llama.cpp sources that the
llama-cpp-python sdist vendors) speaks, beside Chat Completions, the two protocols the CLIs
need, itself: the OpenAI Responses API (``POST /v1/responses``, SSE, function tools) for
Codex 0.163, and the Anthropic Messages API (``POST /v1/messages``, streaming, tool use)
for Claude Code 2.1, whose system prompt comes as a list of text parts that this server
joins (a Chat Completions server behind a generic bridge refused it). fire-exp translates
nothing: it starts the process, waits for ``/health``, and stops it with its whole process
group, so no server outlives the command, the test or the benchmark that started it.

The model's turns are rendered, and its tool calls parsed, by the chat template the model
names (:attr:`~fire_exp.serve.models.ServedModel.chat_template`; ``--chat-template-file``):
llama.cpp derives the parser and a lazy grammar (from the call's opening marker on, an
offered tool's name and argument schema) from how the template renders a call.

Codex's freeform ``apply_patch`` (a ``custom`` tool) and its other non-function tools are
dropped by the server with a warning: the model sees ``exec_command`` and the other
function tools (docs/agents.md, Running against a local model).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from fire_exp.errors import PreflightError
from fire_exp.serve.models import ServedModel, gguf_path

__all__ = ["Endpoint", "LlamaServer", "server_binary"]

_BUILD = "run .ci/llama-server (it builds llama-server once, into the wheel cache)"
_START_TIMEOUT_S = 180.0
_STOP_TIMEOUT_S = 20.0


def server_binary() -> Path:
    """The ``llama-server`` binary: ``FIRE_LLAMA_SERVER``, else the one ``.ci/llama-server``
    built into the wheel cache (``FIRE_WHEEL_CACHE``, default ~/.cache/fire-exp/wheels)."""
    explicit = os.environ.get("FIRE_LLAMA_SERVER")
    if explicit:
        path = Path(explicit)
    else:
        root = Path(os.environ.get("FIRE_WHEEL_CACHE")
                    or Path.home() / ".cache" / "fire-exp" / "wheels")
        found = sorted(root.glob("llama-server-*-avx2/llama-server"))
        path = found[-1] if found else root / "llama-server-VERSION-avx2" / "llama-server"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise PreflightError(f"no llama-server binary at {path}", _BUILD)
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS says is free on ``host`` now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Endpoint:
    """Where a served model answers, and the two settings each CLI takes for it."""

    host: str
    port: int
    model: str

    @property
    def root(self) -> str:
        return f"http://{self.host}:{self.port}"

    def overrides(self, agent: str) -> str:
        """``agent=… agent.base_url=… agent.model=…`` for ``codex`` (the Responses base, to
        which Codex appends ``/responses``) or ``claude-code`` (the root, to which Claude
        Code appends ``/v1/messages``)."""
        base = f"{self.root}/v1" if agent == "codex" else self.root
        return f"agent={agent} agent.base_url={base} agent.model={self.model}"


class LlamaServer:
    """A running ``llama-server`` for ``model``, as a context manager.

    Args:
        model: what to serve (its GGUF is joined and hash-checked first).
        host, port: where to listen (port 0: a free one).
        threads: CPU threads for prompt and generation (default: all cores).
        context: tokens of context (default: the model's).
        log: the server's output goes here (default: discarded).
        max_reply_tokens: the most tokens one reply may have (None: as the request asks;
            a small model may ramble for thousands).
        slots: requests served at once, each with its own prompt cache and the full
            ``context`` (two panels at once: neither evicts the other's cached prefix).
        nice: the server's niceness change (``nice -n``; 0: none). Negative puts the model
            before the machine's other work, the panel's containers among them, so its
            answer times are the model's, not the load's; it needs root or CAP_SYS_NICE
            (without, ``nice`` says so in the log and the server runs unchanged).
    """

    def __init__(self, model: ServedModel, host: str = "127.0.0.1", port: int = 0,
                 threads: int | None = None, context: int | None = None,
                 log: Path | None = None, max_reply_tokens: int | None = None,
                 slots: int = 1, nice: int = 0) -> None:
        self.model = model
        self.nice = nice
        self.max_reply_tokens = max_reply_tokens
        self.slots = slots
        self.endpoint = Endpoint(host, port or free_port(host), model.name)
        self.threads = threads or os.cpu_count() or 1
        self.context = context or model.context
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """The server's command line: the model under its alias, its turns rendered and its
        tool calls parsed by its (Jinja) chat template — fire-exp's own where the model
        names one, else the GGUF's — prompt prefixes cached between requests."""
        template = self.model.template_path()
        niceness = ["nice", "-n", str(self.nice)] if self.nice else []  # execs: same pid
        return [*niceness, str(server_binary()), "--model", str(gguf_path(self.model)),
                "--alias", self.model.name, "--host", self.endpoint.host,
                "--port", str(self.endpoint.port),
                "--ctx-size", str(self.context * self.slots),  # split among the slots
                "--threads", str(self.threads), "--parallel", str(self.slots), "--jinja",
                *(["--chat-template-file", str(template)] if template else []),
                "--no-webui", "--cache-reuse", "256",
                *(["--n-predict", str(self.max_reply_tokens)] if self.max_reply_tokens else [])]

    def start(self) -> Endpoint:
        """Start the server and wait until it answers ``/health``; returns its endpoint."""
        command = self.command()
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            if self.log:
                out.close()  # type: ignore[union-attr]
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self.endpoint

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        assert self.proc is not None
        while True:
            if self.proc.poll() is not None:
                raise PreflightError(f"llama-server exited with status {self.proc.returncode} "
                                     "before it answered", self._log_hint())
            try:
                with urllib.request.urlopen(f"{self.endpoint.root}/health", timeout=2) as reply:
                    if json.loads(reply.read()).get("status") == "ok":
                        return
            except (OSError, ValueError):
                pass  # not listening yet, or still loading the model (503)
            if time.monotonic() > deadline:
                raise PreflightError(f"llama-server did not answer /health within "
                                     f"{_START_TIMEOUT_S:.0f} s", self._log_hint())
            time.sleep(0.25)

    def _log_hint(self) -> str:
        if self.log and self.log.is_file():
            tail = self.log.read_text(errors="replace").strip().splitlines()[-3:]
            return f"its log {self.log} ends: {' | '.join(tail)}"
        return "pass --log FILE to see its output"

    def stop(self) -> None:
        """Stop the server and everything it started (SIGTERM to its process group, then
        SIGKILL); safe to call twice."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, _STOP_TIMEOUT_S), (signal.SIGKILL, None)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> Endpoint:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
