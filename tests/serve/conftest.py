"""Fixtures of the served-model tests: the Docker engine (no container left over) and, for
the session, a llama-server per real CLI (``served``), stopped with nothing left behind."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from fire_exp.errors import PreflightError
from fire_exp.serve.cli_turn import cli_binary
from fire_exp.serve.models import DEFAULT, model_named
from fire_exp.serve.server import Endpoint, LlamaServer
from tests.ci import missing
from tests.environments.conftest import docker_client
from tests.serve.server_support import SUITE_NICE, SUITE_THREADS, gone, need_model

__all__ = ["docker_client", "served"]

AGENTS = ("codex", "claude-code")


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Endpoint]]:
    """A server of the default model for each CLI (``{"codex": endpoint, ...}``): the two
    panels run at once, neither waiting on the other's prompt, each server one thread at
    the suite's niceness (``server_support``), so neither slows under the suite's load."""
    need_model()
    for agent in AGENTS:
        try:
            cli_binary(agent)
        except PreflightError as exc:
            missing(str(exc))
    folder = tmp_path_factory.mktemp("served")
    # As `fire-exp serve-model` serves it: no cap on a reply (a cap cuts a call mid-arguments,
    # and the server refuses that call when the CLI sends it back, HTTP 500); a rambling
    # reply ends with the attempt's time.
    servers = {agent: LlamaServer(model_named(DEFAULT), threads=SUITE_THREADS, nice=SUITE_NICE,
                                  log=folder / f"server-{agent}.log") for agent in AGENTS}
    with ExitStack() as stack:
        endpoints = {agent: stack.enter_context(server) for agent, server in servers.items()}
        pids = [server.proc.pid for server in servers.values() if server.proc]
        yield endpoints
    deadline = time.monotonic() + 10
    while not all(map(gone, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)  # reaped by stop(); a moment for the kernel to drop them
    assert all(map(gone, pids)), pids
