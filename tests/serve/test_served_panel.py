"""A real panel driven by the served model (issue 35, point 3): the real Codex CLI (0.163,
the wheel's binary mounted into each task's container) driven by ``fire-exp serve-model``'s
llama-server with Qwen2.5-Coder-0.5B, on two bundled tasks, the real and the baseline arm,
one attempt each, with the lean switches every arm gets.

The model is small and its answers are its own; what is asserted from the records is that
every attempt was a fair one: no provider, harness or protocol failure, at least one of
the model's own commands ran in a box (read from the record's command log, which the CLI's
output fills: no scripted server here), the real arm's hook events and decisions in its
records and none in the baseline's, tokens counted, the cost the configured price (0 for a
local model), and the model named and hashed in the manifest.

Time: this is the suite's slowest real-model test (about 4 minutes of both cores on an
idle 2-core machine: four attempts of a CPU-served model, each under the task's 120 s
agent timeout); it runs in the ``model-server`` group, never beside another model server.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.agents.coding_agents.answers import EMPTY, MALFORMED, PROSE
from fire_exp.errors import PreflightError
from fire_exp.records import Cause
from fire_exp.serve.cli_turn import cli_binary
from fire_exp.serve.models import DEFAULT, gguf_path, model_named
from fire_exp.serve.server import Endpoint, LlamaServer, server_binary
from tests.ci import missing
from tests.serve.served_panel import TASKS, hook_events, run_panel

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.llm, pytest.mark.cli]
NO_FAIR_ATTEMPT = {Cause.PROVIDER_FAILED, Cause.HARNESS_FAILED, Cause.ENVIRONMENT_FAILED}


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def served(tmp_path: Path, docker_client: object) -> Iterator[Endpoint]:
    """The served model on the host's loopback (a box reaches it through the egress
    proxy's forward listener, as a user's run does)."""
    try:
        server_binary()
        gguf_path(model_named(DEFAULT))
        cli_binary("codex")
    except PreflightError as exc:
        missing(str(exc))
    server = LlamaServer(model_named(DEFAULT), threads=2, log=tmp_path / "server.log")
    with server as endpoint:
        pid = server.proc.pid if server.proc else 0
        yield endpoint
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pid), f"llama-server {pid} outlived the test"


def test_a_real_codex_panel_driven_by_the_served_model_is_fair(served: Endpoint,
                                                              tmp_path: Path) -> None:
    run = run_panel("codex", served, tmp_path / "results")
    assert run.returncode == 0, run.stderr[-3000:]
    attempts = run.attempts
    assert sorted((a.record.task, a.record.arm) for a in attempts) == \
        sorted((t, arm) for t in TASKS for arm in ("real", "baseline"))
    for a in attempts:
        record = a.record
        assert record.cause not in NO_FAIR_ATTEMPT and record.fair, (record.cause, record.error)
        assert record.environment == "docker" and record.reward is not None
        assert a.protocol_errors == [], a.protocol_errors  # no retry, no failed turn
        assert record.usage.input_tokens > 0 and record.usage.output_tokens > 0
        assert record.usage.model == DEFAULT and record.usage.cost_usd == 0.0
        events = hook_events(a)
        if record.arm == "real":  # the policies ran through the CLI's hooks
            assert record.events == sum(events.values()) > 0, events
            assert record.decisions >= 0 and record.valid, record.invalid_reason
        else:
            assert record.events == 0 and record.decisions == 0 and not events
    # Whether the model calls a tool is the model's: an attempt whose model ran no command
    # names what it did instead (answers.py), or ran out of its time.
    for a in attempts:
        if not a.commands:
            assert a.record.cause is Cause.AGENT_TIMEOUT or any(
                name in (a.record.error or "") for name in (PROSE, EMPTY, MALFORMED)), \
                (a.record.task, a.record.arm, a.record.cause, a.record.error)
    manifest = json.loads((run.folder / "prereg.json").read_text())
    frozen = manifest["hashes"][f"served_model:{DEFAULT}"]
    assert frozen["sha256"] == model_named(DEFAULT).sha256
