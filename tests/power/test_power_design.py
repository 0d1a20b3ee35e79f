"""Reading a power grid: minimum detectable effects, attainable p, tasks to preregister."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fire_exp.power import FixedRate, PowerSpec, minimum_detectable_effects, power_grid
from fire_exp.power.design import tasks_to_preregister


def _grid(power: list[float], effects: list[float], n: int = 20) -> pd.DataFrame:
    return pd.DataFrame({"n_tasks": n, "attempts": 2, "effect_pp": effects, "power": power,
                         "role": "primary", "alpha": 0.05})


def test_mde_interpolates_between_grid_effects() -> None:
    mde = minimum_detectable_effects(_grid([0.05, 0.5, 0.9], [0, 20, 40]))
    assert mde["mde_pp"].iloc[0] == pytest.approx(20 + 0.3 / 0.4 * 20)
    assert mde["min_attainable_p"].iloc[0] == 2 / 2 ** 20


def test_mde_is_nan_when_the_grid_falls_short_and_small_panels_cannot_reject() -> None:
    mde = minimum_detectable_effects(_grid([0.0, 0.0], [0, 40], n=4))
    assert np.isnan(mde["mde_pp"].iloc[0])
    # 4 tasks: the smallest attainable p is 2/16 = .125 > .05, nothing can be detected.
    assert mde["min_attainable_p"].iloc[0] == 0.125 and not mde["can_reject"].iloc[0]


def _spec(**kw: object) -> PowerSpec:
    base: dict[str, object] = dict(primary="real - sham", alpha=0.05, tasks=(10,),
                                   attempts=(1,), effects_pp=(30.0,), n_sims=2000, seed=3,
                                   source=FixedRate(0.3))
    return PowerSpec(**(base | kw))  # type: ignore[arg-type]


def test_tasks_to_preregister_is_the_first_count_reaching_the_target() -> None:
    spec = _spec()
    count = tasks_to_preregister(spec, attempts=1, effect_pp=30.0)
    assert count.n_tasks is not None and count.power >= 0.8
    below = power_grid(_spec(tasks=(count.n_tasks - 1,)), secondary=False)["power"].iloc[0]
    assert below < 0.8
    assert "preregister" in count.sentence("demo", 10)


def test_tasks_to_preregister_says_when_no_count_suffices() -> None:
    count = tasks_to_preregister(_spec(n_sims=300), attempts=1, effect_pp=2.0, max_tasks=40)
    assert count.n_tasks is None and count.max_tasks == 40
    assert "no task count up to 40" in count.sentence("demo", 10)
