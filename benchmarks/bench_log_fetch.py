"""The harness's memory while it fetches an agent's logs (run:
``python benchmarks/bench_log_fetch.py``; Docker engine and ``fire-exp/base:bookworm`` needed).

The agent leaves a sparse file in ``/logs/agent`` (no disk used in the box). Each way of
fetching ``/logs`` runs in a child process of its own, which reports its peak RSS:

- **before**: the archive read whole (``b"".join(container.get_archive(...))``) and
  extracted, as the harness did before the fetch cap; a 20 GB file would take 20 GB of
  memory (and the machine), so it gets a smaller one (``--before-gb``, default 0.4);
- **after**: the streamed fetch of ``fire_exp/environments/fetch.py`` under the fetch cap
  (``--cap-mb``, default 256, the Docker environment's default), with a 20 GB file.

The result is the two peaks, their growth over a child that only imported the same
modules, and the ratio of the peaks. On the 2-core development machine (Docker 20.10):
before 863 MB (+821 MB) for 0.4 GB in 25 s; after 42 MB (+0 MB) for 20 GB in 0.3 s (the
file past the cap, dropped and named, never read); before/after 20.7x with a 50x larger
file.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

from fire_exp.environments.images import BASE_IMAGE


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, container_id: str, cap_mb: int) -> None:
    """One fetch of ``/logs`` from the container (run in a child process); prints JSON."""
    import docker

    from fire_exp.environments.docker_run import archive_stream
    from fire_exp.environments.fetch import extract_stream

    client = docker.from_env()
    container = client.containers.get(container_id)
    base = _peak_mb()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as dest:
        withheld: list[str] = []
        if mode == "before":
            bits, _ = container.get_archive("/logs")
            with tarfile.open(fileobj=io.BytesIO(b"".join(bits)), mode="r") as tar:
                tar.extractall(dest, filter="data")
        elif mode == "after":
            with archive_stream(client.api, container, "/logs") as chunks:
                withheld = extract_stream(chunks, Path(dest), cap=cap_mb << 20).withheld
    print(json.dumps({"base_mb": base, "peak_mb": _peak_mb(), "seconds":
                      time.perf_counter() - t0, "withheld": withheld}))


def _measure(mode: str, container_id: str, cap_mb: int) -> dict[str, object]:
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, __file__, "--child", mode, container_id,
                          str(cap_mb)], check=True, capture_output=True, text=True,
                         env=env).stdout
    return dict(json.loads(out.splitlines()[-1]))


def _box(client: object, size_gb: float) -> object:
    box = client.containers.run(  # type: ignore[attr-defined]
        BASE_IMAGE, ["sleep", "600"], detach=True, remove=True,
        name=f"fire-exp-bench-fetch-{uuid.uuid4().hex[:8]}", labels={"fire-exp": "1"})
    code, out = box.exec_run(["sh", "-c", "mkdir -p /logs/agent /logs/verifier && "
                              "echo 1 > /logs/verifier/reward.txt && "
                              f"truncate -s {int(size_gb * (1 << 30))} /logs/agent/sparse"])
    if code != 0:
        raise SystemExit(out.decode())
    return box


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before-gb", type=float, default=0.4)
    parser.add_argument("--after-gb", type=float, default=20.0)
    parser.add_argument("--cap-mb", type=int, default=256)
    args = parser.parse_args()
    import docker

    client = docker.from_env()
    rows = {}
    for mode, size in (("before", args.before_gb), ("after", args.after_gb)):
        box = _box(client, size)
        try:
            idle = _measure("idle", box.id, args.cap_mb)  # type: ignore[attr-defined]
            got = _measure(mode, box.id, args.cap_mb)  # type: ignore[attr-defined]
        finally:
            box.kill()  # type: ignore[attr-defined]
        growth = float(got["peak_mb"]) - float(idle["peak_mb"])  # type: ignore[arg-type]
        rows[mode] = (size, got, growth)
        print(f"{mode:6} {size:6.1f} GB sparse file: peak RSS {got['peak_mb']:7.1f} MB "
              f"(+{growth:7.1f} MB over an idle child), {got['seconds']:.1f} s, "
              f"withheld {got['withheld']}")
    before, after = (float(rows[m][1]["peak_mb"]) for m in ("before", "after"))  # type: ignore[arg-type]
    print(f"peak RSS before/after: {before / after:.1f}x "
          f"(the after file {args.after_gb / args.before_gb:.0f}x larger)")

if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main()
