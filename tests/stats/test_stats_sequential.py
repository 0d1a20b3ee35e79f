"""The betting e-process: a test martingale under the sign-flip null, valid under repeated
looks (type-I error at most alpha by simulation), and powerful against a shift."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fire_exp.stats.sequential import (
    BETS_ON,
    BETTING_METHODS,
    balanced_difference,
    e_process,
    sequential_test,
)

N_PANELS = 10_000
ALPHA = 0.05


def _panels(rng: np.random.Generator, n_panels: int, n_tasks: int, shift: float,
            attempts: int = 2) -> np.ndarray:
    """Per-task pass-rate differences of simulated panels: each task has its own base
    rate; arm A's rate is shifted up by ``shift``, arm B's down by as much."""
    base = rng.uniform(0.2, 0.8, size=(n_panels, n_tasks))
    a = rng.binomial(attempts, np.clip(base + shift / 2, 0, 1)) / attempts
    b = rng.binomial(attempts, np.clip(base - shift / 2, 0, 1)) / attempts
    return np.asarray(a - b)


@pytest.mark.parametrize("method, bet_on", [(m, b) for m in BETTING_METHODS for b in BETS_ON])
def test_expectation_under_sign_flip_null_is_exactly_one_by_enumeration(method: str,
                                                                       bet_on: str) -> None:
    """A test martingale: averaged over every sign vector, K_t is 1 at each t, and each
    step's conditional expectation is the previous value (checked per prefix)."""
    mags = np.array([0.5, 1.0, 0.0, 0.5, 1.0, 0.5, 0.5, 1.0])
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=mags.size)))
    paths = e_process(signs * mags, method=method, bet_on=bet_on)
    assert np.all(paths >= 0)
    np.testing.assert_allclose(paths.mean(axis=0), 1.0, rtol=1e-12)
    # Conditional: sign vectors that differ only in the last sign average to K_{t-1}.
    for t in range(1, mags.size):
        flipped = signs.copy()
        flipped[:, t] *= -1
        pair_mean = (paths[:, t] + e_process(flipped * mags, method=method,
                                             bet_on=bet_on)[:, t]) / 2
        np.testing.assert_allclose(pair_mean, paths[:, t - 1], rtol=1e-12)


@pytest.mark.parametrize("method, bet_on", [(m, b) for m in BETTING_METHODS for b in BETS_ON])
def test_type_one_error_with_a_look_after_every_task_is_at_most_alpha(method: str,
                                                                      bet_on: str) -> None:
    """10,000 null panels of 60 tasks, a look after every task: the share that ever
    reaches 1/alpha stays below alpha (bound: estimate + 3 Monte Carlo SE <= alpha)."""
    rng = np.random.default_rng(20260301)
    paths = e_process(_panels(rng, N_PANELS, 60, shift=0.0), method=method, bet_on=bet_on)
    rejected = (paths >= 1 / ALPHA).any(axis=1).mean()
    mc_se = np.sqrt(rejected * (1 - rejected) / N_PANELS)
    assert rejected + 3 * mc_se <= ALPHA, (rejected, mc_se)


@pytest.mark.parametrize("method", BETTING_METHODS)
def test_power_against_a_25_point_shift_grows_with_tasks(method: str) -> None:
    rng = np.random.default_rng(7)
    power = [(e_process(_panels(rng, 2_000, n, shift=0.25), method=method) >= 20)
             .any(axis=1).mean() for n in (14, 56, 112)]
    assert power[0] < power[1] < power[2]
    assert power[2] > 0.9


def test_zero_differences_leave_the_e_value_unchanged() -> None:
    path = e_process([0.5, 0.0, 0.0, 1.0])
    assert path[0] == path[1] == path[2]
    assert np.all(e_process(np.zeros(5)) == 1.0)


