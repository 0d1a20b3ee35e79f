"""Fixtures of the served-model tests: the Docker engine (no container left over) and one
llama-server for the session (``served``), stopped with nothing left behind."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from fire_exp.errors import PreflightError
from fire_exp.serve.cli_turn import cli_binary
from fire_exp.serve.models import DEFAULT, model_named
from fire_exp.serve.server import Endpoint, LlamaServer
from tests.ci import missing
from tests.environments.conftest import docker_client
from tests.serve.server_support import gone, need_model

__all__ = ["docker_client", "served"]


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    need_model()
    for agent in ("codex", "claude-code"):
        try:
            cli_binary(agent)
        except PreflightError as exc:
            missing(str(exc))
    log = tmp_path_factory.mktemp("served") / "server.log"
    # As `fire-exp serve-model` serves it: no cap on a reply (a cap cuts a call mid-arguments,
    # and the server refuses that call when the CLI sends it back, HTTP 500); a rambling
    # reply ends with the attempt's time. A slot for each CLI's panel, and, as root (CI),
    # the model before the suite's other work (`--nice -10`): beside the suite on the two
    # cores its first answers otherwise came after the attempts' time (docs/testing.md).
    server = LlamaServer(model_named(DEFAULT), threads=2, log=log, slots=2,
                         nice=-10 if os.geteuid() == 0 else 0)
    with server as endpoint:
        pid = server.proc.pid if server.proc else 0
        yield endpoint
    deadline = time.monotonic() + 10
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)  # reaped by stop(); a moment for the kernel to drop it
    assert gone(pid)


