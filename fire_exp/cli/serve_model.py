"""``fire-exp serve-model``: a local model both real CLIs can use, until Ctrl-C.

Starts llama.cpp's ``llama-server`` (:mod:`fire_exp.serve.server`) for a model from
:mod:`fire_exp.serve.models` and prints, for Codex and for Claude Code, the overrides that
point ``fire-exp run`` at it (``agent.base_url=… agent.model=…``), and the CLIs' own
switches that shorten their prompts (:mod:`fire_exp.serve.lean`). Ctrl-C or SIGTERM stops
the server with its process group; so does the end of the command in any other way.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType

from fire_exp.serve.lean import lean_override
from fire_exp.serve.models import DEFAULT, MODELS, model_named
from fire_exp.serve.server import LlamaServer

AGENTS = (("Codex", "codex"), ("Claude Code", "claude-code"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fire-exp serve-model",
        description="Serve a local model to Codex (Responses API) and Claude Code "
                    "(Anthropic Messages API) with llama.cpp's llama-server, until Ctrl-C.")
    parser.add_argument("--model", default=DEFAULT, choices=sorted(MODELS),
                        help=f"the model (default {DEFAULT})")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads (default: all cores)")
    parser.add_argument("--context", type=int, default=None,
                        help="context tokens (default: the model's)")
    parser.add_argument("--slots", type=int, default=1,
                        help="requests served at once, each with its own prompt cache and "
                             "the whole context (default 1; as many as executor.workers)")
    parser.add_argument("--nice", type=int, default=0,
                        help="the server's niceness change (negative, as root: the model "
                             "before the machine's other work; default 0)")
    parser.add_argument("--log", type=Path, default=None, help="append the server's output here")
    return parser


def banner(server: LlamaServer) -> str:
    """What the command prints once the server answers."""
    model, endpoint = server.model, server.endpoint
    lines = [f"serving {model.name} ({model.title}, {model.license}, sha256 "
             f"{model.sha256[:16]}…) at {endpoint.root}, {server.context} tokens of context "
             f"(llama-server pid {server.proc.pid if server.proc else '-'})",
             "pass to fire-exp run:"]
    for title, agent in AGENTS:
        lines.append(f"  {title + ':':<13}{endpoint.overrides(agent)}")
    lines.append("shorter prompts for a slow machine (the CLIs' own switches), add:")
    for title, agent in AGENTS:
        lines.append(f"  {title + ':':<13}{lean_override(agent)}")
    lines.append("Ctrl-C stops it.")
    return "\n".join(lines)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM ends it like Ctrl-C: the server is stopped on the way


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.slots < 1:
        parser.error(f"--slots {args.slots}: serve at least 1 request at a time")
    server = LlamaServer(model_named(args.model), host=args.host, port=args.port,
                         threads=args.threads, context=args.context, log=args.log,
                         slots=args.slots, nice=args.nice)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        with server:
            print(banner(server), flush=True)
            assert server.proc is not None
            status = server.proc.wait()
        print(f"fire-exp serve-model: llama-server exited with status {status}",
              file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
