"""Simulated power: the test's level at effect 0, the closed form when every task is shifted
alike, a brute-force loop over the real sign_flip_test, and reproducible streams."""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from fire_exp.power import BetaRates, FixedRate, PooledRates, PowerSpec, power_grid
from fire_exp.power.sources import effect_model
from fire_exp.stats import holm, sign_flip_test

SECONDARY = ("real - baseline", "real - always_verify", "sham - baseline")


def _spec(**kw: object) -> PowerSpec:
    base: dict[str, object] = dict(primary="real - sham", alpha=0.05, tasks=(12,),
                                   attempts=(2,), effects_pp=(0.0,), n_sims=2000, seed=11,
                                   source=BetaRates(2, 3), secondary=SECONDARY)
    return PowerSpec(**(base | kw))  # type: ignore[arg-type]


def _primary(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["role"] == "primary"].reset_index(drop=True)


@pytest.mark.parametrize(("n", "k"), [(8, 1), (14, 2), (30, 2), (40, 3)])
def test_at_effect_zero_power_is_at_most_alpha(n: int, k: int) -> None:
    frame = power_grid(_spec(tasks=(n,), attempts=(k,), n_sims=3000))
    # Every contrast is null at effect 0: primary and Holm-adjusted secondaries hold α.
    assert (frame["power"] <= 0.05 + 3 * frame["mc_se"] + 1e-9).all(), frame


def _homogeneous_power(p: float, q: float, n: int, k: int, alpha: float) -> float:
    """Exact power when every task has the same rates: sum over the multinomial counts of
    the per-task differences a in [−K, K], each outcome tested with sign_flip_test."""
    probs = np.convolve(st.binom.pmf(np.arange(k + 1), k, q),
                        st.binom.pmf(np.arange(k + 1), k, p)[::-1])  # P(a = −K..K)
    values = np.arange(-k, k + 1)
    power = 0.0
    for cut in itertools.combinations(range(n + 2 * k), 2 * k):  # stars and bars
        counts = np.diff([-1, *cut, n + 2 * k]) - 1
        weight = factorial(n) / np.prod([factorial(c) for c in counts]) * \
            np.prod(probs ** counts)
        diffs = np.repeat(values, counts) / k
        if sign_flip_test(diffs).p_value <= alpha:
            power += weight
    return float(power)


@pytest.mark.parametrize(("n", "k", "effect"), [(10, 1, 30.0), (20, 1, 25.0), (8, 2, 35.0),
                                                (12, 2, 20.0)])
def test_matches_the_closed_form_when_every_task_is_shifted_alike(n: int, k: int,
                                                                  effect: float) -> None:
    spec = _spec(tasks=(n,), attempts=(k,), effects_pp=(effect,), n_sims=6000,
                 source=FixedRate(0.3), secondary=())
    row = _primary(power_grid(spec)).iloc[0]
    q = 0.3 + effect / 100
    exact = _homogeneous_power(0.3, q, n, k, 0.05)
    assert abs(row["power"] - exact) < 4 * np.sqrt(exact * (1 - exact) / 6000) + 1e-9
    assert row["mean_estimate_pp"] == pytest.approx(effect, abs=2.0)


def _brute_force(spec: PowerSpec, n: int, k: int, effect: float, n_sims: int,
                 rng: np.random.Generator) -> np.ndarray:
    """Loop over panels: draw rates and attempts, test with the real sign_flip_test, Holm."""
    model = effect_model(spec.effect_model, spec.source)
    theta = model.parameter(effect)
    arms = ["real", "sham", "baseline", "always_verify"]
    rejections = np.zeros(1 + len(spec.secondary))
    for _ in range(n_sims):
        p = spec.source.draw(1, n, rng=rng)[0]
        rates = {arm: rng.binomial(k, model.treated(p, theta) if arm == "real" else p) / k
                 for arm in arms}
        pv = [sign_flip_test(rates[a] - rates[b]).p_value
              for a, b in (c.split(" - ") for c in [spec.primary, *spec.secondary])]
        rejections += np.r_[pv[0] <= spec.alpha, holm(pv[1:]) <= spec.alpha]
    return rejections / n_sims


@pytest.mark.parametrize("model", ["share", "logit"])
def test_brute_force_simulation_agrees(model: str) -> None:
    spec = _spec(tasks=(14,), attempts=(2,), effects_pp=(25.0,), n_sims=4000,
                 effect_model=model)
    fast = power_grid(spec)["power"].to_numpy()
    slow = _brute_force(spec, 14, 2, 25.0, 1500, np.random.default_rng(99))
    se = np.sqrt(fast * (1 - fast) / 4000 + slow * (1 - slow) / 1500)
    assert np.all(np.abs(fast - slow) < 4 * se + 1e-9), (fast, slow)
    assert fast[0] > 0.2  # the effect is visible: the comparison is not between two zeros


def test_same_seed_same_numbers_and_designs_are_independent_streams() -> None:
    one = _primary(power_grid(_spec(tasks=(10, 20), effects_pp=(0.0, 20.0), n_sims=700)))
    two = _primary(power_grid(_spec(tasks=(20,), effects_pp=(0.0, 20.0), n_sims=700)))
    assert one[one["n_tasks"] == 20].reset_index(drop=True).equals(two)
    other = _primary(power_grid(_spec(tasks=(20,), effects_pp=(0.0, 20.0), n_sims=700,
                                      seed=12)))
    assert not other.equals(two)


def test_power_grows_with_effect_tasks_and_attempts() -> None:
    frame = _primary(power_grid(_spec(tasks=(10, 40), attempts=(1, 3),
                                      effects_pp=(0.0, 15.0, 30.0), secondary=())))
    table = frame.pivot_table(index=["attempts", "n_tasks"], columns="effect_pp",
                              values="power")
    assert (table.diff(axis=1).iloc[:, 1:] > 0).all().all()
    assert table.loc[(3, 40), 30.0] > table.loc[(1, 40), 30.0] > table.loc[(1, 10), 30.0]


@pytest.mark.parametrize("kind", ["share", "logit"])
def test_effect_models_give_the_mean_effect(kind: str) -> None:
    for source in (BetaRates(2, 3), PooledRates((0.1, 0.25, 0.5, 0.75, 0.9), "pool")):
        model = effect_model(kind, source)
        theta = model.parameter(20.0)
        p = source.draw(200_000, 1, rng=np.random.default_rng(1))
        assert np.mean(model.treated(p, theta) - p) == pytest.approx(0.20, abs=0.003)


def test_unreachable_effect_is_refused() -> None:
    with pytest.raises(ValueError, match="outside"):
        _spec(source=FixedRate(0.9), effects_pp=(20.0,))
