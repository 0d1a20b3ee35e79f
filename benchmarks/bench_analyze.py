"""Time ``fire-exp analyze`` as a user runs it: the whole process, wall time and peak memory.

Writes a simulated panel as a CSV (10,000 tasks x 5 arms x 4 attempts by default: 200,000
attempts, 1 % infrastructure failures so the sensitivity analysis runs too), then runs
``fire-exp analyze FILE --out DIR`` in a fresh interpreter ``--repeat`` times and reports
the fastest wall time and the peak resident memory of the child. The same for FIRE's
30 tasks x 2 attempts, whose time is mostly start-up (imports).

Beside them, in the same run, the floors any pandas-based analysis pays on this machine:
an interpreter that does nothing, and one that only imports numpy and pandas. The machine's
speed drifts by a quarter over minutes, so the small panel is read against the floor.

    python -m benchmarks.bench_analyze [--tasks 10000] [--attempts 4] [--repeat 3]

Targets on a 2-core machine: under 3 s and 500 MB for 10,000 tasks; about 0.5 s for 30.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fire_exp.analysis.simulate import simulate_panel

ROOT = Path(__file__).resolve().parents[1]
# As a user's interpreter runs: it caches compiled modules (a shell that sets
# PYTHONDONTWRITEBYTECODE would have every run compile any module changed since the last
# cache, and time that instead).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def write_csv(path: Path, n_tasks: int, attempts: int, seed: int = 11) -> Path:
    """A simulated panel as a CSV of attempts (one row per attempt)."""
    frame = simulate_panel(n_tasks, attempts=attempts, rng=np.random.default_rng(seed),
                           infra_rate=0.01, effects={"real": 0.08, "sham": 0.01})
    frame.to_csv(path, index=False)
    return path


def run_once(csv: Path, out: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit status) of one ``fire-exp analyze`` process."""
    env = _ENV | {"PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fire_exp", "analyze", str(csv), "--plan",
                           "default", "--out", str(out)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode not in (0, 1):
        raise SystemExit(f"fire-exp analyze failed:\n{proc.stderr}")
    # ru_maxrss of children is the largest child so far: report it only when it grew
    return wall, max(peak, before) / 1024, proc.returncode


def floor(code: str, repeat: int) -> float:
    """Best wall time of ``python -c CODE`` (an interpreter's start-up and imports)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=_ENV)
        times.append(time.perf_counter() - t0)
    return min(times)


def bench(n_tasks: int, attempts: int, repeat: int, folder: Path) -> None:
    csv = write_csv(folder / f"panel-{n_tasks}.csv", n_tasks, attempts)
    runs = [run_once(csv, folder / f"out-{n_tasks}") for _ in range(repeat)]
    best = min(r[0] for r in runs)
    peak = max(r[1] for r in runs)
    print(f"{n_tasks:>6} tasks x 5 arms x {attempts} attempts ({n_tasks * 5 * attempts:,} "
          f"rows): best of {repeat} {best:.2f} s wall, peak RSS {peak:.0f} MB "
          f"(all: {', '.join(f'{r[0]:.2f}' for r in runs)} s; load {os.getloadavg()[0]:.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--attempts", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-analyze-") as tmp:
        folder = Path(tmp)
        bench(30, 2, args.repeat, folder)  # small first: its peak RSS is its own
        bare = floor("pass", args.repeat)
        libs = floor("import numpy, pandas", args.repeat)
        print(f"floors: python -c pass {bare:.2f} s; python -c 'import numpy, pandas' "
              f"{libs:.2f} s (best of {args.repeat})")
        bench(args.tasks, args.attempts, args.repeat, folder)


if __name__ == "__main__":
    main()
