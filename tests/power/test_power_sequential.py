"""The sequential design beside the fixed one: valid under the null, cheaper on average
when the effect is large, and written by ``fire-exp power`` for a sequential plan."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fire_exp.analysis.plan_sequential import Futility, SequentialPlan
from fire_exp.power.sequential import sequential_design, sequential_grid
from fire_exp.power.simulate import PowerSpec
from fire_exp.power.sources import BetaRates

SPEC = PowerSpec("real - sham", alpha=0.05, tasks=(28, 56), attempts=(2,),
                 effects_pp=(0.0, 40.0), n_sims=2000, seed=11, source=BetaRates(2.0, 3.0))


def test_type_one_error_at_most_alpha_and_large_effects_stop_early() -> None:
    null, large = sequential_design(SPEC, SequentialPlan(), 56, 2, arms=5, price_usd=2.0)
    assert null["power"] + 3 * null["mc_se"] <= 0.05
    assert large["power"] > 0.95
    assert large["expected_tasks"] < 0.6 * 56  # stops early when the effect is plain
    assert large["expected_cost_usd"] == large["expected_tasks"] * 5 * 2 * 2.0
    assert large["fixed_cost_usd"] == 56 * 5 * 2 * 2.0


def test_futility_saves_tasks_under_the_null_and_never_adds_rejections() -> None:
    plain = sequential_design(SPEC, SequentialPlan(), 56, 2, arms=5)[0]
    futile = sequential_design(SPEC, SequentialPlan(futility=Futility(e_below=0.5,
                                                                      min_tasks=10)),
                               56, 2, arms=5)[0]
    assert futile["futility_share"] > 0.3
    assert futile["expected_tasks"] < plain["expected_tasks"]
    assert futile["power"] <= plain["power"]


def test_the_grid_is_reproducible_from_the_seed() -> None:
    a = sequential_grid(SPEC, SequentialPlan(), arms=2)
    pd.testing.assert_frame_equal(a, sequential_grid(SPEC, SequentialPlan(), arms=2))
    assert len(a) == 2 * 1 * 2


def test_power_cli_writes_the_sequential_design_for_a_sequential_plan(cli, tmp_path: Path,
                                                                      ) -> None:
    out = tmp_path / "power"
    done = cli("power", "panel=fire-mini-sequential", f"out={out}", "tasks=[11,28]",
               "attempts=[2]", "effects=[0,30]", "n_sims=300", "max_tasks=80",
               "price_usd=2.5")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("preregister ") and lines[1].startswith("sequential design")
    grid = pd.read_csv(out / "sequential.csv")
    assert set(grid["n_tasks"]) == {11, 28}
    assert (grid["expected_cost_usd"] <= grid["fixed_cost_usd"] + 1e-9).all()
    assert "fixed_power" in (out / "sequential.md").read_text()
