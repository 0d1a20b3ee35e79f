"""pass@k and pass^k against brute force over every subset of k attempts, with mixed attempt
counts (the distinct-(n, c) table must not mix tasks up), the curve's consistency, and the
refusals, line by line."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fire_exp.stats import pass_at_k, pass_curve, pass_hat_k


def brute(n: int, c: int, k: int) -> tuple[float, float]:
    """Over every k-subset of n attempts (c of them successes): P(any), P(all)."""
    outcomes = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    return (sum(any(s) for s in subsets) / len(subsets),
            sum(all(s) for s in subsets) / len(subsets))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_per_task_values_are_the_subset_averages(k: int) -> None:
    n = [3, 5, 4, 3, 6, 5, 9, 3]
    c = [0, 2, 4, 3, 1, 5, 7, 1]
    expected = [brute(ni, ci, k) for ni, ci in zip(n, c, strict=True)]
    assert pass_at_k(n, c, k).tolist() == pytest.approx([e[0] for e in expected], abs=1e-15)
    assert pass_hat_k(n, c, k).tolist() == pytest.approx([e[1] for e in expected], abs=1e-15)
    assert pass_at_k(np.array([[3, 5]]), np.array([[1, 2]]), k).shape == (1, 2)


def test_the_curve_averages_over_tasks_and_reports_consistency() -> None:
    curve = pass_curve([4, 4, 3], [2, 4, 0])
    assert curve.k == (1, 2, 3) and curve.n_tasks == 3
    hat = [np.mean([brute(n, c, k)[1] for n, c in ((4, 2), (4, 4), (3, 0))]) for k in (1, 2, 3)]
    at = [np.mean([brute(n, c, k)[0] for n, c in ((4, 2), (4, 4), (3, 0))]) for k in (1, 2, 3)]
    assert curve.pass_hat_k == pytest.approx(tuple(hat)) and curve.pass_at_k == pytest.approx(
        tuple(at))
    assert curve.consistency == pytest.approx(hat[-1] / hat[0])
    assert pass_curve([2, 2], [0, 0]).consistency == 1.0   # nothing passed: nothing to lose
    assert pass_curve([3, 3], [3, 3], k_max=2).k == (1, 2)


@pytest.mark.parametrize(("n", "c", "k", "message"), [
    ([2, 2], [1], 1, r"n and c must have the same shape, got \(2,\) and \(1,\)"),
    ([2.5], [1], 1, "n must hold whole numbers of attempts"),
    ([2], [0.5], 1, "c must hold whole numbers of attempts"),
    ([2], [1], 0, "k must be a positive integer, got 0"),
    ([2], [1], True, "k must be a positive integer, got True"),
    ([2], [1], 1.0, "k must be a positive integer, got 1.0"),
    ([2], [3], 1, "need 0 <= c <= n for every task"),
    ([2], [-1], 1, "need 0 <= c <= n for every task"),
    ([3, 1, 2], [0, 0, 0], 2, "a task has n=1 attempts, fewer than k=2: pass@k and pass\\^k "
                              "need at least k attempts per task"),
])
def test_bad_inputs_are_refused(n: list, c: list, k: int, message: str) -> None:
    for metric in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError, match=f"^{message}$"):
            metric(n, c, k)


def test_a_curve_of_no_task_is_refused() -> None:
    with pytest.raises(ValueError, match="^pass_curve needs at least one task$"):
        pass_curve([], [])


def test_the_refusal_names_a_task_with_too_few_attempts_not_one_with_exactly_k() -> None:
    with pytest.raises(ValueError, match="^a task has n=1 attempts, fewer than k=2"):
        pass_at_k([2, 3, 1], [0, 0, 0], 2)


def test_no_task_gives_no_values() -> None:
    for metric in (pass_at_k, pass_hat_k):
        assert metric([], [], 2).tolist() == []


def test_consistency_of_a_one_attempt_curve_and_of_a_vanishing_pass_hat_k() -> None:
    one = pass_curve([1, 1], [1, 0])
    assert (one.k, one.pass_hat_k, one.consistency) == ((1,), (0.5,), 1.0)
    # pass^1 = 1/4 but pass^2 = 0: nothing survives k attempts, consistency 0 (not 1)
    lost = pass_curve([2, 2], [1, 0])
    assert lost.pass_hat_k == (0.25, 0.0) and lost.consistency == 0.0
