import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fire_exp.stats import (
    Stratum,
    bootstrap_distributions,
    count_matrix_sums,
    paired_bootstrap,
    paired_t_interval,
)


def test_matches_scipy_percentile_paired_within_mc_error():
    gen = np.random.default_rng(11)
    x, y = gen.normal(0.6, 0.3, 40), gen.normal(0.5, 0.3, 40)
    ours = paired_bootstrap({"d": x - y}, n_resamples=10_000, rng=np.random.default_rng(1))["d"]
    ref = stats.bootstrap((x, y), lambda a, b, axis: np.mean(a - b, axis=axis), paired=True,
                          vectorized=True, method="percentile", n_resamples=10_000,
                          rng=np.random.default_rng(2))
    tol = 5 * np.hypot(ours.mc_error, ours.mc_error) + 1e-3
    assert ours.estimate == pytest.approx(np.mean(x - y), abs=1e-15)
    assert abs(ours.ci_low - ref.confidence_interval.low) < tol
    assert abs(ours.ci_high - ref.confidence_interval.high) < tol
    assert ours.standard_error == pytest.approx(ref.standard_error, rel=0.05)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 700), st.integers(1, 25))
def test_chunk_size_does_not_change_output(chunk, t):
    x = np.random.default_rng(t).random((t, 3))
    a = count_matrix_sums(x, n_resamples=701, rng=np.random.default_rng(5), chunk_size=chunk)
    b = count_matrix_sums(x, n_resamples=701, rng=np.random.default_rng(5))
    assert np.array_equal(a, b)


@pytest.mark.parametrize("t", [1, 7, 40])
def test_counts_row_by_row_equal_counts_per_chunk(t):
    from fire_exp.stats.resample import _draw_sums

    x = np.rint(np.random.default_rng(t).random((t, 3)) * 2**20)
    sums = []
    for row_counts in (1, 10**9):  # every size row by row; never
        out = np.zeros((301, 3))
        _draw_sums(x, out, rng=np.random.default_rng(5), chunk_size=64, row_counts=row_counts)
        sums.append(out)
    assert np.array_equal(sums[0], sums[1])
    assert np.all(sums[0].sum(axis=1) > 0)


def test_columns_share_resamples_and_adding_a_column_changes_nothing():
    gen = np.random.default_rng(3)
    cols = {"a": gen.random(20), "b": gen.random(20)}
    one = paired_bootstrap(cols, n_resamples=2000, rng=np.random.default_rng(9))
    more = paired_bootstrap({**cols, "c": gen.random(20)}, n_resamples=2000,
                            rng=np.random.default_rng(9))
    assert one["a"] == more["a"] and one["b"] == more["b"]


def test_a_column_asked_for_twice_is_resampled_once_with_the_same_interval():
    x = np.random.default_rng(4).random(30)
    one = paired_bootstrap({"a": x}, n_resamples=2000, rng=np.random.default_rng(9))
    twice = paired_bootstrap({"a": x, "again": x.copy(), "b": 1 - x}, n_resamples=2000,
                             rng=np.random.default_rng(9))
    assert one["a"] == twice["a"]
    assert twice["again"] == twice["a"]
    assert twice["b"].estimate == pytest.approx(1 - twice["a"].estimate)


def test_ratio_metric_is_ratio_of_sums():
    num, den = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 2.0])
    r = paired_bootstrap({}, ratios={"cps": (num, den)}, n_resamples=500,
                         rng=np.random.default_rng(0))["cps"]
    assert r.estimate == pytest.approx(2.0)
    assert r.ci_low <= 2.0 <= r.ci_high


def test_missing_tasks_are_masked():
    r = paired_bootstrap({"d": [1.0, np.nan, 0.0]}, n_resamples=500,
                         rng=np.random.default_rng(0))["d"]
    assert r.estimate == 0.5 and r.n_tasks == 2
    assert np.isfinite(r.ci_low) and np.isfinite(r.ci_high)


def test_degenerate_inputs_give_flagged_finite_results():
    one = paired_bootstrap({"d": [0.5]}, n_resamples=100, rng=np.random.default_rng(0))["d"]
    assert (one.ci_low, one.ci_high, one.method) == (0.5, 0.5, "degenerate")
    zeros = paired_bootstrap({"d": np.zeros(9)}, n_resamples=100,
                             rng=np.random.default_rng(0))["d"]
    assert zeros.method == "degenerate" and zeros.ci_low == zeros.ci_high == 0.0
    t = paired_t_interval([0.25])
    assert (t.ci_low, t.ci_high, t.method) == (0.25, 0.25, "degenerate")


def test_invalid_inputs_raise():
    with pytest.raises(ValueError, match="same tasks"):
        paired_bootstrap({"a": [1.0], "b": [1.0, 2.0]}, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="no observed task"):
        paired_bootstrap({"a": [np.nan]}, rng=np.random.default_rng(0))


