import numpy as np
import pytest

from fire_exp.stats import improvement_counts, interaction, transition_table


def _g(s):
    return np.random.default_rng(s)


def test_interaction_estimate_and_valid_p():
    a, b = np.array([1, 0.5, 0.5, 0, 1, 0.5]), np.array([0, 0, 0.5, 0, -0.5, 0, 0.5])
    r = interaction(a, b, n_resamples=2000, n_permutations=5000, rng_first=_g(0),
                    rng_second=_g(1), rng_permutation=_g(2))
    assert r.estimate == pytest.approx(a.mean() - b.mean())
    assert r.ci_low < r.estimate < r.ci_high
    assert 0 < r.p_value <= 1 and r.p_method == "exact-lattice"  # 13 tasks: exact


def test_interaction_permutation_matches_exact_enumeration():
    # p = P(|mean_1* - mean_2*| >= |observed|) over all relabellings of tasks to cohorts.
    from itertools import combinations
    a, b = np.array([1.0, 0.5, 0.5, 1.0]), np.array([0.0, 0.5, -0.5, 0.0, 0.5])
    pooled, obs = np.r_[a, b], a.mean() - b.mean()
    stats_ = [pooled[list(c)].mean() - np.delete(pooled, list(c)).mean()
              for c in combinations(range(9), 4)]
    exact = np.mean(np.abs(stats_) >= abs(obs) - 1e-12)
    r = interaction(a, b, n_resamples=100, n_permutations=100_000, rng_first=_g(0),
                    rng_second=_g(1), rng_permutation=_g(2))
    assert abs(r.p_value - exact) < 4 * r.mc_se + 1e-4


def test_interaction_generic_path_agrees_with_lattice_path():
    gen = _g(7)
    a, b = gen.integers(0, 3, 40) / 2, gen.integers(-1, 2, 45) / 2
    jitter = 1e-9 * np.arange(85)  # > 64 distinct values: the argpartition path
    kw = dict(n_resamples=10, n_permutations=20_000, rng_first=_g(0), rng_second=_g(1))
    r1 = interaction(a, b, rng_permutation=_g(2), **kw)
    r2 = interaction(a + jitter[:40], b + jitter[40:], rng_permutation=_g(3), **kw)
    assert abs(r1.p_value - r2.p_value) < 5 * np.hypot(r1.mc_se, r2.mc_se) + 1e-4


def test_interaction_degenerate():
    r = interaction([0.0, 0.0], [0.0], n_resamples=10, n_permutations=10, rng_first=_g(0),
                    rng_second=_g(1), rng_permutation=_g(2))
    assert (r.p_value, r.p_method, r.estimate) == (1.0, "degenerate", 0.0)


def test_improvement_and_transitions():
    assert improvement_counts([1, 1, 0.5], [0, 1, 1]).__dict__ == {
        "improved": 1, "regressed": 1, "tied": 1}
    t = transition_table([0, 1, 2, 0], [2, 1, 2, 0], 2)
    assert list(t.index) == ["0/2", "1/2", "2/2"] and t.to_numpy().sum() == 4
    assert t.loc["0/2", "2/2"] == 1 and t.loc["0/2", "0/2"] == 1
    with pytest.raises(ValueError):
        transition_table([3], [0], 2)
