"""Agents in a box that offers only one-shot exec and file transfer (Harbor's shape,
``tests/environments/oneshot_box.py``): the simulated, OpenAI and oracle agents and a
coding-CLI arm (the toy dialect, its hooks through the spool in the box, moved by one-shot
execs: ``hook_transport.FileHooks``, no stream) run there as in the local environment, and
their records agree with the local ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fire_exp.agents.base import Agent, OracleAgent
from fire_exp.agents.openai import OpenAIAgent
from fire_exp.agents.simulated import SimulatedAgent
from fire_exp.environments.base import Environment
from fire_exp.environments.local import LocalEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import build_arm, load_portfolio
from fire_exp.records import AttemptRecord
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task
from tests.agents.agent_support import KEY_ENV
from tests.agents.scripted_server import ScriptedServer, solution_responder
from tests.agents.test_recipe_cli import SETTINGS, TOY, ToyCliAgent
from tests.environments.oneshot_box import OneShotBox

Backend = Callable[..., Environment]
BACKENDS: dict[str, Backend] = {"local": LocalEnvironment, "oneshot": OneShotBox}
# What must not depend on the box: the verdict, the work done, the arm's part in it.
SAME = ("passed", "reward", "cause", "n_commands", "decisions", "events", "error")


def attempt(tmp_path: Path, backend: str, task: str, arm: str, agent: Agent) -> AttemptRecord:
    loaded = load_task(SUITES_DIR / "fire-mini" / task)
    real, controls = load_portfolio("fire-core"), load_portfolio("controls")
    env = BACKENDS[backend](loaded, tmp_path / backend, "oneshot-attempt")
    spec = AttemptSpec(run="r", panel="p", attempt_id="oneshot-attempt", task=task,
                       cohort="eligible", arm=arm, replicate=0, order=0, seed=0,
                       portfolio=str(real.path), controls=str(controls.path))
    return run_attempt(spec, env, agent, build_arm(arm, real, controls).families,
                       real.families, rng=np.random.default_rng(0))


def both(tmp_path: Path, task: str, arm: str, make: Callable[[], Agent]
         ) -> tuple[AttemptRecord, AttemptRecord]:
    """The attempt in the one-shot box and in the local environment."""
    boxed = attempt(tmp_path, "oneshot", task, arm, make())
    local = attempt(tmp_path, "local", task, arm, make())
    assert boxed.environment == "oneshot" and local.environment == "local"
    assert {k: getattr(boxed, k) for k in SAME} == {k: getattr(local, k) for k in SAME}
    return boxed, local


def test_the_oracle_solves_in_the_one_shot_box(tmp_path: Path) -> None:
    boxed, _ = both(tmp_path, "csv-column-stats", "baseline", OracleAgent)
    assert boxed.passed and boxed.reward == 1.0
    assert (tmp_path / "oneshot/logs/verifier/test-stdout.txt").is_file()  # brought home


def test_the_simulated_agent_meets_the_arm_in_the_one_shot_box(tmp_path: Path) -> None:
    boxed, _ = both(tmp_path, "recover-wal-orders", "real", SimulatedAgent)
    assert boxed.n_commands > 0 and boxed.events > 0


def test_the_openai_agent_solves_in_the_one_shot_box(tmp_path: Path,
                                                     fake_key: str) -> None:
    def make() -> Agent:
        return OpenAIAgent(base_url=server.base_url, model="scripted-model-1",
                           api_key_env=KEY_ENV, backoff_s=0.01)

    with ScriptedServer(solution_responder()) as server:
        boxed, _ = both(tmp_path, "csv-column-stats", "baseline", make)
    assert boxed.passed and boxed.n_commands == 1
    assert fake_key not in (tmp_path / "oneshot/logs/agent/terminal.log").read_text()


def test_a_coding_cli_arm_is_denied_and_solves_in_the_one_shot_box(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    solve = (SUITES_DIR / "fire-mini/recover-wal-orders/solution/solve.sh").read_text()
    monkeypatch.setenv("TOY_CLI_SCRIPT", json.dumps(
        ["sqlite3 evidence/orders.db .dump", solve.replace("/tmp/evidence-copy",
                                                           "../evidence-copy")]))

    def make() -> Agent:
        return ToyCliAgent(binary=str(TOY), env_passthrough=["TOY_CLI_SCRIPT"],
                           prices={"toy-1": {"input": 1.0, "output": 2.0}})

    # The local run of the same arm is test_recipe_cli's (the same expectations).
    boxed = attempt(tmp_path, "oneshot", "recover-wal-orders", "real", make())
    assert boxed.passed and boxed.cause is None and boxed.error is None
    # UserPromptSubmit, 2 x PreToolUse, 1 x PostToolUse (the denied one never ran), Stop
    assert boxed.decisions == 1 and boxed.events == 5 and boxed.funnel.fired
    assert boxed.valid, boxed.invalid_reason
    # Through the spool in the box (FileHooks), not fire-exp's command on this machine:
    # every call crossed it, was answered, and the channel saw no sign of tampering.
    channel = json.loads((tmp_path / "oneshot/hooks/channel.json").read_text())
    assert (channel["requests"], channel["answered"], channel["tamper"]) == (5, 5, [])
    settings = json.loads((tmp_path / "oneshot/hooks" / SETTINGS).read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command.split()[0].endswith("/fire-exp/bin/fire-exp-hook")
