"""``panel.agent_timeout_multiplier``: every task's agent time budget times one factor,
for every arm alike (Harbor's ``--agent-timeout-multiplier``); hashed with the experiment
when it is not 1, refused where it enters when it is no positive number."""

from __future__ import annotations

import math
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fire_exp.agents.base import AgentOutcome
from fire_exp.agents.session import AgentSession
from fire_exp.config import panel_from_dict
from fire_exp.environments import LocalEnvironment
from fire_exp.errors import InputError
from fire_exp.records import Cause
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks import load_task
from tests.agents.test_simulated_agent import make_task

BASE = {"name": "p", "suite": "s", "eligible": ["t"], "arms": ["real"], "attempts": 1,
        "portfolio": "fire-core"}


def test_a_bad_multiplier_is_refused_where_it_enters() -> None:
    for value in (0, -0.5, "half", math.inf, math.nan, True, None):
        with pytest.raises(InputError) as exc:
            panel_from_dict({**BASE, "agent_timeout_multiplier": value})
        assert exc.value.field == "agent_timeout_multiplier", value
        assert "expected a positive number" in exc.value.problem


def test_a_multiplier_other_than_one_is_part_of_the_experiment() -> None:
    plain = panel_from_dict(BASE)
    assert plain.agent_timeout_multiplier == 1.0
    assert "agent_timeout_multiplier" not in plain.as_dict()  # old panels keep their hash
    assert panel_from_dict({**BASE, "agent_timeout_multiplier": 1}).as_dict() == plain.as_dict()
    half = panel_from_dict({**BASE, "agent_timeout_multiplier": 0.5})
    assert half.as_dict()["agent_timeout_multiplier"] == 0.5


class _Busy:
    """Runs ``sleep 1`` until its time runs out, noting the budget it was given."""

    name, tier = "busy", None

    def __init__(self) -> None:
        self.budget = 0.0

    def preflight(self, capabilities: Any) -> None:
        pass

    def run(self, session: AgentSession, rng: np.random.Generator) -> AgentOutcome:
        self.budget = session.time_left()
        while True:
            session.bash("sleep 1")


@pytest.mark.parametrize("factor", [0.004, 0.006])
def test_the_attempt_gets_the_scaled_budget_and_times_out_by_it(tmp_path: Path,
                                                                factor: float) -> None:
    task = load_task(make_task(tmp_path / uuid.uuid4().hex[:6]))
    assert task.agent.timeout_sec == 900.0
    attempt_id = f"busy-{uuid.uuid4().hex[:8]}"
    env = LocalEnvironment(task, tmp_path / attempt_id, attempt_id)
    spec = AttemptSpec("run", "panel", attempt_id, task.name, "eligible", "baseline", 0, 0, 0,
                       policy_arm=False, agent_timeout_multiplier=factor)
    agent = _Busy()
    start = time.monotonic()
    record = run_attempt(spec, env, agent, [], [], rng=np.random.default_rng(0))
    budget = 900.0 * factor  # 3.6 s, 5.4 s
    assert budget - 1.0 < agent.budget <= budget
    assert record.cause == Cause.AGENT_TIMEOUT, record.error
    assert record.reward == 0.0  # the verifier still ran after the timeout
    assert budget - 0.5 < record.timings.agent_s < budget + 5.0
    assert time.monotonic() - start < 60.0
