"""The bootstrap's two rules a reader cannot see in a table: which order statistics an
interval reads (numpy's linear percentile of the resampled values, to the bit, at every B
including the smallest, where an off-by-one rank shows most), and what a resample that drew
no observed task of a column is worth (the estimate, for a mean; infinite, for a ratio
whose denominator it drew as zero)."""

from __future__ import annotations

import numpy as np
import pytest

from fire_exp.stats import bootstrap_distributions, paired_bootstrap


@pytest.mark.parametrize("b", [1, 2, 3, 19, 20, 21, 39, 40, 41, 199, 200, 201, 1000])
@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.99])
def test_an_interval_is_the_linear_percentile_of_its_own_resamples(b: int,
                                                                    level: float) -> None:
    gen = np.random.default_rng(b)
    columns = {"a": gen.random(13), "d": gen.random(13) - gen.random(13)}
    dist = bootstrap_distributions(columns, n_resamples=b, rng=np.random.default_rng(5))
    alpha = (1 - level) / 2  # as the code computes it (0.025000000000000022 at 0.95)
    for name, iv in dist.intervals(level).items():
        low, high = np.percentile(dist.of(name), [100 * alpha, 100 * (1 - alpha)])
        assert (iv.ci_low, iv.ci_high) == (low, high), (name, b, level)
        ranks = np.sort(dist.of(name))
        # The ends lie between the order statistics floor((B-1)q) and the next one.
        lo_rank = int(np.floor((b - 1) * alpha))
        assert ranks[lo_rank] <= iv.ci_low <= ranks[min(lo_rank + 1, b - 1)]


def test_paired_bootstrap_gives_the_percentiles_of_the_same_resamples() -> None:
    gen = np.random.default_rng(11)
    columns = {"d": np.round(gen.normal(size=14), 1)}  # ties: a coarse lattice, as in FIRE
    iv = paired_bootstrap(columns, n_resamples=999, rng=np.random.default_rng(2))["d"]
    dist = bootstrap_distributions(columns, n_resamples=999, rng=np.random.default_rng(2))
    alpha = (1 - 0.95) / 2
    assert (iv.ci_low, iv.ci_high) == tuple(np.percentile(dist.of("d"),
                                                          [100 * alpha, 100 * (1 - alpha)]))


def test_a_resample_without_an_observed_task_keeps_the_mean() -> None:
    # One observed task among eight: a resample either draws it (mean 0.7) or draws none
    # (about (7/8)^8 = 34 % of resamples), which keeps the estimate: every resample is 0.7
    # (to the last bits of the fixed-point sums), and the estimate's resamples exactly.
    column = np.array([0.7] + [np.nan] * 7)
    dist = bootstrap_distributions({"m": column}, n_resamples=2000,
                                   rng=np.random.default_rng(4))
    (estimate,) = dist.estimates
    values = dist.of("m")
    assert np.all(np.abs(values - 0.7) < 1e-12) and estimate == pytest.approx(0.7, abs=1e-12)
    none_drawn = (7 / 8) ** 8
    assert np.mean(values == estimate) >= none_drawn - 4.5 * np.sqrt(
        none_drawn * (1 - none_drawn) / 2000)
    iv = paired_bootstrap({"m": column}, n_resamples=2000, rng=np.random.default_rng(4))["m"]
    assert iv.n_tasks == 1 and iv.ci_low == pytest.approx(0.7, abs=1e-12) \
        and iv.ci_high == pytest.approx(0.7, abs=1e-12)


def test_a_mean_over_the_observed_tasks_of_each_resample() -> None:
    # Two observed tasks (0 and 1) among four: a resample's mean is over the observed tasks
    # it drew (ones / draws of either), or 0.5 (the estimate) when it drew none.
    column = np.array([0.0, 1.0, np.nan, np.nan])
    dist = bootstrap_distributions({"m": column}, n_resamples=4000,
                                   rng=np.random.default_rng(6)).of("m")
    possible = {round(ones / drawn, 12) for drawn in range(1, 5) for ones in range(drawn + 1)}
    assert set(np.round(np.unique(dist), 12)) == possible
    none_drawn = (2 / 4) ** 4  # no observed task in four draws
    assert np.mean(dist == 0.5) >= none_drawn - 4.5 * np.sqrt(none_drawn * (1 - none_drawn)
                                                                / 4000)


