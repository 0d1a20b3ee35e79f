"""The bootstrap's arithmetic against its documented formula on the same resamples: a
mean is Σw·x·m / Σw·m (the estimate where a resample drew no observed task), a ratio
Σw·num / Σw·den (infinite where the denominator is 0), with W the count matrix of
``count_matrix_sums`` on the same streams, stratified or not, with missing tasks in whole
strata or in part of one; every refusal by its message; the fields of an interval whose
resamples reach infinity; the paired t interval's degenerate cases."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fire_exp.stats import (
    Stratum,
    bootstrap_distributions,
    count_matrix_sums,
    paired_bootstrap,
    paired_t_interval,
    start_bootstrap_distributions,
)

B = 600


def _strata() -> list[Stratum]:
    return [Stratum(slice(0, 7), np.random.default_rng(1)),
            Stratum(slice(7, 16), np.random.default_rng(2))]


def _reference(columns: dict[str, np.ndarray], ratios: dict[str, tuple[np.ndarray, np.ndarray]],
               draw: dict) -> dict[str, np.ndarray]:
    """Each statistic's B resampled values from W @ [x·m, m] and W @ [num, den]."""
    out = {}
    for name, x in columns.items():
        m = ~np.isnan(x)
        sums = count_matrix_sums(np.column_stack([np.where(m, x, 0.0), m]),
                                 n_resamples=B, **draw())
        est = x[m].mean()
        with np.errstate(divide="ignore", invalid="ignore"):
            out[name] = np.where(sums[:, 1] == 0, est, sums[:, 0] / sums[:, 1])
    for name, (num, den) in ratios.items():
        sums = count_matrix_sums(np.column_stack([np.nan_to_num(num), np.nan_to_num(den)]),
                                 n_resamples=B, **draw())
        with np.errstate(divide="ignore", invalid="ignore"):
            out[name] = np.where(sums[:, 1] == 0, np.inf, sums[:, 0] / sums[:, 1])
    return out


@pytest.mark.parametrize("stratified", [False, True])
def test_every_statistic_is_its_formula_on_the_same_resamples(stratified: bool) -> None:
    gen = np.random.default_rng(7)
    x = gen.integers(0, 4, 16) / 3
    whole = x.copy()
    whole[:7] = np.nan  # missing on the whole first stratum
    part = x.copy()
    part[[0, 3, 9, 10, 15]] = np.nan  # missing on part of each
    sparse = np.full(16, np.nan)
    sparse[[2, 12]] = [0.25, 1.0]  # two observed tasks: many resamples draw neither
    num, den = gen.integers(0, 3, 16).astype(float), np.zeros(16)
    den[[3, 11]] = [2.0, 1.0]  # a cost on two tasks: a resample that draws neither is 0/0
    num[4], den[5] = np.nan, np.nan  # missing on one side: counted as 0
    columns = {"x": x, "whole": whole, "part": part, "sparse": sparse}
    ratios = {"r": (num, den)}

    def draw() -> dict:
        return {"strata": _strata()} if stratified else {"rng": np.random.default_rng(3)}

    dist = bootstrap_distributions(columns, ratios=ratios, n_resamples=B, **draw())
    assert dist.names == ("x", "whole", "part", "sparse", "r")
    reference = _reference(columns, ratios, draw)
    for name in dist.names:
        assert dist.of(name) == pytest.approx(reference[name], rel=1e-12, abs=1e-15), name
    assert dist.estimates == pytest.approx(
        (x.mean(), np.nanmean(whole), np.nanmean(part), 0.625,
         np.nansum(num) / np.nansum(den)), rel=1e-15)
    assert dist.n_tasks == (16, 9, 11, 2, 16)
    assert np.any(np.isinf(dist.of("r"))) and np.any(dist.of("sparse") == 0.625)


def test_a_ratio_counts_the_tasks_seen_in_either_part() -> None:
    num = np.array([1.0, np.nan, np.nan, 2.0])
    den = np.array([1.0, 3.0, np.nan, np.nan])
    dist = bootstrap_distributions({}, ratios={"r": (num, den)}, n_resamples=50,
                                   rng=np.random.default_rng(0))
    assert dist.n_tasks == (3,) and dist.estimates == (3 / 4,)


