"""The stratified McNemar test against brute force on every kind of weight (integers, a
small lattice, weights off any lattice, zeros), and its refusals, line by line."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pytest

from fire_exp.stats import mcnemar_exact, mcnemar_pooled, mcnemar_stratified


def brute(b: list[int], c: list[int], w: list[float]) -> float:
    """P(|S*| >= |S|) by enumerating every b*_s in 0..n_s (b*_s ~ Binomial(n_s, 1/2))."""
    n = [x + y for x, y in zip(b, c, strict=True)]
    stat = abs(sum(ws * (x - y) for ws, x, y in zip(w, b, c, strict=True)))
    p = 0.0
    for draw in itertools.product(*(range(ns + 1) for ns in n)):
        s = sum(ws * (2 * k - ns) for ws, k, ns in zip(w, draw, n, strict=True))
        if abs(s) >= stat - 1e-9 * max(1.0, stat):
            p += np.prod([comb(ns, k) / 2 ** ns for k, ns in zip(draw, n, strict=True)])
    return min(1.0, p)


@pytest.mark.parametrize("weights", [
    [1.0, 1.0, 1.0], [1.0, 2.0, 3.0], [1 / 7, 1 / 6, 1 / 3], [0.5, 0.25, 2.0],
    [np.pi, np.e, np.sqrt(2)], [0.0, 1.0, 2.5], [1e-4 * np.pi, 1.0, 3.0],
])
@pytest.mark.parametrize("seed", range(4))
def test_stratified_p_is_the_brute_force_p(weights: list[float], seed: int) -> None:
    gen = np.random.default_rng(seed)
    b, c = gen.integers(0, 5, 3).tolist(), gen.integers(0, 5, 3).tolist()
    res = mcnemar_stratified(b, c, weights)
    n_live = sum(1 for x, y, w in zip(b, c, weights, strict=True) if x + y and w)
    assert res.p_value == pytest.approx(brute(b, c, weights), abs=1e-12)
    assert res.method == ("exact-stratified" if n_live else "degenerate")
    assert (res.b, res.c, res.n_strata) == (sum(b), sum(c), 3)
    assert res.statistic == pytest.approx(sum(w * (x - y) for w, x, y in
                                              zip(weights, b, c, strict=True)))


def test_no_discordant_pair_with_weight_is_degenerate() -> None:
    res = mcnemar_stratified([0, 3], [0, 1], [1.0, 0.0])
    assert (res.p_value, res.method, res.b, res.c, res.statistic, res.n_strata) == \
        (1.0, "degenerate", 3, 1, 0.0, 2)


@pytest.mark.parametrize(("b", "c", "p"), [(5, 0, 0.0625), (0, 5, 0.0625), (3, 3, 1.0),
                                           (10, 2, 0.03857421875), (1, 0, 1.0)])
def test_the_exact_test_by_hand(b: int, c: int, p: float) -> None:
    res = mcnemar_exact(b, c)
    assert (res.b, res.c, res.statistic, res.method) == (b, c, float(b - c), "exact")
    assert res.p_value == pytest.approx(p, abs=1e-15)
    pooled = mcnemar_pooled([b, 0], [c, 0])
    assert (pooled.b, pooled.c, pooled.statistic, pooled.p_value, pooled.method,
            pooled.n_strata) == (b, c, float(b - c), res.p_value, "exact-pooled", 2)
    empty = mcnemar_pooled([0, 0], [0, 0])
    assert (empty.p_value, empty.method, empty.n_strata) == (1.0, "degenerate", 2)


@pytest.mark.parametrize(("b", "c", "message"), [
    ([1, 2], [1], "b and c must be non-empty 1-d counts of the same length"),
    ([], [], "b and c must be non-empty 1-d counts of the same length"),
    ([[1]], [[1]], "b and c must be non-empty 1-d counts of the same length"),
    ([-1], [1], "b must hold non-negative whole counts"),
    ([1.5], [1], "b must hold non-negative whole counts"),
    ([1], [-2], "c must hold non-negative whole counts"),
    ([1], [0.5], "c must hold non-negative whole counts"),
])
def test_bad_counts_are_refused(b: list, c: list, message: str) -> None:
    for call in (lambda: mcnemar_pooled(b, c), lambda: mcnemar_stratified(b, c, [1.0] * len(b))):
        with pytest.raises(ValueError, match=f"^{message}$"):
            call()


@pytest.mark.parametrize("weights", [[1.0], [1.0, -1.0], [1.0, np.nan], [np.inf, 1.0]])
def test_bad_weights_are_refused(weights: list[float]) -> None:
    with pytest.raises(ValueError, match="^weights must be finite, non-negative, one per "
                                         "stratum$"):
        mcnemar_stratified([1, 2], [0, 1], weights)


@pytest.mark.parametrize("weights", [[1.0, 2.0, 1.0], [1 / 3, 0.5, 1.0],
                                     [np.pi, np.e, np.sqrt(2)]])
@pytest.mark.parametrize(("b", "c"), [([1, 3, 0], [0, 0, 1]), ([1, 1, 2], [0, 0, 0]),
                                      ([0, 4, 1], [1, 0, 0])])
def test_strata_of_one_discordant_pair_count_in_the_null(weights: list[float], b: list[int],
                                                         c: list[int]) -> None:
    """A stratum with one discordant pair adds +-w with probability 1/2 each (on the integer
    lattice and off it): leaving it out of the null changes p."""
    assert mcnemar_stratified(b, c, weights).p_value == pytest.approx(brute(b, c, weights),
                                                                      abs=1e-12)


def test_one_discordant_pair_is_a_test_not_a_degenerate_case() -> None:
    res = mcnemar_stratified([1], [0], [1.0])
    assert (res.p_value, res.method) == (1.0, "exact-stratified")
    res = mcnemar_stratified([1, 0], [0, 0], [np.pi, 1.0])
    assert (res.p_value, res.method) == (1.0, "exact-stratified")


def test_a_null_with_too_many_distinct_values_is_refused_saying_what_to_do() -> None:
    """Weights off any lattice (square roots of primes) make every sum distinct: 21 strata
    of one pair each give 2^21 > 2,000,000 values."""
    primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73]
    with pytest.raises(ValueError, match=r"^the stratified null has too many distinct values; "
                                         r"use rational weights \(multiples of 1/L, "
                                         r"L <= 10,000\)$"):
        mcnemar_stratified([1] * 21, [0] * 21, np.sqrt(primes))
