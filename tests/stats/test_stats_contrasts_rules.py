"""The cohort interaction, improvement counts and transitions, checked against exact
references: every refusal by its message, the interval as the percentile of the cohorts'
own resamples, the permutation p of each path (exact lattice, enumeration, Monte Carlo on
a lattice, off it with few values, off it with many) against an exact count, and the
bounds that choose between the paths, at the bound."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from fire_exp.stats import (
    count_matrix_sums,
    improvement_counts,
    interaction,
    transition_counts,
    transition_labels,
    transition_table,
)
from fire_exp.stats.contrasts import _lattice_sum_counts


def _rngs(seed: int = 0) -> dict[str, np.random.Generator]:
    return {f"rng_{n}": np.random.default_rng(seed + i)
            for i, n in enumerate(("first", "second", "permutation"))}


def _brute_p(a: np.ndarray, b: np.ndarray) -> float:
    """P(|Δ*| >= |Δ|) over every split of the pooled tasks, in exact fractions (of the
    lattice the floats stand for: 1/3, not its binary rounding)."""
    pooled = [Fraction(x).limit_denominator(10**6) for x in np.concatenate([a, b])]
    n1, n2 = a.size, b.size
    total = sum(pooled)

    def delta(first: list[Fraction]) -> Fraction:
        s = sum(first)
        return abs(s / n1 - (total - s) / n2)

    obs = delta(pooled[:n1])
    splits = list(itertools.combinations(range(n1 + n2), n1))
    hits = sum(delta([pooled[i] for i in c]) >= obs for c in splits)
    return hits / len(splits)


def _hypergeometric_p(n_all: int, ones: int, n_first: int, ones_first: int) -> float:
    """The exact p of 0/1 differences: the first cohort's count of ones is hypergeometric."""
    obs = abs(ones_first * n_all - ones * n_first)
    tail = sum(comb(ones, s) * comb(n_all - ones, n_first - s)
               for s in range(max(0, n_first - (n_all - ones)), min(ones, n_first) + 1)
               if abs(s * n_all - ones * n_first) >= obs)
    return float(Fraction(tail, comb(n_all, n_first)))


def _split(n_all: int, ones: int, n_first: int, ones_first: int) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    a = np.r_[np.ones(ones_first), np.zeros(n_first - ones_first)]
    b = np.r_[np.ones(ones - ones_first), np.zeros(n_all - n_first - ones + ones_first)]
    return a, b


# --- refusals -------------------------------------------------------------------------

_ONE_TASK = "each cohort needs at least one task"


