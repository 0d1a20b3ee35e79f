"""The real Codex CLI (codex-cli 0.163.0 from the ``openai-codex-cli-bin`` wheel) in a task's
container, against the project's scripted Responses API server on the host.

The wheel's static binary is mounted read-only into the box (``agent=codex`` with no
``binary:`` and no install step); the CLI runs there as ``fire-agent``, its hooks reach the
arm's policies through the shim and relay. One box, one short scripted conversation: a
command the arm denies, an ``apply_patch`` edit, the task's solution, the end (the Stop
instruction's delivery is ``test_real_codex.py``'s, on this machine).

How the box reaches the server: as a user runs it. The bundled task has no network; the
server listens on the host's loopback, and the box reaches exactly that endpoint through the
egress proxy's forward listener (docs/docker.md, "How the model is reached").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fire_exp.agents.coding_agents import CodexAgent
from fire_exp.agents.coding_agents.packaged import wheel_binary
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import build_arm, load_portfolio
from fire_exp.records import AttemptRecord, Cause
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task
from tests.agents.agent_support import task_copy
from tests.agents.scripted_responses import (
    ResponsesServer,
    apply_patch,
    exec_command,
    hook_prompts,
    message,
    slow_text,
    stall,
    tool_outputs,
)
from tests.ci import missing

pytestmark = [pytest.mark.cli, pytest.mark.docker, pytest.mark.slow]
ARGS = ["--dangerously-bypass-hook-trust", "--sandbox", "danger-full-access"]  # the yaml's
MODEL = "scripted-coder"  # outside Codex's bundled catalogue, as a local model's name
NOTE = "*** Begin Patch\n*** Add File: notes.txt\n+recovered from the WAL\n*** End Patch\n"
DENIED = "sqlite3 evidence/orders.db .dump"  # the real arm denies it (database_evidence)


@pytest.fixture
def engine(docker_client: Any) -> Any:
    """The Docker engine (tests/environments' session fixture: no container left over)."""
    return docker_client


def attempt(tmp_path: Path, task: Path, agent: CodexAgent) -> AttemptRecord:
    loaded = load_task(task)
    real, controls = load_portfolio("fire-core"), load_portfolio("controls")
    env = DockerEnvironment(loaded, tmp_path / "attempt", "real-codex")
    spec = AttemptSpec(run="r", panel="p", attempt_id="real-codex", task=loaded.name,
                       cohort="eligible", arm="real", replicate=0, order=0, seed=0,
                       portfolio=str(real.path), controls=str(controls.path))
    return run_attempt(spec, env, agent, build_arm("real", real, controls).families,
                       real.families, rng=np.random.default_rng(0))


def test_the_real_codex_in_the_box_is_denied_edits_stops_and_is_read_back(
        engine: Any, tmp_path: Path) -> None:
    if wheel_binary("codex") is None:
        missing("the Codex CLI wheel (pip install 'fire-exp[codex]')")
    solve = (SUITES_DIR / "fire-mini/recover-wal-orders/solution/solve.sh").read_text()
    script = [[exec_command(DENIED, "call_deny")], [apply_patch(NOTE)],
              [exec_command(solve, "call_solve")], [message("Done.")]]
    with ResponsesServer(script) as server:
        agent = CodexAgent(model=MODEL, base_url=server.url(), args=ARGS)
        assert agent.install.spec.host_binary == wheel_binary("codex")  # mounted, no image
        record = attempt(tmp_path, SUITES_DIR / "fire-mini" / "recover-wal-orders", agent)
    assert record.passed and record.cause is None, record.error
    assert record.valid, record.invalid_reason  # transcript and hook calls agree, by id
    assert "apply_patch" in [t.get("name") for t in server.requests[0]["tools"]]
    assert tool_outputs(server.requests[1])["call_deny"].startswith(
        "Command blocked by PreToolUse hook:")
    logs = tmp_path / "attempt/logs/agent"
    steps = [json.loads(x) for x in (logs / "commands.jsonl").read_text().splitlines()]
    assert [(s["kind"], s["denied"]) for s in steps] == \
        [("command", True), ("edit", False), ("command", False), ("stop", False)]
    assert steps[0]["command"] == DENIED and steps[1]["paths"] == ["/app/notes.txt"]
    assert record.decisions == 1 and record.funnel.fired
    assert record.usage.input_tokens > 0 and record.usage.output_tokens > 0
    assert record.usage.model == MODEL and record.usage.cost_usd == 0.0
    assert (logs / "codex-rollout.jsonl").is_file()
    summary = json.loads((logs / "hook-summary.json").read_text())
    assert summary["by_event"]["PreToolUse"] == 3 and summary["tamper"] == []
    assert len(server.requests) == 4 and not any(hook_prompts(r) for r in server.requests)


@pytest.mark.parametrize("model", ["answering slowly", "hung after created"])
def test_a_codex_stopped_mid_answer_reached_its_model_and_a_hung_one_did_not(
        engine: Any, tmp_path: Path, model: str) -> None:
    """Codex 0.163 shows an answer, and counts its tokens, only once it completes: stopped
    by the agent timeout while the model's answer streamed (one word a second), its output
    shows nothing. The egress proxy on the host saw the answer's text pass: the model was
    reached, a fair attempt the agent timed out on, not a provider failure replaced (a
    survivorship bias against slow answers). A server that sends ``response.created`` and
    hangs wrote nothing: that attempt never reached its model."""
    if wheel_binary("codex") is None:
        missing("the Codex CLI wheel (pip install 'fire-exp[codex]')")
    task = task_copy(tmp_path, "csv-column-stats", timeout_sec=12.0)
    reply = slow_text(200, 1.0) if model == "answering slowly" else stall(60)
    with ResponsesServer([reply]) as server:
        record = attempt(tmp_path, task, CodexAgent(model=MODEL, base_url=server.url(),
                                                   args=ARGS))
    egress = [json.loads(x) for x in (tmp_path / "attempt/logs/agent/egress.jsonl")
              .read_text().splitlines()]
    streaming = [e for e in egress if e.get("output") == "streaming"]
    if model == "answering slowly":
        assert record.cause == Cause.AGENT_TIMEOUT and record.valid, record.error
        assert "while the model's answer was streaming to it" in str(record.error)
        assert [e["request"] for e in streaming] == ["POST /v1/responses"]
        assert record.reward is not None  # a fair attempt: its verifier ran
    else:
        assert record.cause == Cause.PROVIDER_FAILED, record.error
        assert "never got a model answer" in str(record.error) and streaming == []
        assert record.reward is None
