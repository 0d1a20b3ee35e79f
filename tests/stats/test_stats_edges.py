"""Statistics at the edges: thousands of tasks, ties on fine lattices, fractional weights,
and the interaction's exact permutation p (checked by brute force and scipy)."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy import stats

from fire_exp.stats import interaction, mcnemar_stratified, sign_flip_test


def test_sign_flip_with_thousands_of_nonzero_tasks_does_not_overflow() -> None:
    d = np.random.default_rng(0).integers(-4, 5, 2000) / 4
    d[d == 0] = 0.25  # every task non-zero: m = 2000 > 1024
    exact = sign_flip_test(d)
    mc = sign_flip_test(d, method="monte-carlo", n_resamples=20_000,
                        rng=np.random.default_rng(1))
    assert exact.method == "exact-lattice" and exact.n_nonzero == 2000
    assert exact.min_attainable_p == 0.0  # 2^-1999 underflows; it is not an error
    assert abs(mc.p_value - exact.p_value) < 4 * mc.mc_se + 1e-3
    # the normal approximation of the sign-flip null agrees at this size
    z = abs(d.sum()) / np.sqrt(np.sum(d ** 2))
    assert exact.p_value == pytest.approx(2 * stats.norm.sf(z), abs=5e-3)


def test_monte_carlo_counts_ties_on_a_thirds_lattice() -> None:
    d = np.array([1, 2, -2, 1, -1, -1] * 5 + [1]) / 3  # the 31 tasks
    assert sign_flip_test(d).p_value == 1.0  # exact: Σ|a| is odd, so |S*| >= 1/3 always
    mc = sign_flip_test(d, method="monte-carlo", n_resamples=10_000,
                        rng=np.random.default_rng(3))
    assert mc.method == "monte-carlo" and mc.p_value == 1.0


@pytest.mark.parametrize("k", [3, 6, 10])
def test_monte_carlo_matches_exact_on_fine_lattices(k: int) -> None:
    d = np.random.default_rng(k).integers(-k, k + 1, 40) / k
    exact = sign_flip_test(d)
    mc = sign_flip_test(d, method="monte-carlo", rng=np.random.default_rng(k))
    assert abs(mc.p_value - exact.p_value) < 4 * mc.mc_se + 1e-9


def _brute_stratified(b: list[int], c: list[int], w: list[Fraction]) -> float:
    n = [x + y for x, y in zip(b, c, strict=True)]
    obs = abs(sum(wi * (bi - ci) for wi, bi, ci in zip(w, b, c, strict=True)))
    tail = Fraction(0)
    for ks in itertools.product(*[range(ni + 1) for ni in n]):
        if abs(sum(wi * (2 * k - ni) for wi, k, ni in zip(w, ks, n, strict=True))) >= obs:
            prob = Fraction(1)
            for k, ni in zip(ks, n, strict=True):
                prob *= Fraction(comb(ni, k), 2 ** ni)
            tail += prob
    return float(tail)


def test_stratified_mcnemar_is_exact_with_fractional_weights() -> None:
    b, c = [1, 2, 4, 6], [5, 3, 4, 6]
    w = [Fraction(1, 7), Fraction(1, 6), Fraction(1, 6), Fraction(1)]
    res = mcnemar_stratified(b, c, [float(x) for x in w])
    assert res.p_value == pytest.approx(_brute_stratified(b, c, w), abs=1e-12)
    assert round(res.p_value, 4) == 0.8417


@pytest.mark.parametrize("seed", range(3))
def test_stratified_mcnemar_matches_brute_force(seed: int) -> None:
    gen = np.random.default_rng(seed)
    b, c = gen.integers(0, 5, 3).tolist(), gen.integers(0, 5, 3).tolist()
    w = [Fraction(int(x), int(y)) for x, y in zip(gen.integers(1, 5, 3),
                                                  gen.integers(1, 9, 3), strict=True)]
    res = mcnemar_stratified(b, c, [float(x) for x in w])
    assert res.p_value == pytest.approx(_brute_stratified(b, c, w), abs=1e-12)


def _brute_interaction(a: np.ndarray, b: np.ndarray) -> float:
    pooled = np.concatenate([a, b])
    est = abs(a.mean() - b.mean())
    hits = total = 0
    for chosen in itertools.combinations(range(pooled.size), a.size):
        mask = np.zeros(pooled.size, dtype=bool)
        mask[list(chosen)] = True
        total += 1
        hits += abs(pooled[mask].mean() - pooled[~mask].mean()) >= est - 1e-12
    return hits / total


def _rngs(seed: int) -> dict[str, np.random.Generator]:
    return {f"rng_{n}": np.random.default_rng(seed + i)
            for i, n in enumerate(("first", "second", "permutation"))}


@pytest.mark.parametrize("seed", range(3))
def test_interaction_p_is_exact_on_a_lattice(seed: int) -> None:
    gen = np.random.default_rng(seed)
    a, b = gen.integers(-2, 3, 8) / 2, gen.integers(-2, 3, 7) / 2
    res = interaction(a, b, n_resamples=200, **_rngs(seed))
    assert res.p_method == "exact-lattice" and res.n_permutations == 0 and res.mc_se == 0
    assert res.p_value == pytest.approx(_brute_interaction(a, b), abs=1e-12)
    # |Δ| with alternative="greater" is P(|Δ*| >= |Δ|); scipy's two-sided doubles a tail
    scipy_p = stats.permutation_test((a, b), lambda x, y: abs(np.mean(x) - np.mean(y)),
                                     n_resamples=np.inf, permutation_type="independent",
                                     alternative="greater").pvalue
    assert res.p_value == pytest.approx(scipy_p, abs=1e-9)


def test_interaction_p_is_enumerated_off_a_lattice() -> None:
    gen = np.random.default_rng(9)
    a, b = gen.normal(0.2, 1, 7), gen.normal(0, 1, 6)
    res = interaction(a, b, n_resamples=200, **_rngs(0))
    assert res.p_method == "exact-enumeration"
    assert res.p_value == pytest.approx(_brute_interaction(a, b), abs=1e-12)


def test_interaction_falls_back_to_monte_carlo_and_says_so() -> None:
    gen = np.random.default_rng(4)
    a, b = gen.normal(0.1, 1, 400), gen.normal(0, 1, 400)  # C(800, 400): no enumeration
    res = interaction(a, b, n_resamples=200, n_permutations=5000, **_rngs(1))
    assert res.p_method == "monte-carlo" and res.n_permutations == 5000 and res.mc_se > 0
    t = stats.ttest_ind(a, b)
    assert res.p_value == pytest.approx(t.pvalue, abs=4 * res.mc_se + 0.02)


def test_interaction_at_fire_size_is_exact() -> None:
    # Its speed (C(30, 14) = 145 million splits, on the lattice) is measured in
    # benchmarks/bench_stats.py, not asserted here.
    gen = np.random.default_rng(2)
    a, b = gen.integers(-2, 3, 14) / 2, gen.integers(-2, 3, 16) / 2  # 14 eligible, 16 silent
    res = interaction(a, b, n_resamples=100, **_rngs(2))
    assert res.p_method == "exact-lattice" and res.n_permutations == 0 and res.mc_se == 0
    scipy_p = stats.permutation_test((a, b), lambda x, y: abs(np.mean(x) - np.mean(y)),
                                     n_resamples=20_000, permutation_type="independent",
                                     alternative="greater", rng=np.random.default_rng(2)).pvalue
    assert res.p_value == pytest.approx(scipy_p, abs=4 * np.sqrt(0.25 / 20_000) + 1e-3)


@pytest.mark.parametrize("nu", [1, 2, 3, 4, 13, 29, 30, 101, 1000, 10_001])
def test_t_quantile_matches_scipy(nu: int) -> None:
    from fire_exp.stats._student_t import t_quantile

    for q in (0.005, 0.025, 0.05, 0.5, 0.9, 0.975, 0.995):
        assert t_quantile(q, nu) == pytest.approx(stats.t.ppf(q, nu), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("n", [0, 1, 7, 60, 999, 1001, 4000])
def test_half_binomial_matches_scipy(n: int) -> None:
    from fire_exp.stats._binom import half_binom_cdf, half_binom_pmf

    k = np.arange(n + 1)
    assert half_binom_pmf(n) == pytest.approx(stats.binom.pmf(k, n, 0.5), rel=1e-9, abs=1e-300)
    for j in {0, n // 3, n // 2, n}:
        assert half_binom_cdf(j, n) == pytest.approx(stats.binom.cdf(j, n, 0.5), rel=1e-9)


def test_the_analyze_command_imports_no_heavy_module(tmp_path) -> None:
    """scipy.stats / scipy.special, matplotlib, docker, hydra, rich: none on this path."""
    import subprocess
    import sys
    from pathlib import Path

    csv = tmp_path / "a.csv"
    csv.write_text("task,arm,replicate,cohort,reward\n" + "".join(
        f"t{i},{arm},0,eligible,{int(arm == 'real' or i % 2)}\n"
        for i in range(30) for arm in ("real", "sham")))
    code = ("import sys; from fire_exp.cli import main; main(['analyze', sys.argv[1], '--out', "
            "sys.argv[2]]); heavy = ('scipy.stats', 'scipy.special', 'matplotlib', 'docker', "
            "'hydra', 'rich'); print(sorted(m for m in sys.modules if m in heavy), "
            "file=sys.stderr)")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code, str(csv), str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=root, timeout=120,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]"
