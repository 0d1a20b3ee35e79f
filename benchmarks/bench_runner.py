"""The panel runner's own cost: overhead per attempt, and throughput by executor and workers.

A zero-think panel: the nop agent on a trivial task (setup and verifier are one-line
shell scripts), so what is measured is the harness — building the environment object and
its session host, the policy runtime, the verifier call, writing logs, fsyncing the
attempt's log folder and its two store lines, and the executor's scheduling. Runs the
local pool and Ray (one local Ray started once, reused by every Ray row) with 1, 2 and
4 workers, and prints a table.

    PYTHONPATH=. python benchmarks/bench_runner.py [--replicates 8] [--no-ray]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from fire_exp.config import ComponentConfig, PanelConfig, RunConfig
from fire_exp.policies.arms import ARMS
from fire_exp.records import StartedRecord, read_records
from fire_exp.runner.build import build_panel
from fire_exp.runner.panel import run_panel
from fire_exp.runner.progress import PlainProgress
from fire_exp.runner.store import AttemptStore

ROOT = Path(__file__).resolve().parents[1]
TASK_TOML = """schema_version = "1.1"
[task]
name = "bench/trivial"
[agent]
timeout_sec = 60.0
[verifier]
timeout_sec = 30.0
[environment]
workdir = "/app"
"""


def trivial_suite(root: Path) -> Path:
    """A suite of one task whose setup and verifier do (almost) nothing."""
    task = root / "suite" / "trivial"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text(TASK_TOML)
    (task / "instruction.md").write_text("Do nothing; the verifier passes.\n")
    (task / "environment" / "setup.sh").write_text("#!/bin/bash\nexit 0\n")
    (task / "tests" / "test.sh").write_text(
        '#!/bin/bash\nmkdir -p "$FIRE_LOGS/verifier"\necho 1 > "$FIRE_LOGS/verifier/reward.txt"\n')
    return task.parent


def config(suite: Path, results: Path, executor: str, workers: int, replicates: int,
           run: str) -> RunConfig:
    return RunConfig(
        panel=PanelConfig(name="bench", suite=str(suite), eligible=(), silent=("trivial",),
                          arms=ARMS, attempts=replicates, portfolio="fire-core",
                          analysis="demo"),
        agent=ComponentConfig("nop"), environment=ComponentConfig("local"),
        executor=ComponentConfig(executor, {"workers": workers}), seed=0, run=run,
        results_dir=str(results))


def measure(cfg: RunConfig, results: Path) -> dict[str, float]:
    """Run one panel; wall time, throughput, attempt time and overhead per attempt."""
    panel = build_panel(cfg)
    run_dir = results / cfg.run
    quiet = open(os.devnull, "w")
    t0 = time.perf_counter()
    result = run_panel(panel, run_dir, progress=PlainProgress(0, quiet))
    wall = time.perf_counter() - t0
    records = read_records(result.attempts_path).finished
    assert len(records) == len(panel.schedule) and all(r.reward == 1.0 for r in records)
    n, workers = len(records), cfg.executor.params["workers"]
    inside = sum(r.timings.total_s for r in records)
    return {"n": n, "wall": wall, "rate": n / wall, "attempt": inside / n,
            # time per attempt the driver and executor add beyond run_attempt, assuming
            # the workers were kept busy
            "overhead": max(wall * workers - inside, 0.0) / n,
            "env": statistics.mean(r.timings.environment_s for r in records),
            "verifier": statistics.mean(r.timings.verifier_s for r in records)}


def store_write_cost(folder: Path, lines: int = 200) -> float:
    """Seconds per appended and fsynced store line."""
    with AttemptStore(folder / "attempts.jsonl") as store:
        t0 = time.perf_counter()
        for i in range(lines):
            store.started(StartedRecord(run="b", attempt_id=f"t/a/r{i}", task="t", arm="a",
                                        replicate=i, started_at="now"))
        return (time.perf_counter() - t0) / lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=8, help="attempts per arm")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))  # Ray workers import us
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        root = Path(tmp)
        suite = trivial_suite(root)
        rows = []
        executors = ["local"] if args.no_ray else ["local", "ray"]
        for executor in executors:
            if executor == "ray":
                import ray

                t0 = time.perf_counter()
                ray.init(num_cpus=max(args.workers), include_dashboard=False,
                         log_to_driver=False, logging_level="WARNING")
                print(f"ray.init: {time.perf_counter() - t0:.1f}s (not in the rows below)")
                # warm the workers (imports, panel build) so rows compare steady states
                measure(config(suite, root, "ray", max(args.workers), 1, "warm"), root)
            for workers in args.workers:
                cfg = config(suite, root, executor, workers, args.replicates,
                             f"{executor}-{workers}")
                rows.append((executor, workers, measure(cfg, root)))
            if executor == "ray":
                ray.shutdown()
        write = store_write_cost(root / "store")
    print(f"\nzero-think panel: nop agent, trivial task, {rows[0][2]['n']:.0f} attempts per row; "
          f"{os.cpu_count()} CPUs")
    print(f"store: {write * 1e3:.2f} ms per appended+fsynced line\n")
    print("| executor | workers | wall s | attempts/s | attempt s | env s | verifier s "
          "| overhead s/attempt |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for executor, workers, m in rows:
        print(f"| {executor} | {workers} | {m['wall']:.2f} | {m['rate']:.2f} | "
              f"{m['attempt']:.3f} | {m['env']:.3f} | {m['verifier']:.3f} | "
              f"{m['overhead']:.3f} |")


if __name__ == "__main__":
    main()
