"""Shared test helpers: run the CLI as a user would, and find leftover processes; the
hooks that keep the suite race-free under pytest-xdist (``tests/parallel.py``: the
machine-wide names' groups ``GROUPS``, the machine engine's lock)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from fire_exp.environments.inbox import procs
from fire_exp.runner.cleanup import attempt_processes
from tests import llama_build, parallel, timeline

REPO = Path(__file__).resolve().parents[1]


# Commands ``run_cli`` calls through their entry point in this process (the interpreter,
# Hydra and numpy are paid once per worker, not once per call): those that read and write
# files, and ``run``, which puts back what it changes (its SIGTERM handler; its threads
# and attempt processes end with it; Hydra's state is cleared below; checked by
# tests/test_run_in_process.py). ``cleanup`` (Docker), ``hook`` (stdin) and ``view`` keep
# their own process; a test of ``run``'s process itself (a signal, a kill, a timeout)
# starts one.
IN_PROCESS = frozenset({"analyze", "audit-routing", "export-hooks", "freeze", "import",
                        "power", "report", "run", "tasks"})


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600,
            env: dict[str, str] | None = None,
            subprocess_: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``fire-exp ARGS`` from this checkout: a command of ``IN_PROCESS`` through
    ``fire_exp.cli.main`` here (unless ``subprocess_``, or ``FIRE_TEST_CLI=subprocess``
    for all), any other as a subprocess (``timeout`` bounds only a subprocess: in this
    process pytest-timeout does)."""
    subprocess_ = subprocess_ or os.environ.get("FIRE_TEST_CLI") == "subprocess"
    if args and args[0] in IN_PROCESS and not subprocess_:
        return _in_process(list(args), cwd or REPO, env or {})
    full_env = os.environ | {"PYTHONPATH": str(REPO)} | (env or {})
    return subprocess.run([sys.executable, "-m", "fire_exp", *args], cwd=cwd or REPO,
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def _in_process(args: list[str], cwd: Path, env: dict[str, str]
                ) -> subprocess.CompletedProcess[str]:
    """``fire_exp.cli.main(args)`` in ``cwd`` with ``env`` added, its output captured as a
    subprocess's would be; the working folder, the environment and Hydra's global state
    are put back after, whatever happened (nothing of one call reaches the next)."""
    from hydra.core.global_hydra import GlobalHydra

    from fire_exp.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        # As a subprocess would have it: what the command starts (an attempt's hook
        # commands, a CLI) imports this checkout's fire_exp.
        os.environ.update({"PYTHONPATH": str(REPO)} | env)
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse: --help, a usage error
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
            except Exception:  # what the process would die of: its traceback, exit 1
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        GlobalHydra.instance().clear()
    return subprocess.CompletedProcess(["fire-exp", *args], code, out.getvalue(),
                                       err.getvalue())


def marked_pids(marker: str) -> list[int]:
    """Live processes carrying ``FIRE_ATTEMPT=<marker>`` (one attempt's processes)."""
    return [p for p in procs.marked_processes(marker) if procs.is_alive(p)]


@pytest.fixture
def cli():
    return run_cli


def pids_working_under(root: Path) -> list[int]:
    """Live processes whose ``FIRE_WORKDIR`` lies under ``root`` (one test's attempts)."""
    return [p for p in attempt_processes(root) if procs.is_alive(p)]


def pytest_configure(config: pytest.Config) -> None:
    parallel.start_worker(config)
    timeline.register(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    parallel.mark_and_order(config, items)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outside pytest-timeout: a wait for the lock is no test time
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    llama_build.wait(item)  # the llama-server build beside the tests: no test time either
    return (yield from parallel.around_test(item, nextitem))


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("llm") is not None and (why := llama_build.problem()):
        pytest.fail(why)

