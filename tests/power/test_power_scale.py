"""Power at any task count ``analyze`` accepts (1,024 tasks and beyond, where 2.0 ** n
overflows), and the grid's ceilings, which refuse before anything is simulated."""

from __future__ import annotations

from math import ldexp
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fire_exp.cli import main as fire_exp_main
from fire_exp.errors import InputError
from fire_exp.power import BetaRates, PowerSpec, simulate_design
from fire_exp.power.design import minimum_detectable_effects, tasks_to_preregister
from fire_exp.power.settings import CEILINGS, Ceilings, check_ceilings, power_settings
from fire_exp.power.signflip import LatticeSignFlip
from fire_exp.stats import sign_flip_test


def _spec(n: int, **kw: object) -> PowerSpec:
    base: dict[str, object] = dict(primary="real - sham", alpha=0.05, tasks=(n,),
                                   attempts=(2,), effects_pp=(0.0, 20.0), n_sims=60, seed=5,
                                   source=BetaRates(2, 3), secondary=("real - baseline",))
    return PowerSpec(**(base | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [1024, 2000])
def test_power_runs_at_1024_and_2000_tasks(n: int) -> None:
    rows = simulate_design(_spec(n), n, 2)
    assert [r["min_attainable_p"] for r in rows] == [ldexp(1.0, 1 - n)] * 4  # 0 at 2,000
    primary = {r["effect_pp"]: r["power"] for r in rows if r["role"] == "primary"}
    assert primary[0.0] <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 60) and primary[20.0] == 1.0
    mde = minimum_detectable_effects(pd.DataFrame(rows))
    assert mde["can_reject"].tolist() == [True]


@pytest.mark.parametrize("n", [1024, 2000])
def test_p_at_1024_and_2000_tasks_is_analyzes(n: int) -> None:
    rng = np.random.default_rng(n)
    rows = rng.integers(-2, 3, size=(4, n))
    rows[0] = np.abs(rows[0]) * (rng.random(n) < 0.02)  # a strong effect on a few tasks
    got = LatticeSignFlip().p_values(rows, attempts=2)
    ref = [sign_flip_test(r / 2).p_value for r in rows]
    assert np.allclose(got, ref, rtol=1e-13, atol=0) and got[0] < 1e-3


def test_the_task_count_search_passes_1024_tasks() -> None:
    # No power at +0.5 points: the search doubles 10, 20, ..., 1280 and stops at 2,000.
    count = tasks_to_preregister(_spec(10, n_sims=20), attempts=1, effect_pp=0.5,
                                 max_tasks=2000)
    assert count.n_tasks is None and count.max_tasks == 2000


def test_power_command_at_2000_tasks(cli, tmp_path: Path) -> None:
    done = cli("power", "panel=demo", "source=beta", "tasks=[1024,2000]", "attempts=[1]",
               "effects=[0,20]", "n_sims=20", "max_tasks=2000", "target_effect=20",
               f"out={tmp_path}")
    assert done.returncode == 0, done.stderr
    mde = pd.read_csv(tmp_path / "mde.csv")
    assert mde["n_tasks"].tolist() == [1024, 2000]
    assert mde["min_attainable_p"].tolist() == [ldexp(1.0, -1023), 0.0]


@pytest.mark.parametrize(("args", "key", "words"), [
    (["tasks=[100000]"], "power.tasks", "100,000 tasks is above the ceiling of 10,000"),
    (["max_tasks=20000"], "power.max_tasks", "20,000 tasks is above the ceiling"),
    (["attempts=[2,50]"], "power.attempts", "50 attempts is above the ceiling of 10"),
    (["n_sims=1000000"], "power.n_sims", "1,000,000 simulations per design"),
    (["tasks=[5000,10000]", "attempts=[4]", "n_sims=20000"], "power.tasks",
     "the grid simulates 6,000,000,000 attempts per arm"),
])
def test_a_grid_above_the_ceilings_is_refused_before_work(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], key: str,
        words: str) -> None:
    out = tmp_path / "power"
    assert fire_exp_main(["power", "panel=demo", "source=beta", "effects=[0,10,20,30,40]",
                          f"out={out}", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert key in err and words in err and "ceilings=false" in err, err
    assert not out.exists()


def test_ceilings_false_lifts_them(cli, tmp_path: Path) -> None:
    done = cli("power", "panel=demo", "source=beta", "tasks=[10001]", "attempts=[1]",
               "effects=[0]", "n_sims=3", "max_tasks=20", "ceilings=false", f"out={tmp_path}")
    assert done.returncode == 0, done.stderr
    assert pd.read_csv(tmp_path / "power.csv")["n_tasks"].tolist() == [10001] * 5


def test_the_default_grid_is_far_below_the_ceilings() -> None:
    settings = power_settings({})
    assert settings.ceilings is True
    tasks, attempts, effects = settings.grid(panel_tasks=11, panel_attempts=2)
    check_ceilings(tasks, attempts, len(effects), settings.n_sims, settings.max_tasks)
    work = sum(n * k for n in tasks for k in attempts) * len(effects) * settings.n_sims
    assert work * 50 < CEILINGS.simulated_attempts


def test_ceilings_are_each_enforced_at_their_value() -> None:
    small = Ceilings(tasks=100, attempts=3, n_sims=50, simulated_attempts=10_000)
    check_ceilings((100,), (3,), 1, 33, 100, small)  # at every ceiling: accepted
    for args in [((101,), (1,), 1, 1, 10), ((10,), (1,), 1, 1, 101), ((10,), (4,), 1, 1, 10),
                 ((10,), (1,), 1, 51, 10), ((100,), (3,), 1, 34, 10)]:
        with pytest.raises(InputError, match="ceiling"):
            check_ceilings(*args, ceilings=small)


@pytest.mark.parametrize("bad", [
    {"ceilings": "no"}, {"n_sims": float("inf")}, {"tasks": [float("inf")]},
    {"max_tasks": float("nan")},
    # once bent to fit: secondary "no" read as true, beta [true, 3] as Beta(1, 3), n_sims
    # 2.5 as 2 simulated panels, max_tasks 10.5 as 10
    {"secondary": "no"}, {"secondary": 1}, {"beta": [True, 3]}, {"beta": [2, float("inf")]},
    {"n_sims": 2.5}, {"max_tasks": 10.5}])
def test_non_finite_and_non_boolean_settings_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(InputError, match=f"power.{next(iter(bad))}"):
        power_settings(bad)