def test_drawing_in_a_child_gives_the_same_distributions() -> None:
    gen = np.random.default_rng(5)
    columns = {"a": gen.random(40), "b": np.where(gen.random(40) < 0.3, np.nan, 1.0)}
    here = start_bootstrap_distributions(columns, n_resamples=B, rng=np.random.default_rng(4),
                                         background=False).result()
    child = start_bootstrap_distributions(columns, n_resamples=B,
                                          rng=np.random.default_rng(4), background=True)
    first = child.result()
    assert child.result() is first  # waited for once
    assert np.array_equal(first.dists, here.dists) and first.names == here.names
    assert (first.estimates, first.n_tasks) == (here.estimates, here.n_tasks)


# --- refusals -------------------------------------------------------------------------

_SAME_TASKS = "every column must be a 1-d array over the same tasks"


@pytest.mark.parametrize(("columns", "ratios", "kwargs", "message"), [
    ({"a": [1.0], "b": [1.0, 2.0]}, {}, {}, _SAME_TASKS),
    ({"a": [[1.0, 2.0]], "b": [[1.0, 2.0]]}, {}, {}, _SAME_TASKS),
    ({"a": [1.0, 2.0]}, {"r": ([1.0, 2.0], [1.0])}, {}, _SAME_TASKS),
    ({}, {"r": ([1.0], [1.0, 2.0])}, {}, _SAME_TASKS),
    ({"a": []}, {}, {}, "the bootstrap needs at least one task"),
    ({"a": [1.0, 0.0], "gone": [np.nan, np.nan]}, {}, {}, "column 'gone' has no observed task"),
    ({"a": [1.0, 0.0]}, {}, {"n_resamples": 2.5},
     "n_resamples must be a positive integer, got 2.5"),
    ({"a": [1.0, 0.0]}, {}, {"n_resamples": 0}, "n_resamples must be a positive integer, got 0"),
])
def test_bootstrap_refusals_say_what_is_wrong(columns: dict, ratios: dict, kwargs: dict,
                                              message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        paired_bootstrap(columns, ratios=ratios, rng=np.random.default_rng(0), **kwargs)


def test_distributions_refuse_a_level_outside_zero_one() -> None:
    dist = bootstrap_distributions({"a": [0.1, 0.2]}, n_resamples=5,
                                   rng=np.random.default_rng(0))
    for level in (0.0, 1.0):
        with pytest.raises(ValueError, match=r"^confidence_level must be in \(0, 1\), got "):
            dist.intervals(level)


# --- intervals whose resamples reach infinity -----------------------------------------

def test_a_few_infinite_resamples_make_the_spread_infinite_not_the_interval() -> None:
    # task 2 has no cost and no success: a ratio resample that draws only it is infinite
    # (1/27 of resamples), above the 95th percentile; the standard deviation is infinite
    num, den = np.array([1.0, 2.0, 0.0]), np.array([2.0, 2.0, 0.0])
    iv = paired_bootstrap({}, ratios={"r": (num, den)}, n_resamples=400, confidence_level=0.9,
                          rng=np.random.default_rng(2))["r"]
    assert (iv.ci_high, iv.standard_error, iv.method) == (1.0, np.inf, "percentile")
    assert 0 < iv.ci_low < iv.estimate == 0.75
    assert iv.n_tasks == 3 and iv.n_resamples == 400 and iv.confidence_level == 0.9


def test_a_ratio_with_no_cost_anywhere_is_infinite_and_degenerate() -> None:
    iv = paired_bootstrap({}, ratios={"r": (np.array([1.0, 0.0]), np.zeros(2))},
                          n_resamples=200, rng=np.random.default_rng(2))["r"]
    assert (iv.estimate, iv.ci_low, iv.ci_high, iv.standard_error, iv.mc_error,
            iv.method) == (np.inf, np.inf, np.inf, np.inf, 0.0, "degenerate")


def test_an_interval_between_two_infinite_resamples_is_infinite_not_nan() -> None:
    # Most resamples draw only the cost-free task: the upper end interpolates between two
    # infinite resamples (inf - inf is NaN in numpy's arithmetic), which reads as infinite.
    num, den = np.array([1.0, 0.0]), np.array([1.0, 0.0])
    iv = paired_bootstrap({}, ratios={"r": (num, den)}, n_resamples=101,
                          rng=np.random.default_rng(0))["r"]
    assert iv.ci_high == np.inf and iv.ci_low == 1.0


def test_intervals_come_in_the_order_of_their_names() -> None:
    gen = np.random.default_rng(1)
    r = paired_bootstrap({"z": gen.random(9), "a": gen.random(9)},
                         ratios={"m": (gen.random(9), gen.random(9) + 1)}, n_resamples=50,
                         rng=np.random.default_rng(0))
    assert list(r) == ["z", "a", "m"]


# --- the paired t interval ------------------------------------------------------------

def test_the_t_interval_of_a_constant_difference_is_degenerate() -> None:
    t = paired_t_interval([0.25, 0.25, np.nan, 0.25])
    assert (t.estimate, t.ci_low, t.ci_high, t.standard_error, t.df, t.method) == (
        0.25, 0.25, 0.25, 0.0, 2, "degenerate")
    two = paired_t_interval([0.0, 1.0], 0.9)  # t(1) 0.95 quantile 6.3138, se 0.5
    assert (two.df, two.method) == (1, "paired-t")
    assert (two.ci_low, two.ci_high) == pytest.approx((0.5 - 6.313751514675 * 0.5,
                                                       0.5 + 6.313751514675 * 0.5), rel=1e-10)


# --- intervals of given resamples -----------------------------------------------------

@pytest.mark.parametrize("seed", range(12))
def test_an_interval_is_degenerate_only_when_every_resample_is_equal(seed: int) -> None:
    # Nearly every resample at its minimum, a few above it, in shuffled rows: the interval
    # ends are numpy's percentiles, the spread is numpy's standard deviation, and the
    # interval is a percentile one, however the rows are ordered.
    from fire_exp.stats.bootstrap import Distributions

    gen = np.random.default_rng(seed)
    b = int(gen.integers(50, 400))
    dists = np.zeros((b, 3))
    dists[gen.choice(b, 2, replace=False), 0] = 1.0  # the two largest somewhere
    dists[:, 1] = 0.25  # constant
    dists[:, 2] = gen.permutation(np.r_[np.zeros(b - 1), -1.0])  # one smallest somewhere
    intervals = Distributions(("few-high", "constant", "one-low"), dists, (0.0, 0.25, 0.0),
                              (5, 5, 5)).intervals(0.95)
    alpha = (1 - 0.95) / 2
    for j, (name, iv) in enumerate(intervals.items()):
        x = dists[:, j]
        assert (iv.ci_low, iv.ci_high) == tuple(np.percentile(x, [100 * alpha,
                                                                  100 * (1 - alpha)])), name
        assert iv.standard_error == pytest.approx(np.std(x), rel=1e-12, abs=0)
        assert iv.method == ("degenerate" if name == "constant" else "percentile"), name


def test_the_defaults_are_ten_thousand_resamples_and_a_95_percent_level() -> None:
    x = np.array([0.0, 0.5, 1.0, 1.0])
    dist = bootstrap_distributions({"x": x}, rng=np.random.default_rng(0))
    assert dist.dists.shape == (10_000, 1)
    iv = dist.intervals()["x"]
    assert (iv.confidence_level, iv.n_resamples) == (0.95, 10_000)
    assert paired_bootstrap({"x": x}, rng=np.random.default_rng(0))["x"] == iv
    started = start_bootstrap_distributions({"x": x}, rng=np.random.default_rng(0)).result()
    assert np.array_equal(started.dists, dist.dists)


@pytest.mark.parametrize(("b", "level"), [(5, 0.5), (3, 0.8), (2, 0.5)])
def test_the_endpoint_error_of_a_few_resamples_reads_the_band_clipped_to_them(
        b: int, level: float) -> None:
    from fire_exp.stats.bootstrap import Distributions

    x = np.arange(b, dtype=float)[::-1] ** 2  # distinct, in reverse order
    iv = Distributions(("x",), x[:, None], (0.0,), (3,)).intervals(level)["x"]
    z, alpha = 1.959963984540054, (1 - level) / 2
    half = z * np.sqrt(b * alpha * (1 - alpha))
    lo = int(max(0, np.floor(b * alpha - half)))
    hi = int(min(b - 1, np.ceil(b * alpha + half)))
    assert iv.mc_error == (np.sort(x)[hi] - np.sort(x)[lo]) / (2 * z)