def test_paired_t_matches_scipy():
    d = np.random.default_rng(4).normal(0.1, 0.3, 12)
    ours = paired_t_interval(d)
    ref = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert ours.ci_low == pytest.approx(ref.low, abs=1e-12)
    assert ours.ci_high == pytest.approx(ref.high, abs=1e-12)


def test_strata_are_resampled_separately_each_from_its_own_stream():
    """A stratified resample is the sum of each block's resample, drawn from that block's
    stream: block sizes stay fixed, and each block's sums equal a bootstrap of it alone."""
    gen = np.random.default_rng(4)
    x = gen.random((30, 2))
    strata = [Stratum(slice(0, 12), np.random.default_rng(1)),
              Stratum(slice(12, 30), np.random.default_rng(2))]
    both = count_matrix_sums(x, n_resamples=300, strata=strata)
    first = count_matrix_sums(x[:12], n_resamples=300, rng=np.random.default_rng(1))
    second = count_matrix_sums(x[12:], n_resamples=300, rng=np.random.default_rng(2))
    np.testing.assert_allclose(both, first + second, rtol=1e-12)
    ones = count_matrix_sums(np.ones((30, 1)), n_resamples=50, strata=[
        Stratum(slice(0, 12), np.random.default_rng(1)),
        Stratum(slice(12, 30), np.random.default_rng(2))])
    assert set(ones.ravel()) == {30.0}
    with pytest.raises(ValueError, match="either rng or strata"):
        count_matrix_sums(x, n_resamples=10)


def test_a_column_on_one_stratum_equals_its_own_bootstrap():
    """A column observed on one whole stratum (NaN elsewhere) gets exactly the interval of a
    plain bootstrap of that stratum on the same stream: no mask column, no drift."""
    gen = np.random.default_rng(6)
    d = gen.integers(-2, 3, 25) / 2
    padded = np.concatenate([d, np.full(10, np.nan)])
    strata = [Stratum(slice(0, 25), np.random.default_rng(8)),
              Stratum(slice(25, 35), np.random.default_rng(9))]
    shared = paired_bootstrap({"d": padded}, n_resamples=2000, strata=strata)["d"]
    alone = paired_bootstrap({"d": d}, n_resamples=2000, rng=np.random.default_rng(8))["d"]
    assert (shared.ci_low, shared.ci_high, shared.estimate) == \
        (alone.ci_low, alone.ci_high, alone.estimate)
    assert shared.n_tasks == 25


def test_distributions_give_the_intervals_and_the_resampled_values():
    gen = np.random.default_rng(2)
    dist = bootstrap_distributions({"a": gen.random(15)}, n_resamples=400,
                                   rng=np.random.default_rng(3))
    iv = dist.intervals(0.9)["a"]
    assert iv.ci_low == pytest.approx(np.percentile(dist.of("a"), 5))
    assert iv.ci_high == pytest.approx(np.percentile(dist.of("a"), 95))


def test_blocks_drawn_in_parallel_threads_give_the_same_sums():
    """Cohort blocks are independent and their sums exact: threads change nothing."""
    from fire_exp.stats.resample import block_sums, fixed_point

    gen = np.random.default_rng(12)
    fixed, _ = fixed_point(gen.random((90, 4)))

    def blocks():
        return [Stratum(slice(0, 20), np.random.default_rng(1)),
                Stratum(slice(20, 50), np.random.default_rng(2)),
                Stratum(slice(50, 90), np.random.default_rng(3))]

    serial = block_sums(fixed, 777, blocks(), None, workers=1)
    threaded = block_sums(fixed, 777, blocks(), 13, workers=2)
    assert np.array_equal(serial, threaded) and serial.any()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 6), st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99]),
       st.integers(0, 2**32 - 1))
def test_percentiles_from_the_shared_partition_equal_numpys(b, j, level, seed):
    """The interval ends read off the one partition are np.percentile's, to the bit, with
    ties (a coarse lattice), infinite resamples and a NaN column."""
    from fire_exp.stats.bootstrap import _percentile_ranks, _percentiles

    gen = np.random.default_rng(seed)
    x = np.round(gen.normal(size=(b, j)), int(gen.integers(0, 4)))
    x[gen.random((b, j)) < 0.05] = np.inf
    if j > 1:
        x[gen.integers(b), 1] = np.nan
    alpha = (1 - level) / 2
    qs = np.array([100 * alpha, 100 * (1 - alpha)]) / 100
    part = np.partition(x, np.unique(np.concatenate([[0, b - 1], *_percentile_ranks(b, qs)])),
                        axis=0)
    with np.errstate(invalid="ignore"):
        ours = _percentiles(part, qs)
        ref = np.percentile(x, [100 * alpha, 100 * (1 - alpha)], axis=0)
    assert np.array_equal(ours, ref, equal_nan=True)
