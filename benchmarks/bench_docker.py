"""Overhead of the Docker environment (run: ``python benchmarks/bench_docker.py``).

Measures, on the real Docker engine with a cached task image:

- per-command time of ``DockerEnvironment.exec`` (one request over the session host's
  attached exec socket) against ``docker exec CONTAINER bash -c ...`` on the command line,
  on the same container, for a trivial command (the ratio is the environment's overhead;
  goal: no slower than the CLI);
- container start to first command (``start()`` plus the first ``exec``);
- the whole lifecycle of an attempt's box (start, one command, end of session, stop).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fire_exp.environments.docker import DockerEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.tasks.loader import load_task


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:8.1f} ms (p90 " \
        f"{sorted(samples)[int(len(samples) * 0.9) - 1] * 1e3:.1f})"


def per_command(env: DockerEnvironment, n: int) -> tuple[list[float], list[float]]:
    """Wall time of ``n`` trivial commands through the environment and through the CLI."""
    ours, cli = [], []
    for _ in range(3):  # warm both paths
        env.exec("true", 10)
        subprocess.run(["docker", "exec", env.container.id, "bash", "-c", "true"], check=True)
    for _ in range(n):
        t0 = time.perf_counter()
        env.exec("echo hi", 10)
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run(["docker", "exec", "-w", env.paths.workdir, env.container.id,
                        "bash", "-c", "echo hi"], check=True, capture_output=True)
        cli.append(time.perf_counter() - t0)
    return ours, cli


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--task", default="csv-column-stats")
    args = parser.parse_args()
    task = load_task(SUITES_DIR / "fire-mini" / args.task)
    root = Path(tempfile.mkdtemp(prefix="bench-docker-"))
    with DockerEnvironment(task, root / "warm", "bench-warm"):  # builds the image once
        pass
    first, lifecycle = [], []
    for i in range(args.starts):
        env = DockerEnvironment(task, root / f"s{i}", f"bench-start-{i}")
        t0 = time.perf_counter()
        try:
            env.start()
            env.exec("true", 10)
            first.append(time.perf_counter() - t0)
            env.end_command_session()
        finally:
            env.stop()
        lifecycle.append(time.perf_counter() - t0)
    with DockerEnvironment(task, root / "cmd", "bench-commands") as env:
        ours, cli = per_command(env, args.commands)
    ratio = statistics.median(ours) / statistics.median(cli)
    print(f"task {task.name}, {args.commands} commands, {args.starts} starts")
    print(f"per command, DockerEnvironment.exec : {_median_ms(ours)}")
    print(f"per command, docker exec (CLI)      : {_median_ms(cli)}")
    print(f"ratio environment / CLI             : {ratio:8.2f}  "
          f"({'no slower' if ratio <= 1 else 'SLOWER'} than the CLI)")
    print(f"start to first command              : {_median_ms(first)}")
    print(f"whole box lifecycle (start..stop)   : {_median_ms(lifecycle)}")


if __name__ == "__main__":
    main()
