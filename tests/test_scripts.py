"""scripts/test (the README's test command) brings what a fresh machine lacks, in order,
and .ci/run calls exactly it. Run against stand-in commands: nothing is installed here."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests import llama_build

ROOT = Path(__file__).resolve().parents[1]


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/bash\necho \"{name} $*\" >> {folder}/calls\n{body}\n")
    path.chmod(0o755)


PYTEST = "python -m pytest -q --durations=10 -n 4 --dist loadgroup --no-loadscope-reorder"
FAST = '-m not docker and not browser and not ray and not llm and not cli'


def _run(tmp_path: Path, docker_ok: bool, have: tuple[str, ...] = (
        "mmdebstrap", "chromedriver", "pdflatex"), args: tuple[str, ...] = ("tests/stats", "-x"),
         pytest_exit: int = 0, workers: str | None = None, build: str = "true",
         env: dict[str, str] | None = None,
         ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    for name in ("fire-exp", "apt-get", *have):
        _stub(tmp_path, name, "true")
    nproc = tmp_path / "nproc"  # two cores: four workers (not a call the script makes)
    nproc.write_text("#!/bin/bash\necho 2\n")
    nproc.chmod(0o755)
    # python: pip succeeds; pytest notes its bytecode settings and exits with ``pytest_exit``.
    bytecode = ('echo "PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX-unset} '
                f'PYTHONDONTWRITEBYTECODE=${{PYTHONDONTWRITEBYTECODE-unset}}" > {tmp_path}/bytecode')
    _stub(tmp_path, "python", f'[ "$2" = pytest ] && {{ {bytecode}; exit {pytest_exit}; }}; true')
    _stub(tmp_path, "docker", "true" if docker_ok else "exit 1")
    # A stand-in checkout: the real script, and stubs for the llama.cpp steps.
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / ".ci").mkdir()
    shutil.copy2(ROOT / "scripts" / "test", repo / "scripts" / "test")
    _stub(repo / ".ci", "llama-server", build)
    (repo / ".ci" / "calls").symlink_to(tmp_path / "calls")
    # Only the stand-ins and the few tools the script itself uses: what is not stubbed is
    # missing, whatever this machine has installed.
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("bash", "id", "dirname", "mktemp", "setsid", "mv", "cat", "tail", "rm"):
        (tools / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    # The defaults: no worker count, no bytecode cache named (scripts/test sets one).
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("FIRE_TEST_WORKERS", "PYTHONPYCACHEPREFIX")}
    full_env |= {"PATH": f"{tmp_path}:{tools}"} | (
        {"FIRE_TEST_WORKERS": workers} if workers else {}) | (env or {})
    proc = subprocess.run([str(repo / "scripts" / "test"), *args], env=full_env,
                          capture_output=True, text=True, timeout=60)
    calls = tmp_path / "calls"
    return proc, calls.read_text().splitlines() if calls.is_file() else []


def test_the_test_command_installs_bootstraps_then_runs_pytest(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, docker_ok=True)
    assert proc.returncode == 0, proc.stderr
    # The llama.cpp build runs beside pytest: after the set-up, in either order with it.
    assert calls[:3] == ["docker info", "python -m pip install -q -e .[test]",
                         "fire-exp images bootstrap"]
    assert sorted(calls[3:]) == sorted(["llama-server ", f"{PYTEST} tests/stats -x"])
    assert "scripts/test: set-up" in proc.stderr and "scripts/test: tests" in proc.stderr
    assert "scripts/test: llama-server" in proc.stderr


def test_a_failed_llama_build_fails_the_run_with_its_log(tmp_path: Path) -> None:
    proc, _ = _run(tmp_path, docker_ok=True, build="echo 'cmake: no compiler'; exit 3")
    assert proc.returncode == 1, proc.stderr
    assert "llama-server build failed" in proc.stderr and "cmake: no compiler" in proc.stderr


def test_the_model_tests_wait_for_the_build_and_fail_on_its_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Item:  # what llama_build reads of a test: its llm marker
        def get_closest_marker(self, name: str) -> object:
            return object() if name == "llm" else None

    monkeypatch.setenv("FIRE_LLAMA_BUILD", str(tmp_path))
    (tmp_path / "log").write_text("step 1\nld: cannot find -lssl\n")
    done = threading.Timer(0.3, lambda: (tmp_path / "status").write_text("2\n"))
    done.start()
    llama_build.wait(Item(), poll_s=0.05)  # type: ignore[arg-type]
    assert (tmp_path / "status").exists()  # it waited for the build's end
    why = llama_build.problem()
    assert why is not None and "status 2" in why and "cannot find -lssl" in why
    (tmp_path / "status").write_text("0\n")
    assert llama_build.problem() is None


def test_the_fast_tier_sets_nothing_up_and_leaves_out_what_needs_a_machine(
        tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, docker_ok=False, args=("--fast", "tests/stats"))
    assert proc.returncode == 0, proc.stderr
    # No Docker check, no pip, no base image: pytest alone, the heavy markers left out;
    # three workers a core (two cores here), not two.
    assert calls == [f"{PYTEST.replace('-n 4', '-n 6')} {FAST} tests/stats"]


def test_pytest_caches_compiled_modules_once_outside_the_checkout(tmp_path: Path) -> None:
    # A shell's PYTHONDONTWRITEBYTECODE had every worker compile and rewrite every module.
    home = tmp_path / "home"
    env = {"PYTHONDONTWRITEBYTECODE": "1", "HOME": str(home), "XDG_CACHE_HOME": ""}
    for tier, args in (("fast", ("--fast", "tests/stats")), ("full", ("tests/stats",))):
        (tmp_path / tier).mkdir()
        proc, _ = _run(tmp_path / tier, docker_ok=True, args=args, env=env)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / tier / "bytecode").read_text().split() == [
            f"PYTHONPYCACHEPREFIX={home}/.cache/fire-exp/pycache", "PYTHONDONTWRITEBYTECODE=unset"]
    (tmp_path / "own").mkdir()
    _run(tmp_path / "own", docker_ok=True, env=env | {"PYTHONPYCACHEPREFIX": "/elsewhere"})
    assert "PYTHONPYCACHEPREFIX=/elsewhere" in (tmp_path / "own" / "bytecode").read_text()


def test_a_fast_tier_with_no_test_in_it_passes_and_says_so(tmp_path: Path) -> None:
    proc, _ = _run(tmp_path, docker_ok=True, args=("--fast", "tests/view"), pytest_exit=5)
    assert proc.returncode == 0 and "no test of the fast tier here" in proc.stderr


def test_a_full_run_that_selects_no_test_fails_and_says_why(tmp_path: Path) -> None:
    proc, _ = _run(tmp_path, docker_ok=True, args=("-m", "nothing"), pytest_exit=5)
    assert proc.returncode == 5 and "pytest selected no test (exit 5)" in proc.stderr


def test_a_failing_run_keeps_pytests_exit_status(tmp_path: Path) -> None:
    proc, _ = _run(tmp_path, docker_ok=True, pytest_exit=1)
    assert proc.returncode == 1 and "scripts/test: tests" in proc.stderr


def test_no_worker_runs_pytest_in_one_process(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, docker_ok=True, workers="0")
    assert proc.returncode == 0, proc.stderr
    assert [c for c in calls if c.startswith("python -m pytest")] == [
        "python -m pytest -q --durations=10 tests/stats -x"]


def test_the_test_command_installs_what_the_tests_need_from_debian(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, docker_ok=True, have=())
    assert proc.returncode == 0, proc.stderr
    install = [c for c in calls if c.startswith("apt-get install")]
    assert calls[1] == "apt-get update -qq" and len(install) == 1
    assert install[0].split()[-5:] == ["mmdebstrap", "chromium", "chromium-driver",
                                       "texlive-latex-base", "texlive-latex-recommended"]


def test_the_test_command_fails_without_docker(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, docker_ok=False)
    assert proc.returncode == 1 and "need a running Docker engine" in proc.stderr
    assert calls == ["docker info"]


def shell_commands(script: str) -> list[str]:
    """The commands of a shell script, one per line, comments left out (words re-joined
    by one space, quotes removed)."""
    commands = []
    for number, line in enumerate(script.splitlines(), 1):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:  # a quote spanning lines: the check cannot read it
            raise AssertionError(f".ci/run line {number}: {exc}") from exc
        if words:
            commands.append(" ".join(words))
    return commands


def ci_problems(script: str) -> list[str]:
    """What .ci/run (``script``) does not do of what CI must: refuse a machine without
    Docker, lint and type-check, then call the test command, exactly and last."""
    commands = shell_commands(script)
    problems = []
    if not any(c.startswith("if ! docker info") for c in commands) or "exit 1" not in commands:
        problems.append("no Docker check that exits 1")
    for stage in ("stage lint ruff check fire_exp tests portfolios benchmarks",
                  "stage type check mypy"):
        if stage not in commands:
            problems.append(f"no command {stage!r}")
    if not commands or commands[-1] != "scripts/test":
        problems.append(f"the last command is {commands[-1:]}, not scripts/test")
    others = [c for c in commands[:-1] if "pytest" in c or "scripts/test" in c]
    if others:
        problems.append(f"tests run besides the test command: {others}")
    return problems


def test_ci_calls_exactly_the_test_command() -> None:
    assert ci_problems((ROOT / ".ci" / "run").read_text()) == []


def test_a_ci_run_that_says_so_only_in_comments_is_caught(tmp_path: Path) -> None:
    real = (ROOT / ".ci" / "run").read_text()
    (tmp_path / "run").write_text("".join(f"# {line}\n" for line in real.splitlines()))
    assert len(ci_problems((tmp_path / "run").read_text())) == 4  # nothing is done
    no_docker = real.replace("if ! docker info", "# if ! docker info").replace(
        "  exit 1\nfi", "  true\n")
    assert ci_problems(no_docker) == ["no Docker check that exits 1"]
    assert ci_problems(real + "# scripts/test --fast\n") == []
    assert ci_problems(real.replace("scripts/test", "scripts/test --fast")) == [
        "the last command is ['scripts/test --fast'], not scripts/test"]
