"""Benchmark the stopping rule's cost to a sequential run: the runner's StopMonitor after
every record of a panel of N tasks x 5 arms x 2 attempts (no decision, so every task is
evaluated), and the e-process of a power simulation (2,000 panels x 56 tasks).
Run: ``python benchmarks/bench_stopping.py [--tasks 100 400]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import deque
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from fire_exp.analysis import load_plan
from fire_exp.records import AttemptRecord
from fire_exp.runner.schedule import build_task_block_schedule
from fire_exp.runner.stopping import StopMonitor
from fire_exp.stats.sequential import e_process

PLAN = Path(__file__).resolve().parents[1] / "analysis" / "sequential.yaml"
ARMS = ["real", "sham", "always_verify", "reconsider", "baseline"]


def _monitor_seconds(n_tasks: int) -> float:
    plan = load_plan(PLAN)
    plan = plan.model_copy(update={"sequential": plan.sequential.model_copy(  # type: ignore[union-attr]
        update={"futility": None})})
    schedule = build_task_block_schedule([(f"t{i}", "eligible") for i in range(n_tasks)],
                                         ARMS, 2, 1)
    budget = SimpleNamespace(budget_usd=None, budget_attempts=None)
    panel: Any = SimpleNamespace(plan=plan, schedule=schedule,
                                 config=SimpleNamespace(panel=budget))
    records = [AttemptRecord(run="r", panel="p", attempt_id=c.attempt_id, task=c.task,
                             task_digest="d", cohort=c.cohort, arm=c.arm,
                             replicate=c.replicate, order=c.order, seed=c.seed, agent="a",
                             environment="e", reward=1.0, passed=c.seed % 2 == 0)
               for c in schedule]
    with tempfile.TemporaryDirectory() as tmp:
        monitor = StopMonitor(panel, [], Path(tmp))
        queue: deque[Any] = deque(schedule)
        t0 = time.perf_counter()
        for record in records:
            queue.popleft()
            monitor.started()
            monitor.finished(record)
            monitor.check(queue)
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[100, 400])
    args = parser.parse_args()
    for n in args.tasks:
        seconds = _monitor_seconds(n)
        print(f"StopMonitor, {n} tasks x 10 attempts: {seconds:.2f} s for the whole run, "
              f"{1000 * seconds / n:.1f} ms per completed task")
    diffs = np.random.default_rng(0).choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=(2000, 56))
    t0 = time.perf_counter()
    e_process(diffs)
    print(f"e_process (mixture, 40 bets), 2,000 panels x 56 tasks: "
          f"{time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
