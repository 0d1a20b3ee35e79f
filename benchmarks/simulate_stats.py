"""Simulation checks of the panel statistics: null rejection rate and interval coverage.

- Sign-flip test under the null (both arms share each task's success probability, tasks
  ~ Beta(2, 2), 2 attempts): rejection rate at alpha = 0.05 must be at most 5 %.
- Percentile bootstrap and paired t interval coverage of the population mean difference
  (arm A adds 10 points, clipped to [0, 1]) at 10, 20 and 50 tasks.

Run from the repository root: ``python -m benchmarks.simulate_stats [--reps N]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import integrate, stats

from fire_exp.stats import child_rng, paired_bootstrap, paired_t_interval, sign_flip_test

EFFECT, ATTEMPTS = 0.10, 2


def _true_difference() -> float:
    f = lambda p: (min(p + EFFECT, 1.0) - p) * stats.beta.pdf(p, 2, 2)  # noqa: E731
    return float(integrate.quad(f, 0, 1, points=[1 - EFFECT])[0])


def _panel(n_tasks: int, effect: float, rng: np.random.Generator) -> np.ndarray:
    p = rng.beta(2, 2, n_tasks)
    a = rng.binomial(ATTEMPTS, np.clip(p + effect, 0, 1)) / ATTEMPTS
    b = rng.binomial(ATTEMPTS, p) / ATTEMPTS
    return a - b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--boot", type=int, default=2000, help="bootstrap resamples per rep")
    parser.add_argument("--seed", type=int, default=20260301)
    args = parser.parse_args()
    truth = _true_difference()
    print(f"## Simulation: {args.reps:,} panels per row, {ATTEMPTS} attempts, tasks ~ "
          f"Beta(2, 2); coverage with B = {args.boot:,}; true difference {100 * truth:.2f} "
          "points\n")
    print("| tasks | sign-flip rejection at 0.05 (null) | MC SE | percentile coverage "
          "(95 %) | paired t coverage (95 %) | MC SE |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in (10, 20, 50):
        rng = child_rng(args.seed, "simulate", str(n))
        rejections = sum(sign_flip_test(_panel(n, 0.0, rng)).p_value <= 0.05
                         for _ in range(args.reps))
        cover_b = cover_t = 0
        for rep in range(args.reps):
            d = _panel(n, EFFECT, rng)
            bi = paired_bootstrap({"d": d}, n_resamples=args.boot,
                                  rng=child_rng(args.seed, "boot", str(n), str(rep)))["d"]
            ti = paired_t_interval(d)
            cover_b += bi.ci_low <= truth <= bi.ci_high
            cover_t += ti.ci_low <= truth <= ti.ci_high
        rate = rejections / args.reps
        se = np.sqrt(0.95 * 0.05 / args.reps)
        print(f"| {n} | {100 * rate:.2f} % | {100 * np.sqrt(rate * (1 - rate) / args.reps):.2f}"
              f" | {100 * cover_b / args.reps:.1f} % | {100 * cover_t / args.reps:.1f} % | "
              f"{100 * se:.1f} |")


if __name__ == "__main__":
    main()
