"""Time ``fire-exp report`` on a large panel: 1,000 tasks x 5 arms x 4 attempts.

Writes 20,000 attempt records (simulated outcomes, funnels and one family per eligible
task) to a temporary attempts file with a matching prereg.json, then times
``build_report`` with the default plan, phase by phase.

    python -m benchmarks.bench_report [--tasks 1000] [--attempts 4] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from fire_exp.analysis import analyze, load_attempts, load_plan
from fire_exp.analysis.simulate import simulate_panel
from fire_exp.paths import ANALYSIS_DIR
from fire_exp.records import AttemptRecord, FamilyFunnel, Funnel, Timings, Usage, append_records
from fire_exp.report.build import build_report


def write_panel(folder: Path, n_tasks: int, attempts: int, seed: int = 7) -> Path:
    """A run folder with ``attempts.jsonl`` and ``prereg.json`` for a simulated panel."""
    rng = np.random.default_rng(seed)
    frame = simulate_panel(n_tasks, attempts=attempts, rng=rng, infra_rate=0.01,
                           effects={"real": 0.08, "sham": 0.01, "always_verify": 0.03})
    state = rng.random(len(frame)) < 0.6
    behavior = rng.random(len(frame)) < 0.5
    records = []
    for i, row in enumerate(frame.itertuples(index=False)):
        eligible = row.cohort == "eligible"
        funnel = Funnel(state=bool(state[i]) if eligible else None,
                        fired=bool(eligible and state[i] and row.arm != "baseline"),
                        behavior=bool(behavior[i]) if eligible else None, passed=row.passed)
        records.append(AttemptRecord(
            run="bench", panel="bench", attempt_id=f"{row.task}/{row.arm}/r{row.replicate}",
            task=row.task, task_digest="d", cohort=row.cohort,
            families=["service_persistence"] if eligible else [], arm=row.arm,
            replicate=row.replicate, order=0, seed=0, agent="simulated", environment="local",
            reward=float(row.passed), passed=bool(row.passed),
            cause="environment_failed" if row.infrastructure_failure else None,
            funnel=funnel, family_funnel=[FamilyFunnel(family="service_persistence",
                                                       **funnel.model_dump())]
            if eligible else [],
            timings=Timings(agent_s=row.agent_seconds), usage=Usage(cost_usd=row.cost_usd)))
    folder.mkdir(parents=True, exist_ok=True)
    append_records(folder / "attempts.jsonl", records)
    schedule = [{"task": r.task, "arm": r.arm, "replicate": r.replicate} for r in records]
    (folder / "prereg.json").write_text(json.dumps({
        "format": "fire-exp-prereg/1", "panel": "bench", "n_attempts": len(schedule),
        "hashes": {"schedule": {"path": "schedule", "sha256": "0" * 64}},
        "schedule": schedule}), encoding="utf-8")
    return folder


def main(argv: list[str] | None = None) -> int:
    """Generate the panel, report it, print the times."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--attempts", type=int, default=4)
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folder here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run = write_panel(args.keep or Path(tmp) / "run", args.tasks, args.attempts)
        plan = load_plan(ANALYSIS_DIR / "default.yaml")
        n = sum(1 for _ in open(run / "attempts.jsonl", encoding="utf-8"))
        print(f"{args.tasks} tasks x 5 arms x {args.attempts} attempts = {n} records; "
              f"plan {plan.name} (B = {plan.bootstrap.n_resamples:,}, "
              f"{plan.permutation.n_resamples:,} sign vectors)")
        t0 = time.perf_counter()
        loaded = load_attempts(run)
        t1 = time.perf_counter()
        analyze(loaded, plan)
        t2 = time.perf_counter()
        report = build_report(run, plan)
        t3 = time.perf_counter()
        print(f"load attempts: {t1 - t0:.2f} s; analyze: {t2 - t1:.2f} s")
        print(f"fire-exp report (read, analyse, {len(report.tables)} tables, "
              f"{len(report.figures) // 2} figures): {t3 - t2:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
