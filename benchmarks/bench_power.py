"""Benchmark ``fire-exp power``'s engine on the typical grid, and the loop it replaces.

Grid: 10, 20, ..., 100 tasks x 1..4 attempts x 5 effects (0..40 points), 2,000 simulated
panels each, Beta(2, 3) task rates, the default plan (primary real − sham; 4 secondary
contrasts, Holm). Times the primary alone and the whole plan, then the brute-force loop
(``fire_exp.stats.sign_flip_test`` per simulated panel, as a user would write it) on a few
panels of a few designs, scaled to the grid. Wall and CPU time are both printed: on a shared
machine the CPU time is the one to compare. Run: ``python benchmarks/bench_power.py``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fire_exp.power import BetaRates, PowerSpec, power_grid
from fire_exp.stats import sign_flip_test

SECONDARY = ("real - baseline", "real - always_verify", "real - reconsider",
             "sham - baseline")


def _spec(n_sims: int, tasks: tuple[int, ...], attempts: tuple[int, ...]) -> PowerSpec:
    return PowerSpec("real - sham", alpha=0.05, tasks=tasks, attempts=attempts,
                     effects_pp=(0.0, 10.0, 20.0, 30.0, 40.0), n_sims=n_sims, seed=1,
                     source=BetaRates(2, 3), secondary=SECONDARY)


def _loop_seconds_per_panel(n_tasks: int, k: int, panels: int) -> float:
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for _ in range(panels):
        p = rng.beta(2, 3, n_tasks)
        sign_flip_test((rng.binomial(k, p) - rng.binomial(k, p)) / k)
    return (time.perf_counter() - t0) / panels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--loop-panels", type=int, default=300)
    args = parser.parse_args()
    tasks, attempts = tuple(range(10, 101, 10)), (1, 2, 3, 4)
    designs = len(tasks) * len(attempts)
    panels = designs * 5 * args.sims
    for label, secondary in (("primary only", False), ("primary + 4 Holm secondaries", True)):
        t0, c0 = time.perf_counter(), time.process_time()
        grid = power_grid(_spec(args.sims, tasks, attempts), secondary=secondary)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        tests = panels * (5 if secondary else 1)
        print(f"{label:30s} {designs} designs x 5 effects x {args.sims} panels: "
              f"{seconds:6.2f} s wall, {cpu:6.2f} s CPU ({1e6 * cpu / tests:.2f} µs per "
              f"test, {len(grid)} rows)")
    per_panel = np.mean([_loop_seconds_per_panel(n, k, args.loop_panels // 4)
                         for n in (10, 50, 100) for k in (1, 4)])
    print(f"{'loop of sign_flip_test':30s} {1e6 * per_panel:.0f} µs per test: the primary "
          f"grid would take {per_panel * panels:.0f} s")


if __name__ == "__main__":
    main()
