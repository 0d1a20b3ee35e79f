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
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]


def fire_exp(*args: str, timeout: float = 300,
             subprocess_: bool = False) -> subprocess.CompletedProcess[str]:
    """``fire-exp ARGS``: a refusal is the command's, the same in this process
    (``run_cli``); a full or read-only disk's is a process's, so those keep one."""
    return run_cli(*args, timeout=timeout, subprocess_=subprocess_)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fire-exp run: error: "), proc.stderr
    return last


@pytest.mark.parametrize(("override", "says"), [
    ("executor.workers=0", "configs/executor/local.yaml: workers: 0 is below 1 "
     "(set executor.workers to 1 or more)"),
    ("seed=-1", "configs/config.yaml: seed: -1 is negative"),
    ("agent.think_s=-5", "configs/agent/simulated.yaml: think_s: -5 is below 0 "
     "(set agent.think_s to 0 or more)"),
    ("environment=docker environment.pids_limit=0",
     "configs/environment/docker.yaml: pids_limit: 0 is below 1"),
    ("agent.think_s=soon", "think_s: expected a number, got 'soon'"),
    ("panel.attempts=0", "attempts: 0 < 1"),
    # finite, and under a ceiling unless ceilings=false lifts it
    ("agent.think_s=inf", "configs/agent/simulated.yaml: think_s: inf is not a finite number"),
    ("agent.think_s=nan", "configs/agent/simulated.yaml: think_s: nan is not a finite number"),
    ("agent.think_s=100000", "think_s: 100,000 is above the ceiling 86,400"),
    ("panel.attempts=1000000", "attempts: 1,000,000 is above the ceiling 100"),
    ("executor.workers=100000", "workers: 100,000 is above the ceiling 256"),
    ("panel.replacement.max_replacements=1000",
     "configs/panel/demo.yaml: replacement.max_replacements: 1,000 is above the ceiling 10"),
    ("agent=claude-code agent.install.timeout_s=-5",
     "configs/agent/claude-code.yaml: install.timeout_s: -5 is below 0"),
    ("agent=claude-code agent.install.timeout_s=1e9",
     "configs/agent/claude-code.yaml: install.timeout_s: 1,000,000,000.0 is above the "
     "ceiling 86,400"),
    ("analyze=maybe", "configs/config.yaml: analyze: expected true or false, got 'maybe'"),
    ("ceilings=no", "ceilings: expected true or false, got 'no'"),
    # listed twice
    ("panel.eligible=[serve-status-page,serve-status-page]",
     "eligible: task 'serve-status-page' is listed twice"),
    ("panel.arms=[real,sham,real]", "arms: arm 'real' is listed twice"),
    # names that would leave their folder
    ("run=../../elsewhere", "configs/config.yaml: run: '../../elsewhere' is not a plain name"),
    ("resume=/tmp/x", "resume: '/tmp/x' is not a plain name"),
    ("panel.name=../x", "configs/panel: name: '../x' is not a plain name"),
    ("panel.eligible=[../../etc]", "eligible: '../../etc' is not a plain name"),
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
            return fire_exp(*args, timeout=timeout, subprocess_=True)
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


def test_ceilings_false_lifts_the_ceilings_but_not_finiteness() -> None:
    from fire_exp.config import ComponentConfig, run_config_from_dict
    from fire_exp.errors import InputError
    from fire_exp.runner.build import agent_factory

    def config(**extra: object) -> dict[str, object]:
        return {"panel": {"name": "p", "suite": "s", "eligible": ["t"], "arms": ["real"],
                          "attempts": 1000, "portfolio": "fire-core"},
                "agent": {"name": "simulated", "think_s": 1e6}, "environment": {"name": "local"},
                "executor": {"name": "local"}, "run": "r", **extra}

    with pytest.raises(InputError, match="attempts: 1,000 is above the ceiling"):
        run_config_from_dict(config())
    lifted = run_config_from_dict(config(ceilings=False))
    assert lifted.panel.attempts == 1000 and lifted.ceilings is False
    # the agent's settings, where the agent is built: the same permission
    with pytest.raises(InputError, match="think_s: 1,000,000.0 is above the ceiling"):
        agent_factory(lifted.agent)
    assert agent_factory(lifted.agent, ceilings=lifted.ceilings).params["think_s"] == 1e6
    for infinite in (float("inf"), float("nan")):
        with pytest.raises(InputError, match="not a finite number"):
            agent_factory(ComponentConfig("simulated", {"think_s": infinite}), ceilings=False)


@pytest.mark.parametrize(("override", "meant"), [
    ("panel.atempts=3", "panel.attempts"), ("agent.thnk_s=1", "agent.think_s"),
    ("sead=3", "seed"), ("panel.eligble=[serve-status-page]", "panel.eligible")])
def test_a_misspelt_override_key_gets_a_did_you_mean(tmp_path: Path, override: str,
                                                     meant: str) -> None:
    results = tmp_path / "results"
    proc = fire_exp("run", "panel=demo", override, f"results_dir={results}")
    assert f"did you mean {meant}=...?" in one_line_error(proc)
    assert not results.exists()