def test_a_ratio_resample_with_a_zero_denominator_is_infinite() -> None:
    num, den = np.array([1.0, 0.0]), np.array([2.0, 0.0])  # task 2: no success, no cost
    dist = bootstrap_distributions({}, ratios={"r": (num, den)}, n_resamples=4000,
                                   rng=np.random.default_rng(3))
    r = dist.of("r")
    p = 0.25  # both draws on task 2
    assert abs(np.mean(np.isinf(r)) - p) <= 4.5 * np.sqrt(p * (1 - p) / 4000)
    assert set(np.unique(r[np.isfinite(r)])) == {0.5}
    iv = dist.intervals(0.95)["r"]
    assert iv.ci_high == np.inf and iv.ci_low == 0.5 and iv.estimate == 0.5


@pytest.mark.parametrize(("b", "level"), [(200, 0.95), (999, 0.9), (1000, 0.8)])
def test_an_interval_reports_its_resamples_level_spread_and_endpoint_error(
        b: int, level: float) -> None:
    from scipy import stats

    gen = np.random.default_rng(b)
    dist = bootstrap_distributions({"d": gen.random(17)}, n_resamples=b,
                                   rng=np.random.default_rng(9))
    iv = dist.intervals(level)["d"]
    x = np.sort(dist.of("d"))
    z, alpha = stats.norm.ppf(0.975), (1 - level) / 2
    half = z * np.sqrt(b * alpha * (1 - alpha))
    lo_i, hi_i = int(max(0, np.floor(b * alpha - half))), int(min(b - 1, np.ceil(b * alpha
                                                                                + half)))
    assert (iv.n_resamples, iv.confidence_level, iv.method, iv.n_tasks) == \
        (b, level, "percentile", 17)
    assert iv.mc_error == pytest.approx((x[hi_i] - x[lo_i]) / (2 * z), rel=1e-12)
    assert iv.standard_error == pytest.approx(np.std(x), rel=1e-12)


def test_a_constant_column_is_degenerate_with_no_spread() -> None:
    iv = paired_bootstrap({"d": [0.5] * 6}, n_resamples=300, rng=np.random.default_rng(1))["d"]
    assert (iv.method, iv.ci_low, iv.ci_high, iv.standard_error, iv.mc_error) == \
        ("degenerate", 0.5, 0.5, 0.0, 0.0)


@pytest.mark.parametrize("level", [0.0, 1.0, -0.5, 1.5])
def test_a_level_outside_zero_one_is_refused(level: float) -> None:
    with pytest.raises(ValueError, match=r"^confidence_level must be in \(0, 1\), got "):
        paired_bootstrap({"d": [0.1, 0.2]}, n_resamples=10, confidence_level=level,
                         rng=np.random.default_rng(1))


@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_the_paired_t_interval_is_scipys(level: float) -> None:
    from scipy import stats

    from fire_exp.stats.bootstrap import paired_t_interval

    d = np.array([0.5, -0.5, 0.0, 1.0, 0.5, np.nan, 0.25])
    t = paired_t_interval(d, level)
    kept = d[~np.isnan(d)]
    low, high = stats.t.interval(level, kept.size - 1, loc=kept.mean(), scale=stats.sem(kept))
    assert (t.df, t.method) == (kept.size - 1, "paired-t")
    assert (t.estimate, t.ci_low, t.ci_high, t.standard_error) == pytest.approx(
        (kept.mean(), low, high, stats.sem(kept)), rel=1e-10)
    one = paired_t_interval([0.3, np.nan])
    assert (one.estimate, one.ci_low, one.ci_high, one.standard_error, one.df,
            one.method) == (0.3, 0.3, 0.3, 0.0, 0, "degenerate")
    with pytest.raises(ValueError, match="^paired_t_interval needs at least one task$"):
        paired_t_interval([np.nan])