def test_the_decision_depends_only_on_the_differences_and_their_order() -> None:
    d = [1.0, 0.5, 1.0, 1.0, -0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    first, again = sequential_test(d), sequential_test(list(d))
    assert (first.decision, first.stopped_at, first.e_value) == \
        (again.decision, again.stopped_at, again.e_value)
    assert first.decision == "efficacy"
    assert first.e_value >= 20 > first.e_values[first.stopped_at - 2]


@pytest.mark.parametrize("method, bet_on", [(m, b) for m in BETTING_METHODS for b in BETS_ON])
def test_a_harmful_effect_stops_for_harm_never_for_efficacy(method: str, bet_on: str) -> None:
    """Every task favouring B once stopped with "efficacy" (e = 22.65 at task 7): the
    decision now names the side that reached 1/alpha, at the same task and e-value."""
    harm = sequential_test([-1.0] * 8, method=method, bet_on=bet_on)
    good = sequential_test([1.0] * 8, method=method, bet_on=bet_on)
    assert (harm.decision, good.decision) == ("harm", "efficacy")
    assert harm.stopped_at == good.stopped_at and harm.e_value == pytest.approx(good.e_value)
    mixed = sequential_test([-1.0, 0.5] * 3 + [-1.0] * 16, method=method, bet_on=bet_on)
    assert mixed.decision == "harm" and mixed.mean_difference < 0


def _unbalanced_null(rng: np.random.Generator, n_panels: int, n_tasks: int,
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Null panels of easy tasks where arm A has 1 scored attempt and B has 2 (an invalid
    record of A dropped and not replaced): the raw pass-rate difference A − B, and the
    balanced one (A's attempt against B's first), both arms at the same rate."""
    p = rng.uniform(0.8, 0.95, size=(n_panels, n_tasks))
    a = (rng.random((n_panels, n_tasks)) < p).astype(float)
    b = (rng.random((n_panels, n_tasks, 2)) < p[..., None]).astype(float)
    raw = a - b.mean(axis=-1)
    balanced = np.array([[balanced_difference([x], list(y)) for x, y in zip(ra, rb, strict=True)]
                         for ra, rb in zip(a[:2], b[:2], strict=True)])  # the function, on a sample
    np.testing.assert_array_equal(balanced, a[:2] - b[:2, :, 0])
    return raw, a - b[..., 0]


def _rejects(diffs: np.ndarray, method: str, bet_on: str) -> float:
    paths = e_process(diffs, method=method, bet_on=bet_on)
    return float((paths.max(axis=-1) >= 1 / ALPHA).mean())


@pytest.mark.parametrize("method", BETTING_METHODS)
def test_type_one_error_holds_with_unbalanced_attempts(method: str) -> None:
    """1 attempt against 2 on 150 easy tasks, 1,500 null panels (seeded): betting on the
    raw signs rejects far above alpha (P(d > 0) != P(d < 0) under the null), which is why
    the sign is bet on the balanced difference; betting on differences needs no balance."""
    raw, balanced = _unbalanced_null(np.random.default_rng(37), 1500, 150)
    bound = ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / 1500)
    assert _rejects(raw, method, "sign") > bound  # the defect the balance removes
    assert _rejects(balanced, method, "sign") <= bound
    assert _rejects(raw, method, "difference") <= bound


def test_futility_stops_only_after_its_minimum_tasks() -> None:
    d = [1.0, -1.0] * 10  # the e-value falls below 0.5 at task 6
    result = sequential_test(d, futility_below=0.5, futility_min_tasks=8)
    assert (result.decision, result.stopped_at) == ("futility", 8)
    assert result.e_value <= 0.5
    assert sequential_test(d).decision == "continue"


def test_sequential_p_is_one_over_the_largest_e_value() -> None:
    result = sequential_test([1.0, 1.0, 0.5])
    assert result.sequential_p == pytest.approx(1 / result.e_values.max())


@pytest.mark.parametrize("bad, match", [
    ({"diffs": [1.5]}, "within"), ({"diffs": [np.nan]}, "finite"),
    ({"diffs": [0.5], "method": "kelly"}, "method"), ({"diffs": [0.5], "max_bet": 1.0}, "max_bet"),
    ({"diffs": [0.5], "alpha": 0.0}, "alpha"), ({"diffs": [0.5], "bet_on": "rank"}, "bet_on"), ({"diffs": [0.5], "futility_below": 1.0}, "futility"),
])
def test_bad_input_is_refused(bad: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sequential_test(**bad)  # type: ignore[arg-type]


def test_no_tasks_yet_means_continue_at_e_value_one() -> None:
    result = sequential_test([])
    assert (result.decision, result.e_value, result.n_tasks) == ("continue", 1.0, 0)


def test_betting_on_signs_ignores_how_far_a_task_moved() -> None:
    small = sequential_test([0.5] * 10, method="agrapa", bet_on="sign")
    large = sequential_test([1.0] * 10, method="agrapa", bet_on="sign")
    np.testing.assert_array_equal(small.e_values, large.e_values)
    assert small.bet_on == "sign" and small.stopped_at is not None
    assert sequential_test([0.5] * 10, method="agrapa").stopped_at is None
