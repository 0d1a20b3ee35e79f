import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fire_exp.stats import sign_flip_test


def _scipy_exact(d):
    res = stats.permutation_test((d, np.zeros_like(d)),
                                 lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", n_resamples=np.inf,
                                 vectorized=True)
    return res.pvalue


@pytest.mark.parametrize("seed", range(4))
def test_exact_methods_match_scipy(seed):
    gen = np.random.default_rng(seed)
    lattice = gen.integers(-3, 4, 11) / 3
    continuous = gen.normal(0.3, 1.0, 11)
    r1, r2 = sign_flip_test(lattice), sign_flip_test(continuous)
    assert r1.method == "exact-lattice" and r2.method == "exact-enumeration"
    assert abs(r1.p_value - _scipy_exact(lattice)) < 1e-12
    assert abs(r2.p_value - _scipy_exact(continuous)) < 1e-12
    forced = sign_flip_test(lattice, lattice=False)
    assert forced.method == "exact-enumeration"
    assert abs(forced.p_value - r1.p_value) < 1e-12


def test_monte_carlo_within_error_of_exact_lattice():
    d = np.random.default_rng(5).integers(-2, 3, 60) / 2 + 0.5 * (np.arange(60) < 8)
    exact = sign_flip_test(d)
    mc = sign_flip_test(d, method="monte-carlo", rng=np.random.default_rng(1))
    assert exact.method == "exact-lattice" and mc.method == "monte-carlo"
    assert mc.n_resamples == 100_000
    assert abs(mc.p_value - exact.p_value) < 4 * mc.mc_se + 1e-9
    assert mc.mc_se == pytest.approx(np.sqrt(mc.p_value * (1 - mc.p_value) / 1e5))


def test_monte_carlo_p_never_zero():
    r = sign_flip_test(np.linspace(1, 2, 40), lattice=False, n_resamples=1000,
                       rng=np.random.default_rng(0))
    assert r.p_value == 1 / 1001


def test_published_fire_screens():
    # Table 9: 7 tasks x 3 attempts; every changed task moved up.
    sol = (np.array([1, 3, 3, 3, 3, 3, 3]) - np.array([0, 1, 0, 0, 0, 3, 3])) / 3
    luna = (np.array([3, 3, 3, 2, 2, 3, 3]) - np.array([0, 3, 2, 0, 0, 3, 3])) / 3
    assert sign_flip_test(sol).p_value == 0.0625
    assert sign_flip_test(luna).p_value == 0.125
    assert sign_flip_test(sol).min_attainable_p == 0.0625


def test_degenerate_all_zero():
    r = sign_flip_test(np.zeros(5))
    assert (r.p_value, r.method, r.n_nonzero) == (1.0, "degenerate", 0)


def test_zeros_never_change_p():
    d = np.array([0.5, 1.0, -0.5, 1.0])
    assert sign_flip_test(d).p_value == sign_flip_test(np.r_[d, 0, 0, 0]).p_value


def test_needs_rng_for_monte_carlo():
    with pytest.raises(ValueError, match="rng"):
        sign_flip_test(np.random.default_rng(0).normal(size=25))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=1, max_size=16))
def test_properties(ints):
    d = np.array(ints) / 4
    r = sign_flip_test(d)
    assert 0 < r.p_value <= 1 and np.isfinite(r.p_value)
    assert r.p_value >= r.min_attainable_p - 1e-15
    assert sign_flip_test(-d).p_value == pytest.approx(r.p_value, abs=1e-12)
    assert sign_flip_test(d[::-1]).p_value == pytest.approx(r.p_value, abs=1e-12)
    assert sign_flip_test(d, lattice=False).p_value == pytest.approx(r.p_value, abs=1e-12)


def test_fine_lattice_with_many_tasks_falls_back_to_monte_carlo():
    d = np.random.default_rng(0).integers(-1000, 1001, 1000) / 1000
    r = sign_flip_test(d, n_resamples=2000, rng=np.random.default_rng(1))
    assert r.method == "monte-carlo" and 0 < r.p_value <= 1
    coarse = sign_flip_test(np.round(d * 3) / 3)
    assert coarse.method == "exact-lattice"
