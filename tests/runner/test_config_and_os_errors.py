"""Config values are checked before anything is written, and OS errors (a read-only or
full disk, a file where a folder should be) are one line, exit 2, no traceback."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ci import missing

REPO = Path(__file__).resolve().parents[2]


def fire_exp(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fire_exp", *args], cwd=REPO,
                          env=os.environ | {"PYTHONPATH": str(REPO)}, capture_output=True,
                          text=True, timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fire-exp run: error: "), proc.stderr
    return last


@pytest.mark.parametrize(("override", "says"), [
    ("executor.workers=0", "configs/executor: workers: 0 is below 1"),
    ("seed=-1", "configs/config.yaml: seed: -1 is negative"),
    ("agent.think_s=-5", "configs/agent: think_s: -5 is below 0"),
    ("environment=docker environment.pids_limit=0",
     "configs/environment: pids_limit: 0 is below 1"),
    ("agent.think_s=soon", "think_s: expected a number"),
    ("panel.attempts=0", "attempts: 0 < 1"),
])
def test_bad_config_values_are_refused_before_anything_is_written(
        tmp_path: Path, override: str, says: str) -> None:
    results = tmp_path / "results"
    proc = fire_exp("run", "panel=demo", *override.split(), f"results_dir={results}")
    assert says in one_line_error(proc)
    assert not results.exists()  # no run folder, no manifest


def test_a_file_where_the_results_folder_should_be(tmp_path: Path) -> None:
    blocker = tmp_path / "results"
    blocker.write_text("a file, not a folder")
    last = one_line_error(fire_exp("run", "panel=demo", f"results_dir={blocker}/inner"))
    assert str(blocker) in last and "a file stands where a folder should be" in last


@dataclass(frozen=True)
class Mounted:
    """A small tmpfs for one test, and how to run fire-exp with it in place.

    As root with mount rights it is mounted here. Otherwise (a non-root developer, a CI
    container without CAP_SYS_ADMIN) it is mounted in a private user and mount namespace
    (``unshare -Urm``: no privilege needed where user namespaces are allowed), the command
    runs inside, and what the tmpfs held is copied to ``seen`` before the namespace ends.
    """

    path: Path  # where fire-exp writes
    seen: Path  # where the test reads what was written, after the run
    options: str
    host: bool

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        if self.host:
            return fire_exp(*args, timeout=timeout)
        command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "fire_exp", *args])
        script = (f"mount -t tmpfs -o {self.options} tmpfs {shlex.quote(str(self.path))} "
                  f"|| exit 97; {command}; rc=$?; "
                  f"cp -a {shlex.quote(str(self.path))}/. {shlex.quote(str(self.seen))}/; "
                  "exit $rc")
        return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                               script], cwd=REPO, env=os.environ | {"PYTHONPATH": str(REPO)},
                              capture_output=True, text=True, timeout=timeout)


def _can(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Mounted]:
    """A tmpfs of ``options`` at ``path``, on the host or in a namespace (see Mounted);
    neither possible: the test skips, and fails in CI."""
    path.mkdir()
    seen = path.with_name(path.name + "-seen")
    seen.mkdir()
    if os.environ.get("FIRE_TEST_MOUNT") != "namespace" and os.geteuid() == 0 \
            and _can(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)]):
        try:
            yield Mounted(path, path, options, host=True)
        finally:
            subprocess.run(["umount", str(path)], check=True)
        return
    probe = f"mount -t tmpfs -o {options} tmpfs {shlex.quote(str(path))}"
    if not _can(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", probe]):
        missing("a tmpfs cannot be mounted here: neither as root with mount rights nor in a "
                "user namespace (unshare -Urm)")
    yield Mounted(path, seen, options, host=False)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Mounted]:
    """A results folder fire-exp cannot write: a read-only tmpfs (root writes through mode
    555, so a mode is no test)."""
    with tmpfs(tmp_path / "ro", "ro,size=1m") as mounted:
        yield mounted


def test_a_read_only_results_folder(read_only: Mounted) -> None:
    last = one_line_error(read_only.run("run", "panel=demo", f"results_dir={read_only.path}"))
    assert str(read_only.path) in last
    assert "write elsewhere (results_dir=, --out)" in last or "read-only" in last


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Mounted]:
    with tmpfs(tmp_path / "tiny", "size=200k") as mounted:
        yield mounted


@pytest.mark.slow
def test_a_full_disk_stops_the_run_with_one_line_and_keeps_what_finished(
        tiny_disk: Mounted) -> None:
    proc = tiny_disk.run("run", "panel=demo", f"results_dir={tiny_disk.path}", "run=r1",
                         "analyze=false", timeout=600)
    last = one_line_error(proc)
    assert "No space left on device" in last and "resume" in last
    lines = (tiny_disk.seen / "demo" / "r1" / "attempts.jsonl").read_text().splitlines()
    complete = lines[:-1] if lines and not lines[-1].endswith("}") else lines
    finished = [json.loads(x) for x in complete if '"kind":"finished"' in x]
    assert finished, "nothing was recorded before the disk filled"
