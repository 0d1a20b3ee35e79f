"""A Docker panel on a Ray cluster: two engines against one, and what Ray costs per attempt.

Three runs of one panel (the simulated agent, which sleeps ``--think`` seconds before each
command as a real agent waits for its model, on two bundled tasks in Docker), measured in
one invocation on this machine:

- ``local``: the local pool, ``--per-node`` workers, on the machine's engine;
- ``ray, 1 engine``: a Ray cluster of one node on the machine's engine, ``per_node`` =
  ``--per-node``;
- ``ray, 2 engines``: the same plus a second node whose attempts run on a second
  ``dockerd`` (tests/runner/docker_engine.py), the same ``per_node`` on each.

It prints the wall-clock ratio of one engine to two, and the overhead per attempt the Ray
path adds over the local pool (the time beyond ``run_attempt``, per attempt, Ray minus
local). Both engines share this machine's CPUs, so the ratio says how far a second engine
helps a panel whose attempts mostly wait, not what a second machine's cores would add.
Task images are prepared before the clock starts; Ray's start is not timed. Needs root
(a second dockerd with its own bridge, as the two-engine tests start; not while they run):

    python -m benchmarks.bench_cluster
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from fire_exp.config import ComponentConfig, PanelConfig, RunConfig
from fire_exp.environments.images import BASE_IMAGE
from fire_exp.policies.arms import ARMS
from fire_exp.records import read_records
from fire_exp.runner.build import build_panel, prepare_panel
from fire_exp.runner.panel import run_panel
from fire_exp.runner.progress import PlainProgress
from tests.runner.docker_engine import missing, start_engine
from tests.runner.ray_cluster import Cluster, NodeSpec, start_cluster

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3


def config(results: Path, run: str, executor: ComponentConfig, replicates: int,
           think: float) -> RunConfig:
    return RunConfig(
        panel=PanelConfig(name="bench-cluster", suite="fire-mini",
                          eligible=("serve-status-page",), silent=("csv-column-stats",),
                          arms=ARMS, attempts=replicates, portfolio="fire-core",
                          analysis="demo"),
        agent=ComponentConfig("simulated", {"think_s": think}),
        environment=ComponentConfig("docker"), executor=executor, seed=0, run=run,
        results_dir=str(results))


def measure(cfg: RunConfig, results: Path, workers: int) -> dict[str, float]:
    """Prepare (untimed), then run one panel: wall time and the overhead per attempt."""
    panel = build_panel(cfg)
    quiet = open(os.devnull, "w")
    prepare_panel(panel, report=lambda line: None)
    t0 = time.perf_counter()
    result = run_panel(panel, results / cfg.run, progress=PlainProgress(0, quiet))
    wall = time.perf_counter() - t0
    records = read_records(result.attempts_path).finished
    assert len(records) == len(panel.schedule), "a run lost attempts"
    failed = [(r.attempt_id, r.cause, r.error) for r in records if r.cause is not None]
    assert not failed, failed
    n, inside = len(records), sum(r.timings.total_s for r in records)
    return {"n": n, "wall": wall, "attempt": inside / n,
            # what the driver and executor add beyond run_attempt, workers kept busy
            "overhead": max(wall * workers - inside, 0.0) / n}


def ray_row(cluster: Cluster, results: Path, run: str, nodes: int, per_node: int,
            replicates: int, think: float) -> dict[str, float]:
    executor = ComponentConfig("ray", {"address": cluster.address, "workers": nodes * per_node,
                                       "per_node": per_node})
    return measure(config(results, run, executor, replicates, think), results,
                   nodes * per_node)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=1, help="attempts per task and arm")
    parser.add_argument("--per-node", type=int, default=1, help="attempts one node runs at once")
    parser.add_argument("--think", type=float, default=0.5, help="seconds before each command")
    args = parser.parse_args()
    why = missing()
    if why is not None:
        raise SystemExit(f"bench_cluster: {why}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRE_")}
    env |= {"PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    os.environ["RAY_AUTH_MODE"] = "disabled"  # the driver joins the loopback clusters
    load_before = os.getloadavg()
    c = args.per_node
    machine = NodeSpec(cpus=c, memory=c * GIB, resources={"fire-exp-node:machine": 1})
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        results = Path(tmp)
        rows["local"] = measure(config(results, "local", ComponentConfig(
            "local", {"workers": c}), args.replicates, args.think), results, c)
        cluster = start_cluster(env, head=NodeSpec(cpus=0), workers=(machine,))
        try:
            rows["ray, 1 engine"] = ray_row(cluster, results, "one", 1, c, args.replicates,
                                            args.think)
        finally:
            cluster.stop()
        second = start_engine((BASE_IMAGE,))
        try:
            other = NodeSpec(cpus=c, memory=c * GIB, env={"DOCKER_HOST": second.host},
                             resources={"fire-exp-node:second": 1})
            cluster = start_cluster(env, head=NodeSpec(cpus=0), workers=(machine, other))
            try:
                rows["ray, 2 engines"] = ray_row(cluster, results, "two", 2, c,
                                                 args.replicates, args.think)
            finally:
                cluster.stop()
        finally:
            second.stop()
    load_after = os.getloadavg()
    report(rows, args, load_before, load_after)


def report(rows: dict[str, dict[str, float]], args: argparse.Namespace,
           before: tuple[float, float, float], after: tuple[float, float, float]) -> None:
    n = rows["local"]["n"]
    print(f"\nsimulated agent (think {args.think:g} s per command) in Docker, {n:.0f} attempts "
          f"per row, {args.per_node} per node; {os.cpu_count()} CPUs; load average "
          f"{before[0]:.1f} before, {after[0]:.1f} after (1 min)\n")
    print("| executor | wall s | attempt s | overhead s/attempt |")
    print("| --- | ---: | ---: | ---: |")
    for name, m in rows.items():
        print(f"| {name} | {m['wall']:.1f} | {m['attempt']:.2f} | {m['overhead']:.2f} |")
    one, two = rows["ray, 1 engine"], rows["ray, 2 engines"]
    print(f"\nwall clock, 1 engine / 2 engines: {one['wall'] / two['wall']:.2f}")
    print(f"Ray's overhead per attempt over the local pool: "
          f"{one['overhead'] - rows['local']['overhead']:+.2f} s")


if __name__ == "__main__":
    main()