@pytest.mark.parametrize(("first", "second", "message"), [
    ([[0.5, 1.0]], [0.5], _ONE_TASK),
    ([0.5], [[0.5, 1.0]], _ONE_TASK),
    ([], [0.5, 1.0], _ONE_TASK),
    ([0.5, 1.0], [], _ONE_TASK),
    ([0.5, np.nan], [0.5, 1.0], "differences must be finite"),
    ([0.5, 1.0], [np.inf, 1.0], "differences must be finite"),
])
def test_interaction_refuses_an_empty_or_non_finite_cohort(first: list, second: list,
                                                           message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        interaction(first, second, n_resamples=10, **_rngs())


def test_interaction_needs_both_bootstrap_streams_or_the_shared_resamples() -> None:
    message = "^give rng_first and rng_second, or resampled$"
    g = np.random.default_rng
    with pytest.raises(ValueError, match=message):
        interaction([0.5, 1.0], [0.0, 0.5], rng_first=g(0), rng_permutation=g(2))
    with pytest.raises(ValueError, match=message):
        interaction([0.5, 1.0], [0.0, 0.5], rng_second=g(1), rng_permutation=g(2))
    for resampled in [(np.zeros(5), np.zeros(4)), (np.zeros((2, 3)), np.zeros((2, 3)))]:
        with pytest.raises(ValueError,
                           match=r"^resampled: two 1-d arrays of the same length$"):
            interaction([0.5, 1.0], [0.0, 0.5], resampled=resampled, rng_permutation=g(2))


# --- the interval ---------------------------------------------------------------------

@pytest.mark.parametrize("level", [0.8, 0.95])
def test_the_interval_is_the_percentile_of_the_cohorts_own_resampled_means(
        level: float) -> None:
    gen = np.random.default_rng(3)
    a, b = gen.integers(-2, 3, 9) / 2, gen.integers(-2, 3, 7) / 2
    res = interaction(a, b, n_resamples=777, confidence_level=level, **_rngs(5))
    # each cohort resampled alone, from its own stream
    dist = (count_matrix_sums(a[:, None], n_resamples=777, rng=np.random.default_rng(5))[:, 0]
            / 9 - count_matrix_sums(b[:, None], n_resamples=777,
                                    rng=np.random.default_rng(6))[:, 0] / 7)
    alpha = (1 - level) / 2
    low, high = np.percentile(dist, [100 * alpha, 100 * (1 - alpha)])
    assert (res.ci_low, res.ci_high) == (low, high)
    assert res.estimate == a.mean() - b.mean()
    assert (res.n_resamples, res.n_first, res.n_second) == (777, 9, 7)


def test_shared_resamples_give_the_interval_of_their_difference() -> None:
    gen = np.random.default_rng(8)
    first, second = gen.normal(0.3, 0.1, 501), gen.normal(0.1, 0.1, 501)
    res = interaction([1.0, 0.5, 0.5], [0.0, 0.5], resampled=(first, second),
                      confidence_level=0.9, rng_permutation=np.random.default_rng(0))
    alpha = (1 - 0.9) / 2  # as the code computes it (0.04999999999999999)
    assert (res.ci_low, res.ci_high) == tuple(np.percentile(first - second,
                                                            [100 * alpha, 100 * (1 - alpha)]))
    assert res.n_resamples == 501 and res.estimate == pytest.approx(2 / 3 - 1 / 4, abs=1e-15)


def test_the_defaults_are_ten_thousand_resamples_and_a_hundred_thousand_permutations() -> None:
    a, b = _split(1001, 400, 100, 50)  # 1,001 tasks: Monte Carlo
    res = interaction(a, b, **_rngs(1))
    assert (res.n_resamples, res.n_permutations, res.p_method) == (10_000, 100_000,
                                                                  "monte-carlo")


# --- degenerate and exact paths: every field ------------------------------------------

def test_no_variation_is_degenerate_with_p_one() -> None:
    res = interaction([0.5, 0.5, 0.5], [0.5, 0.5], n_resamples=50, **_rngs())
    assert (res.estimate, res.ci_low, res.ci_high, res.p_value, res.p_method, res.n_resamples,
            res.n_permutations, res.mc_se, res.n_first, res.n_second) == (
        0.0, 0.0, 0.0, 1.0, "degenerate", 50, 0, 0.0, 3, 2)


@pytest.mark.parametrize("seed", range(4))
def test_the_exact_lattice_p_is_the_count_over_every_split(seed: int) -> None:
    gen = np.random.default_rng(seed)
    a, b = gen.integers(-3, 4, 6) / 3, gen.integers(-3, 2, 5) / 3  # negative minimum
    res = interaction(a, b, n_resamples=20, **_rngs(seed))
    assert (res.p_method, res.n_permutations, res.mc_se, res.n_first, res.n_second) == (
        "exact-lattice", 0, 0.0, 6, 5)
    assert res.p_value == pytest.approx(_brute_p(a, b), abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_the_lattice_table_counts_every_subset_by_its_sum(seed: int) -> None:
    gen = np.random.default_rng(seed)
    values = gen.integers(-4, 5, 11)  # repeated values, more copies than the subset size
    for n_first in (1, 3, 6):
        counts = _lattice_sum_counts(values, n_first)
        assert counts is not None
        brute = np.zeros(counts.size)
        for c in itertools.combinations(range(values.size), n_first):
            brute[values[list(c)].sum() - n_first * values.min()] += 1
        assert np.array_equal(counts, brute), (seed, n_first)


@pytest.mark.parametrize(("scale", "ties"), [
    (np.sqrt(2) / 10, "rounded"),  # ties of Δ* with Δ differ in the last bits
    (1000 * np.sqrt(2), "rounded"),  # large sums: the tolerance is relative
    (3 / 2048, "exact"),  # dyadic: ties are exact in floats, so >= is not >
])
@pytest.mark.parametrize("seed", range(3))
def test_an_enumerated_p_counts_ties_as_the_integer_lattice_does(scale: float, ties: str,
                                                                 seed: int) -> None:
    gen = np.random.default_rng(seed)
    ka, kb = gen.integers(-3, 4, 6), gen.integers(-3, 4, 6)
    on_lattice = interaction(ka, kb, n_resamples=10, **_rngs())
    off = interaction(ka * scale, kb * scale, n_resamples=10, **_rngs())
    assert (on_lattice.p_method, off.p_method) == ("exact-lattice", "exact-enumeration")
    assert off.p_value == on_lattice.p_value == pytest.approx(
        _brute_p(ka.astype(float), kb.astype(float)), abs=1e-12)


def test_an_observed_difference_of_exactly_zero_has_p_one() -> None:
    a = np.array([1, 3, 5, 7]) / 2048  # off any 1/1000 lattice, exact in floats
    b = np.array([7, 5, 3, 1, 4]) / 2048
    res = interaction(a, b, n_resamples=10, **_rngs())
    assert (res.p_method, res.p_value) == ("exact-enumeration", 1.0)
    # Δ = 0 in exact arithmetic, -7e-18 in floats: every relabelling still ties or beats
    # it (a tolerance relative to |Δ| instead of to the terms gave p = 0.94)
    k = np.array([0, -2, 2, -3, -2, -2, 0, -1, -2, -3, 1, -2]) * np.sqrt(2) / 10
    res = interaction(k[:6], k[6:], n_resamples=10, **_rngs())
    assert res.estimate != 0 and (res.p_method, res.p_value) == ("exact-enumeration", 1.0)


# --- the bounds between the paths, at the bound ---------------------------------------

def test_the_lattice_count_is_used_up_to_its_work_bound_and_no_further() -> None:
    # 0/1 values, 498 tasks, 199 in the first cohort: (498 + 2) * 200 * 200 = 20,000,000
    # cell updates, the bound itself: exact.
    a, b = _split(498, 250, 199, 110)
    at_bound = interaction(a, b, n_resamples=10, n_permutations=100, **_rngs())
    assert at_bound.p_method == "exact-lattice"
    assert at_bound.p_value == pytest.approx(_hypergeometric_p(498, 250, 199, 110), rel=1e-9)
    # 5 tasks of 0 or 476,190 split 2 + 3: 7 * 3 * 952,381 = 20,000,001 updates, one past
    # the bound: enumerated instead (the same p).
    a, b = np.array([476_190.0, 0.0]), np.array([0.0, 476_190.0, 0.0])
    past = interaction(a, b, n_resamples=10, **_rngs())
    assert past.p_method == "exact-enumeration"
    assert past.p_value == pytest.approx(_brute_p(a, b), abs=1e-12)


def test_the_lattice_count_stops_past_a_thousand_tasks() -> None:
    a, b = _split(1000, 300, 100, 38)  # 1,000 tasks: exact
    res = interaction(a, b, n_resamples=10, n_permutations=100, **_rngs())
    assert res.p_method == "exact-lattice"
    assert res.p_value == pytest.approx(_hypergeometric_p(1000, 300, 100, 38), rel=1e-9)
    a, b = _split(1001, 300, 100, 38)  # 1,001: Monte Carlo, within its error of exact
    res = interaction(a, b, n_resamples=10, n_permutations=20_000, **_rngs(1))
    exact = _hypergeometric_p(1001, 300, 100, 38)
    assert (res.p_method, res.n_permutations) == ("monte-carlo", 20_000)
    assert abs(res.p_value - exact) < 4.5 * np.sqrt(exact * (1 - exact) / 20_000)
    assert res.mc_se == np.sqrt(res.p_value * (1 - res.p_value) / 20_000)


# --- Monte Carlo: p = (1 + hits) / (1 + B) on each sampler ----------------------------

def _many_distinct(n: int) -> np.ndarray:
    return np.sqrt(2) * np.arange(1, n + 1) / n  # off any lattice, every value distinct


@pytest.mark.parametrize(("pooled", "sampler"), [
    (np.r_[np.ones(30), np.zeros(971)], "lattice, few values"),  # > 1,000 tasks
    (np.r_[np.full(30, np.sqrt(2) / 10), np.zeros(30)], "off a lattice, few values"),
    (_many_distinct(70)[::-1], "off a lattice, many values"),
])
def test_a_split_no_relabelling_beats_has_the_smallest_monte_carlo_p(pooled: np.ndarray,
                                                                     sampler: str) -> None:
    # The first cohort holds the largest values: only it (or its mirror) is as extreme,
    # with probability 2 / C(N, n1) < 1e-17, so no draw hits and p = 1 / (1 + B).
    n1 = 30
    res = interaction(pooled[:n1], pooled[n1:], n_resamples=10, n_permutations=999,
                      **_rngs())
    assert (res.p_method, res.p_value, res.n_permutations) == ("monte-carlo", 1 / 1000, 999)
    assert res.mc_se == np.sqrt(0.001 * 0.999 / 999)


@pytest.mark.parametrize("scale", [1.0, np.sqrt(2) / 10])
def test_a_split_every_relabelling_ties_has_monte_carlo_p_one(scale: float) -> None:
    # 501 ones among 1,002 tasks split 501 + 501: |Δ*| = |2s − 501| · scale / 501 >= scale
    # / 501 for every relabelling, and the data sit at that least extreme value.
    a, b = _split(1002, 501, 501, 251)
    res = interaction(a * scale, b * scale, n_resamples=10, n_permutations=2000, **_rngs())
    assert (res.p_method, res.p_value, res.mc_se) == ("monte-carlo", 1.0, 0.0)


@pytest.mark.parametrize("n_permutations", [1, 7, 20_000])
def test_many_distinct_values_draw_random_splits_of_the_right_size(
        n_permutations: int) -> None:
    # 300 distinct values near two levels (0 or 1, plus a jitter < 1e-6): the p of the
    # split lies between the 0/1 lattice's strict and non-strict tails, to Monte Carlo error.
    gen = np.random.default_rng(2)
    ones = gen.random(300) < 0.4
    jitter = 1e-9 * gen.permutation(300)
    pooled = ones + jitter
    n1 = 120
    ones_first, total_ones = int(ones[:n1].sum()), int(ones.sum())
    res = interaction(pooled[:n1], pooled[n1:], n_resamples=10, n_permutations=n_permutations,
                      **_rngs(3))
    assert res.p_method == "monte-carlo" and res.n_permutations == n_permutations
    assert round(res.p_value * (1 + n_permutations)) == pytest.approx(
        res.p_value * (1 + n_permutations), abs=1e-9)  # (1 + hits) / (1 + B)
    if n_permutations < 20_000:
        return
    ge = _hypergeometric_p(300, total_ones, n1, ones_first)
    strict = sum(comb(total_ones, s) * comb(300 - total_ones, n1 - s)
                 for s in range(n1 + 1)
                 if abs(s * 300 - total_ones * n1) > abs(ones_first * 300 - total_ones * n1)
                 ) / comb(300, n1)
    se = np.sqrt(0.25 / n_permutations)
    assert strict - 4 * se <= res.p_value <= ge + 4 * se
    assert ge - strict > 8 * se  # the jitter's ties matter: a p of the wrong split fails


# --- improvement counts and transitions -----------------------------------------------

def test_improvement_counts_against_a_loop() -> None:
    gen = np.random.default_rng(4)
    x, y = gen.integers(0, 4, 50) / 3, gen.integers(0, 4, 50) / 3
    counts = improvement_counts(x, y)
    assert (counts.improved, counts.regressed, counts.tied) == (
        sum(u > v for u, v in zip(x, y, strict=True)),
        sum(u < v for u, v in zip(x, y, strict=True)),
        sum(u == v for u, v in zip(x, y, strict=True)))
    with pytest.raises(ValueError, match="^a and b must hold the same tasks$"):
        improvement_counts([1.0, 0.0], [1.0])


def test_transition_counts_against_a_loop() -> None:
    gen = np.random.default_rng(5)
    f, t = gen.integers(0, 4, 40), gen.integers(0, 4, 40)
    table = transition_counts(f, t, 3)
    loop = np.zeros((4, 4), dtype=np.int64)
    for i, j in zip(f, t, strict=True):
        loop[i, j] += 1
    assert table.dtype == np.int64 and np.array_equal(table, loop)
    assert transition_labels(3) == ["0/3", "1/3", "2/3", "3/3"]
    frame = transition_table(f, t, 3)
    assert (frame.index.name, frame.columns.name) == ("from", "to")
    assert list(frame.index) == list(frame.columns) == transition_labels(3)
    assert np.array_equal(frame.to_numpy(), loop)


@pytest.mark.parametrize(("f", "t"), [
    ([0, 1], [0]), ([-1, 1], [0, 1]), ([0, 1], [0, -1]), ([3, 1], [0, 1]), ([0, 1], [0, 3]),
])
def test_transition_counts_refuse_anything_but_paired_counts_in_range(f: list[int],
                                                                      t: list[int]) -> None:
    with pytest.raises(ValueError, match=r"^successes must be paired counts in 0\.\.2$"):
        transition_counts(f, t, 2)
