"""Benchmark fire-exp's statistics engine against scipy on the same work.

Work: 5 arms, 300 tasks, 2 attempts; B = 10,000 bootstrap resamples; 100,000 sign vectors;
the 4 secondary contrasts of the default plan (real vs each comparator, sham vs baseline).
scipy's ``permutation_test`` runs with fewer resamples (``--scipy-perm``, default 10,000)
and its time is scaled linearly to 100,000. Prints times, ratios and the answers side by
side. Run: ``python benchmarks/bench_stats.py``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

from fire_exp.analysis import analyze, load_plan
from fire_exp.analysis.simulate import simulate_panel
from fire_exp.stats import child_rng, interaction, paired_bootstrap, sign_flip_test

CONTRASTS = [("real", "sham"), ("real", "baseline"), ("real", "always_verify"),
             ("sham", "baseline")]
PLAN = Path(__file__).resolve().parents[1] / "analysis" / "default.yaml"


def _best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--scipy-perm", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    b_boot, b_perm = 10_000, 100_000
    frame = simulate_panel(args.tasks, rng=np.random.default_rng(1),
                           effects={"real": 0.08, "sham": 0.0})
    rate = frame.groupby(["task", "arm"]).passed.mean().unstack()
    arms = {a: rate[a].to_numpy() for a in rate.columns}
    diffs = {f"{a} - {b}": arms[a] - arms[b] for a, b in CONTRASTS}

    def ours_boot():
        cols = {**{f"arm:{a}": v for a, v in arms.items()}, **diffs}
        return paired_bootstrap(cols, n_resamples=b_boot, rng=child_rng(1, "bench"))

    def scipy_boot():
        return {n: stats.bootstrap((arms[a], arms[b]), _mean_diff, paired=True,
                                   vectorized=True, method="percentile", n_resamples=b_boot,
                                   rng=np.random.default_rng(1)).confidence_interval
                for (a, b), n in zip(CONTRASTS, diffs, strict=True)}

    def ours_mc():
        return {n: sign_flip_test(d, n_resamples=b_perm, method="monte-carlo",
                                  rng=child_rng(1, n)) for n, d in diffs.items()}

    def ours_exact():
        return {n: sign_flip_test(d) for n, d in diffs.items()}

    def scipy_perm():
        return {n: stats.permutation_test((arms[a], arms[b]), _mean_diff,
                                          permutation_type="samples", vectorized=True,
                                          n_resamples=args.scipy_perm,
                                          rng=np.random.default_rng(1)).pvalue
                for (a, b), n in zip(CONTRASTS, diffs, strict=True)}

    t_ob, r_ob = _best(ours_boot, args.repeat)
    t_sb, r_sb = _best(scipy_boot, args.repeat)
    t_om, r_om = _best(ours_mc, args.repeat)
    t_oe, r_oe = _best(ours_exact, args.repeat)
    t_sp, r_sp = _best(scipy_perm, 1)
    t_sp_scaled = t_sp * b_perm / args.scipy_perm

    # The eligible-minus-silent interaction at FIRE's size (14 and 16 tasks): exact on the
    # lattice of half-point task differences (C(30, 14) = 145 million splits).
    gen = np.random.default_rng(2)
    inter_a, inter_b = gen.integers(-2, 3, 14) / 2, gen.integers(-2, 3, 16) / 2
    t_in, r_in = _best(lambda: interaction(
        inter_a, inter_b, n_resamples=100, rng_first=np.random.default_rng(2),
        rng_second=np.random.default_rng(3), rng_permutation=np.random.default_rng(4)),
        args.repeat)

    plan = load_plan(PLAN)
    big = simulate_panel(1000, rng=np.random.default_rng(2), effects={"real": 0.05})
    t_an, _ = _best(lambda: analyze(big, plan), 1)

    print(f"## fire-exp vs scipy: 5 arms, {args.tasks} tasks, 2 attempts, "
          f"B = {b_boot:,} bootstrap, {b_perm:,} sign vectors, {len(CONTRASTS)} contrasts\n")
    print("| work | fire-exp | scipy | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| bootstrap, all arms + 4 contrasts vs scipy.stats.bootstrap x4 | "
          f"{1e3 * t_ob:.1f} ms | {1e3 * t_sb:.1f} ms | {t_sb / t_ob:.1f}x |")
    print(f"| MC sign-flip x4 vs permutation_test x4 (scipy {args.scipy_perm:,} resamples, "
          f"scaled x{b_perm // args.scipy_perm}) | {1e3 * t_om:.1f} ms | {t_sp_scaled:.2f} s | "
          f"{t_sp_scaled / t_om:.0f}x |")
    print(f"| exact lattice x4 vs permutation_test x4 (scaled) | {1e3 * t_oe:.2f} ms | "
          f"{t_sp_scaled:.2f} s | {t_sp_scaled / t_oe:.0f}x |")
    print(f"| interaction p, 14 eligible vs 16 silent tasks ({r_in.p_method}) | "
          f"{1e3 * t_in:.1f} ms | | |")
    print(f"| whole analysis, 1,000-task 5-arm panel (default plan, 3 cohorts + "
          f"sensitivity + interaction) | {t_an:.2f} s | | |\n")
    print("| contrast | fire-exp CI (pts) | scipy CI (pts) | p MC (± SE) | p exact lattice | "
          f"p scipy ({args.scipy_perm:,}) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in diffs:
        o, s = r_ob[n], r_sb[n]
        print(f"| {n} | [{100 * o.ci_low:.2f}, {100 * o.ci_high:.2f}] | "
              f"[{100 * s.low:.2f}, {100 * s.high:.2f}] | {r_om[n].p_value:.4f} "
              f"(± {r_om[n].mc_se:.4f}) | {r_oe[n].p_value:.4f} | {r_sp[n]:.4f} |")


if __name__ == "__main__":
    main()
