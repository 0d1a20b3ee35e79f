"""The vectorised sign-flip test gives analyze's p (fire_exp.stats.sign_flip_test) exactly."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from fire_exp.power.signflip import LatticeSignFlip, holm_rows
from fire_exp.stats import holm, sign_flip_test


def _reference(rows: np.ndarray, k: int) -> np.ndarray:
    # analyze compares per-task pass rates s/K computed as floats, as here.
    return np.array([sign_flip_test(r / k).p_value for r in rows])


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [1, 5, 14, 40, 62])
def test_p_is_the_same_float_as_sign_flip_test(k: int, n: int) -> None:
    rng = np.random.default_rng([k, n])
    rows = rng.integers(-k, k + 1, size=(200, n))
    rows[:40] = np.abs(rows[:40])        # strong effects: the tail of the null
    rows[40:50] = 0                      # degenerate: p = 1
    rows[50:60] = rng.choice([-k, k], size=(10, n))  # one magnitude only (gcd = k)
    got = LatticeSignFlip().p_values(rows, attempts=k)
    assert np.array_equal(got, _reference(rows, k))


@pytest.mark.parametrize("k", [1, 2, 4])
def test_beyond_62_tasks_p_agrees_to_rounding(k: int) -> None:
    rows = np.random.default_rng(k).integers(-k, k + 1, size=(100, 90))
    rows[:30] = np.abs(rows[:30])
    got, ref = LatticeSignFlip().p_values(rows, attempts=k), _reference(rows, k)
    assert np.allclose(got, ref, rtol=1e-13, atol=0)


def test_one_attempt_is_the_exact_binomial_sign_test() -> None:
    rows = np.random.default_rng(3).choice([-1, 0, 1], p=[0.2, 0.3, 0.5], size=(300, 25))
    got = LatticeSignFlip().p_values(rows, attempts=1)
    ref = [st.binomtest(int((r > 0).sum()), int((r != 0).sum())).pvalue if r.any() else 1.0
           for r in rows]
    assert np.allclose(got, ref, rtol=1e-12)


def test_cached_nulls_do_not_change_answers() -> None:
    rows = np.random.default_rng(5).integers(-2, 3, size=(300, 12))
    tester = LatticeSignFlip()
    first = tester.p_values(rows, attempts=2)
    again = tester.p_values(rows[::-1], attempts=2)[::-1]
    assert np.array_equal(first, again)


def test_published_screen_p_values() -> None:
    # FIRE Table 9: 7 tasks x 3 attempts; 5 of 5 changed tasks up gives .0625, 4 of 4 .125.
    sol = np.array([[1, 2, 3, 3, 3, 0, 0]])
    luna = np.array([[3, 0, 1, 2, 2, 0, 0]])
    tester = LatticeSignFlip()
    assert tester.p_values(sol, attempts=3)[0] == pytest.approx(0.0625)
    assert tester.p_values(luna, attempts=3)[0] == pytest.approx(0.125)


@pytest.mark.parametrize("bad", [np.array([[3, 0]]), np.array([[0.5, 0.0]]), np.array([1, 0])])
def test_bad_differences_are_refused(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        LatticeSignFlip().p_values(bad, attempts=2)


def test_holm_rows_equals_holm_on_every_row() -> None:
    p = np.random.default_rng(0).random((200, 4)) ** 3
    p[0] = [0.01, 0.01, 0.04, 1.0]  # ties
    expected = np.vstack([holm(row) for row in p])
    assert np.array_equal(holm_rows(p), expected)
