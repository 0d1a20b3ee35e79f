"""The sign-flip test's rules, each against an exact reference: every refusal by its
message, the lattice it detects (and the one it must not), the exact null and its p-table
against a loop over every sign vector (in Python integers, past int64 and through the FFT
convolution), ties that floats round, and the Monte Carlo p as (1 + hits) / (1 + B)."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction
from math import comb, lcm

import numpy as np
import pytest

from fire_exp.stats import sign_flip_test
from fire_exp.stats.permutation import (
    lattice_null,
    lattice_p_by_sum,
    lattice_resolution,
    min_attainable_p,
)


def _brute_p(d: np.ndarray) -> float:
    """P(|S*| >= |S|) over every sign vector of the non-zero differences (lattice 1/K read
    back from the floats, so 1/3 is a third), in exact fractions."""
    x = [Fraction(v).limit_denominator(10**6) for v in d if v != 0]
    den = lcm(*(v.denominator for v in x))
    ints = np.array([int(v * den) for v in x], dtype=np.int64)  # exact: the lattice's units
    signs = np.array(list(itertools.product((1, -1), repeat=len(x))), dtype=np.int64)
    hits = np.count_nonzero(np.abs(signs @ ints) >= abs(int(ints.sum())))
    return hits / 2 ** len(x)


def _null_counts(magnitudes: list[int]) -> list[int]:
    """Sign vectors by T = Σ|a_i|·b_i, convolved in Python integers (never overflow)."""
    counts = [1]
    for v in magnitudes:
        new = [0] * (len(counts) + v)
        for t, c in enumerate(counts):
            new[t] += c
            new[t + v] += c
        counts = new
    return counts


# --- refusals -------------------------------------------------------------------------

@pytest.mark.parametrize(("diffs", "kwargs", "message"), [
    ([[0.5, 1.0]], {}, "diffs must be a non-empty 1-d array of per-task differences"),
    ([], {}, "diffs must be a non-empty 1-d array of per-task differences"),
    ([0.5, np.nan], {}, "diffs must be finite (drop tasks missing from either arm first)"),
    ([0.5, -np.inf], {}, "diffs must be finite (drop tasks missing from either arm first)"),
    ([0.5, 1.0], {"n_resamples": 1.5}, "n_resamples must be a positive integer, got 1.5"),
    ([0.5, 1.0], {"n_resamples": 0}, "n_resamples must be a positive integer, got 0"),
    ([0.5, 1.0], {"method": "exact"}, "method must be 'auto' or 'monte-carlo', got 'exact'"),
    (np.sqrt(2) * np.arange(1, 22), {},
     "21 non-zero tasks off any lattice need the Monte Carlo method: pass rng="),
    ([0.5, 1.0], {"method": "monte-carlo"},
     "2 non-zero tasks off any lattice need the Monte Carlo method: pass rng="),
])
def test_sign_flip_refusals_say_what_is_wrong(diffs: list, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        sign_flip_test(diffs, **kwargs)


def test_an_exact_null_past_62_tasks_is_refused() -> None:
    with pytest.raises(ValueError, match="^counts of sign vectors of 63 tasks overflow int64$"):
        lattice_null([1, 2], [60, 3], exact=True)


# --- the lattice ----------------------------------------------------------------------

@pytest.mark.parametrize(("diffs", "k"), [
    ([0.5, -1.0, 0.0], 2), ([1 / 3, 0.5], 6), ([1 / 1000], 1000), ([1 / 1001], None),
    ([1 / 999, 1 / 1000], None),  # each fits; their common lattice 1/999000 does not
    ([0.5 + 1e-10], 2), ([0.5 + 1.5e-9], None),  # within 1e-9 of the lattice, or not
    ([1000.5 + 1e-7], 2),  # the tolerance is relative above 1
    ([np.sqrt(2)], None), ([3.0, -7.0], 1),
])
def test_the_lattice_is_the_smallest_common_denominator_up_to_a_thousand(
        diffs: list[float], k: int | None) -> None:
    assert lattice_resolution(diffs) == k


def test_a_finer_lattice_than_a_thousand_is_enumerated_to_the_same_p() -> None:
    d = np.array([1, 3, -2, 5, 4, -1, 2, 7]) / 1001
    coarse = np.array([1, 3, -2, 5, 4, -1, 2, 7]) / 1000
    fine, lattice = sign_flip_test(d), sign_flip_test(coarse)
    assert (fine.method, lattice.method) == ("exact-enumeration", "exact-lattice")
    assert fine.p_value == lattice.p_value == _brute_p(coarse)


def test_a_given_lattice_is_used_only_where_the_data_lie_on_it() -> None:
    d = np.array([0.5, 1.0, -0.5, 1.5, 1.0, 0.5])
    assert sign_flip_test(d, lattice=2).method == "exact-lattice"
    assert sign_flip_test(d, lattice=4).method == "exact-lattice"
    assert sign_flip_test(d, lattice=3).method == "exact-enumeration"  # 0.5 is not k/3
    for off in (False, None):
        assert sign_flip_test(d, lattice=off).method == "exact-enumeration"
    assert len({sign_flip_test(d, lattice=k).p_value for k in (2, 3, 4, False)}) == 1
    assert sign_flip_test(d).p_value == _brute_p(d)
    # within 1e-9 of a multiple of 1/K in units of 1/K, absolutely: 2e-9 or 1e-7 off is not
    for off in (2e-9, 1e-7):
        near = sign_flip_test(d + np.r_[off, np.zeros(5)], lattice=2)
        assert near.method == "exact-enumeration", off
    assert sign_flip_test(d + np.r_[2e-10, np.zeros(5)], lattice=2).method == "exact-lattice"


# --- every field of an exact result ---------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_an_exact_result_reports_its_statistic_tasks_and_no_monte_carlo(seed: int) -> None:
    gen = np.random.default_rng(seed)
    d = gen.integers(-3, 4, 13) / 3
    d[:2] = 0.0
    m = int(np.count_nonzero(d))
    for res, method in ((sign_flip_test(d), "exact-lattice"),
                        (sign_flip_test(d, lattice=False), "exact-enumeration")):
        assert (res.method, res.n_resamples, res.mc_se, res.n_tasks, res.n_nonzero) == (
            method, 0, 0.0, 13, m)
        assert res.statistic == d.mean() and res.min_attainable_p == 2.0 ** (1 - m)
        assert res.p_value == pytest.approx(_brute_p(d), abs=1e-12)


def test_enumeration_is_bounded_by_max_enumeration() -> None:
    d = np.sqrt(2) * np.r_[np.arange(1, 10), -np.arange(1, 4)]  # 12 tasks off a lattice
    assert sign_flip_test(d, max_enumeration=12).method == "exact-enumeration"
    res = sign_flip_test(d, max_enumeration=11, n_resamples=20_000,
                         rng=np.random.default_rng(0))
    assert res.method == "monte-carlo"
    exact = sign_flip_test(d).p_value
    assert abs(res.p_value - exact) < 4.5 * np.sqrt(exact * (1 - exact) / 20_000)


@pytest.mark.parametrize("m", [0, 1, 2, 5, 62, 1074, 1075, 1076, 5000])
def test_the_smallest_attainable_p_is_two_over_two_to_the_m(m: int) -> None:
    exact = min(Fraction(1), Fraction(2, 2**m))
    assert min_attainable_p(m) == float(exact)
    assert min_attainable_p(np.array([m, 3])).tolist() == [float(exact), 0.25]


# --- ties in floats -------------------------------------------------------------------

@pytest.mark.parametrize("scale", [np.sqrt(2) / 10, 1000 * np.sqrt(2), 3 / 2048])
@pytest.mark.parametrize("seed", range(3))
def test_an_enumerated_p_counts_ties_as_the_integer_lattice_does(scale: float,
                                                                 seed: int) -> None:
    k = np.random.default_rng(seed).integers(-3, 4, 14)
    k[k == 0] = 1
    on, off = sign_flip_test(k.astype(float)), sign_flip_test(k * scale)
    assert (on.method, off.method) == ("exact-lattice", "exact-enumeration")
    assert off.p_value == on.p_value == _brute_p(k.astype(float))
    mc = sign_flip_test(k * scale, method="monte-carlo", n_resamples=20_000,
                        rng=np.random.default_rng(seed))
    assert abs(mc.p_value - on.p_value) < 4.5 * np.sqrt(on.p_value * (1 - on.p_value) / 20_000
                                                        ) + 1e-4
    if on.p_value == 1:  # seed 2: S = 0 exactly, 4e-18 in floats; every draw ties or beats it
        assert mc.p_value == 1.0


def test_a_sum_of_exactly_zero_has_p_one_off_a_lattice() -> None:
    d = np.array([1, 3, -5, 7, -6]) / 2048  # exact in floats, S = 0
    assert sign_flip_test(d).p_value == 1.0
    mc = sign_flip_test(d, method="monte-carlo", n_resamples=500, rng=np.random.default_rng(1))
    assert (mc.method, mc.p_value, mc.mc_se) == ("monte-carlo", 1.0, 0.0)


# --- the exact null and its p table ---------------------------------------------------

@pytest.mark.parametrize("mags", [[1], [1, 1, 1], [1, 2, 2, 3], [2, 2, 5, 7, 7, 7]])
def test_the_null_counts_every_sign_vector(mags: list[int]) -> None:
    values, counts = np.unique(mags, return_counts=True)
    exact = lattice_null(values.tolist(), counts.tolist())
    assert exact.dtype == np.int64 and exact.tolist() == _null_counts(mags)
    floats = lattice_null(values.tolist(), counts.tolist(), exact=False)
    assert floats.dtype == np.float64
    assert floats.tolist() == pytest.approx([c / 2 ** len(mags) for c in _null_counts(mags)],
                                            rel=1e-12)
    # a shared prefix: the null of the smaller magnitudes, continued
    start = lattice_null(values[:1].tolist(), counts[:1].tolist())
    assert lattice_null(values[1:].tolist(), counts[1:].tolist(),
                        start=start).tolist() == exact.tolist()
    table = lattice_p_by_sum(exact, len(mags))
    assert lattice_p_by_sum(floats, len(mags)) == pytest.approx(table, rel=1e-12)
    total = sum(mags)
    for s in range(total + 1):
        tail = sum(c for t, c in enumerate(_null_counts(mags)) if abs(2 * t - total) >= s)
        assert table[s] == min(1.0, tail / 2 ** len(mags)), s


def test_past_62_tasks_the_null_is_a_probability_in_floats() -> None:
    mags = [1] * 40 + [2] * 23  # 63 tasks
    null = lattice_null([1, 2], [40, 23])
    assert null.dtype == np.float64
    assert null.tolist() == pytest.approx([c / 2**63 for c in _null_counts(mags)],
                                          rel=1e-9, abs=1e-300)
    assert lattice_null([1, 2], [40, 22]).dtype == np.int64  # 62: counted exactly


def test_a_long_null_convolved_by_fft_matches_integer_counts() -> None:
    # 2,048 tasks of magnitude 1, then 64 of magnitude 32: the second convolution multiplies
    # 2,049 by 2,049 entries (past 4 million: by FFT) into 4,097 = 2^12 + 1, the length
    # where a transform one power of two short would wrap its last entry around.
    null = lattice_null([1, 32], [2048, 64])
    ones = [comb(2048, j) for j in range(2049)]
    counts = [0] * 4097
    for i in range(65):
        for j, c in enumerate(ones):
            counts[32 * i + j] += comb(64, i) * c
    exact = np.array([c / 2**2112 for c in counts])  # int / int: correctly rounded
    assert null.size == 4097 and null.min() >= 0.0  # FFT noise below 0 is clipped
    assert np.max(np.abs(null - exact)) < 1e-14


def test_enumeration_over_several_blocks_counts_every_block() -> None:
    # 20 tasks: 2^10 left half sums, compared with the right half 256 rows at a time
    k = np.random.default_rng(3).integers(1, 4, 20) * np.where(np.arange(20) % 3, 1, -1)
    off = sign_flip_test(k * np.sqrt(2) / 10)
    assert off.method == "exact-enumeration"
    assert off.p_value == sign_flip_test(k.astype(float)).p_value


# --- Monte Carlo: p = (1 + hits) / (1 + B) --------------------------------------------

@pytest.mark.parametrize(("d", "n_resamples"), [
    (np.sqrt(2) * np.arange(1, 71), 999),  # 70 tasks: 9 bytes over 2 words, off a lattice
    (np.arange(1, 71) / 2, 999),  # on a lattice, summed in integers
    (np.sqrt(2) * np.arange(1, 71), 30_000),  # more draws than one chunk holds
])
def test_a_sum_no_sign_vector_beats_has_the_smallest_monte_carlo_p(d: np.ndarray,
                                                                   n_resamples: int) -> None:
    # every difference positive: only the observed signs (or all flipped) are as extreme,
    # with probability 2 / 2^70, so no draw hits
    res = sign_flip_test(d, method="monte-carlo", n_resamples=n_resamples,
                         rng=np.random.default_rng(2))
    p = 1 / (1 + n_resamples)
    assert (res.method, res.p_value, res.n_resamples) == ("monte-carlo", p, n_resamples)
    assert res.mc_se == np.sqrt(p * (1 - p) / n_resamples)
    assert (res.n_tasks, res.n_nonzero, res.statistic) == (70, 70, d.mean())


@pytest.mark.parametrize("m", [7, 8, 9, 63, 64, 65, 130])
def test_monte_carlo_agrees_with_the_exact_null_at_every_byte_and_word_boundary(m: int) -> None:
    gen = np.random.default_rng(m)
    d = gen.choice([-2, -1, 1, 2, 3], m) / 2
    d[-1] = 3.0  # the last task (a padded byte's) weighs most
    exact = sign_flip_test(d).p_value
    for lattice in (True, False):  # summed in integers, or in floats
        res = sign_flip_test(d, method="monte-carlo", lattice=lattice, n_resamples=4000,
                             rng=np.random.default_rng(m))
        assert abs(res.p_value - exact) < 4.5 * np.sqrt(exact * (1 - exact) / 4000) + 1e-9, (
            m, lattice)


def test_a_float_null_whose_mass_rounds_above_one_still_gives_p_at_most_one() -> None:
    # 2,001 tasks of magnitude 1: the Binomial(2001, 1/2) in log space sums to 1 + 2e-12;
    # S = ±1 is the least extreme sum, so every sign vector counts and p is exactly 1
    null = lattice_null([1], [2001])
    assert null.sum() > 1.0  # the case this test is about
    assert lattice_p_by_sum(null, 2001)[:2].tolist() == [1.0, 1.0]
    d = np.r_[np.ones(1001), -np.ones(1000)]
    assert sign_flip_test(d).p_value == 1.0


def test_one_monte_carlo_draw_is_allowed_and_counted() -> None:
    d = np.sqrt(2) * np.arange(1, 30)  # off a lattice, every sign positive: no draw hits
    res = sign_flip_test(d, method="monte-carlo", n_resamples=1, rng=np.random.default_rng(0))
    assert (res.p_value, res.n_resamples) == (0.5, 1)


def test_a_null_of_mismatched_magnitudes_and_counts_is_refused() -> None:
    with pytest.raises(ValueError, match="zip"):
        lattice_null([1, 2], [3])
    with pytest.raises(ValueError, match="zip"):
        lattice_null([1], [3, 1], exact=False)
