"""Nothing is measured from a model never reached, with the real Codex 0.163 binary (the
``openai-codex-cli-bin`` wheel): an unreachable endpoint is refused at preflight; an
attempt whose Codex never got an answer is a provider failure, not a valid failure; an
endpoint that answers 404 to Codex in a no-network box (reached through the egress
proxy's forward listener, from the box to this host's loopback) stops the run."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fire_exp.agents.coding_agents import CodexAgent
from fire_exp.agents.coding_agents.packaged import wheel_binary
from fire_exp.environments.local import LocalEnvironment
from fire_exp.errors import PreflightError, ProtocolError
from fire_exp.records import Cause
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.model import Task
from tests.ci import missing
from tests.environments.helpers import make_task

pytestmark = pytest.mark.cli
ARGS = ["--dangerously-bypass-hook-trust", "--sandbox", "danger-full-access"]


@pytest.fixture
def codex() -> str:
    found = wheel_binary("codex")
    if found is None:
        missing("the codex_cli_bin wheel (pip install 'fire-exp[codex]')")
    return found


def _closed_port() -> int:
    sock = socket.create_server(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    return port


class _NotFound(BaseHTTPRequestHandler):
    """An endpoint that serves no model: every request is a 404 (logged in ``seen``)."""

    seen: list[str]

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(f"POST {self.path}")
        raw = json.dumps({"error": {"message": "model 'gpt-5.5' not found",
                                    "type": "invalid_request_error"}}).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def not_found() -> Iterator[tuple[int, list[str]]]:
    seen: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_NotFound,), {"seen": seen}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def _local_task(root: Path, agent_timeout_s: float) -> Task:
    """A small task the local environment prepares (its setup.sh), with a short agent
    timeout."""
    task = make_task(root, "h33ep-unreached", agent_timeout=agent_timeout_s)
    (task.path / "environment" / "setup.sh").write_text("mkdir -p $FIRE_WORKDIR\n")
    return load_task(task.path)


def _spec(name: str) -> AttemptSpec:
    return AttemptSpec(run="r", panel="p", attempt_id=f"h33ep-{name}", task=name,
                       cohort="silent", arm="baseline", replicate=0, order=0, seed=0)


def test_an_unreachable_endpoint_is_refused_at_preflight(codex: str) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    agent = CodexAgent(base_url=url, model="gpt-5.5", args=ARGS)
    assert agent.binary == codex
    with pytest.raises(PreflightError, match=rf"agent=codex: the model endpoint does not "
                                             rf"answer POST {url}/responses: .*refused"):
        agent.preflight(LocalEnvironment.capabilities)


def test_an_attempt_whose_codex_never_reached_its_model_is_a_provider_failure(
        codex: str, tmp_path: Path) -> None:
    task = _local_task(tmp_path, agent_timeout_s=8.0)
    agent = CodexAgent(base_url=f"http://127.0.0.1:{_closed_port()}/v1", model="gpt-5.5",
                       args=ARGS)
    env = LocalEnvironment(task, tmp_path / "attempt", "h33ep-unreached")
    record = run_attempt(_spec(task.name), env, agent, [], [], rng=np.random.default_rng(0))
    # Codex sat in "Reconnecting... waiting for network" until the agent timeout: that
    # measured nothing, so it is the provider's failure (replaced), never a zero reward.
    assert record.cause is Cause.PROVIDER_FAILED, record.error
    assert "never got a model answer" in (record.error or "")
    assert "Reconnecting" in (record.error or "")
    assert record.reward is None and not record.passed and not record.fair


@pytest.mark.docker
def test_a_404_from_the_endpoint_on_the_host_loopback_stops_the_run(
        codex: str, docker_client: Any, tmp_path: Path,
        not_found: tuple[int, list[str]]) -> None:
    from fire_exp.environments.docker import DockerEnvironment
    from tests.environments.helpers import bundled_task

    port, seen = not_found
    task = bundled_task("csv-column-stats")  # no network: only the egress proxy
    agent = CodexAgent(base_url=f"http://127.0.0.1:{port}/v1", model="gpt-5.5", args=ARGS)
    env = DockerEnvironment(task, tmp_path / "attempt", "h33ep-404")
    with pytest.raises(ProtocolError, match=r"agent=codex: the model endpoint answered HTTP "
                                            r"404 .*The run stops"):
        run_attempt(_spec(task.name), env, agent, [], [], rng=np.random.default_rng(0))
    # The box's Codex reached this host's 127.0.0.1 through its forward listener.
    assert seen and set(seen) == {"POST /v1/responses"}
    log = tmp_path / "attempt" / "logs" / "agent" / "egress.jsonl"
    answered = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    assert any(e.get("status") == 404 and e["target"] == f"127.0.0.1:{port}"
               for e in answered), answered
