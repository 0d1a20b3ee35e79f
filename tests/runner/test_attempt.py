"""One attempt (layer 1): an extractor that raises is recorded, never dropped."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fire_exp.agents.base import OracleAgent
from fire_exp.environments.local import LocalEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import Coding, Family
from fire_exp.records import AttemptRecord
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task

T = "csv-column-stats"


class Codes(Family):
    name = "codes"

    def eligible(self, task_text):  # type: ignore[no-untyped-def]
        return True

    def code(self, trajectory, task_text):  # type: ignore[no-untyped-def]
        return Coding(state=True, behavior=any(s.kind == "command" for s in trajectory))


class Breaks(Family):
    name = "breaks"

    def eligible(self, task_text):  # type: ignore[no-untyped-def]
        return True

    def code(self, trajectory, task_text):  # type: ignore[no-untyped-def]
        raise KeyError("no such field in the command log")


class BreaksEligibility(Family):
    name = "breaks_eligibility"

    def eligible(self, task_text):  # type: ignore[no-untyped-def]
        raise ValueError("bad pattern")


class Silent(Family):
    name = "silent"  # eligible on nothing: left out, as before


def _attempt(tmp_path: Path) -> AttemptRecord:
    task = load_task(SUITES_DIR / "fire-mini" / T)
    env = LocalEnvironment(task, tmp_path / "attempt", f"{T}/baseline/r0")
    spec = AttemptSpec(run="r", panel="p", attempt_id=f"{T}/baseline/r0", task=T,
                       cohort="silent", arm="baseline", replicate=0, order=0, seed=0)
    return run_attempt(spec, env, OracleAgent(), [],
                       [Codes(), Breaks(), BreaksEligibility(), Silent()],
                       rng=np.random.default_rng(0))


def test_an_extractor_that_raises_is_recorded(tmp_path: Path) -> None:
    record = _attempt(tmp_path)
    assert record.passed and record.cause is None
    funnel = {f.family: f for f in record.family_funnel}
    assert set(funnel) == {"codes", "breaks", "breaks_eligibility"}
    assert (funnel["codes"].state, funnel["codes"].behavior) == (True, True)
    for name in ("breaks", "breaks_eligibility"):
        assert (funnel[name].state, funnel[name].behavior) == (None, None)
    assert record.coding_errors == {
        "breaks": "KeyError: 'no such field in the command log'",
        "breaks_eligibility": "ValueError: bad pattern"}
    assert record.families == ["codes", "breaks", "breaks_eligibility"]
    assert record.funnel.state is True and record.funnel.behavior is True
