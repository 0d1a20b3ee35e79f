"""Helpers of the runner tests: a small panel, test doubles, ``fire-exp run`` of it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.agents.base import AgentOutcome, ProviderError
from fire_exp.agents.session import AgentSession, AgentTimeout
from fire_exp.config import ComponentConfig, PanelConfig, RunConfig
from fire_exp.environments.base import EnvironmentFailure
from fire_exp.environments.local import LocalEnvironment
from fire_exp.policies.arms import ARMS
from fire_exp.registry import REGISTRY
from fire_exp.runner.cleanup import attempt_processes
from fire_exp.runner.store import CRASH_ENV
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
# Two tasks with rewards that differ across arms under the simulated agent (seed 0).
SMALL = ["panel.name=rt", "panel.eligible=[serve-status-page]",
         "panel.silent=[csv-column-stats]", "panel.attempts=1", "analyze=false",
         "executor.workers=2"]


def cli(*args: str, results: Path, env: dict[str, str] | None = None,
        timeout: float = 120, subprocess_: bool = False) -> subprocess.CompletedProcess[str]:
    """``fire-exp run`` of this worktree on the small panel: in this process (``run_cli``:
    the interpreter, Hydra and the imports paid once per worker), or as a subprocess
    (``subprocess_``) where the process is what is tested: the store's crash hook
    (``FIRE_EXP_CRASH_AT``) SIGKILLs it, a Ray driver joins a cluster."""
    if env and CRASH_ENV in env and not subprocess_:
        raise ValueError(f"{CRASH_ENV} SIGKILLs the process that runs: pass subprocess_=True")
    if not subprocess_:
        return run_cli("run", *SMALL, f"results_dir={results}", *args, env=env)
    return subprocess.run([sys.executable, "-m", "fire_exp", "run", *SMALL,
                           f"results_dir={results}", *args], cwd=ROOT, env=cli_env(env),
                          capture_output=True, text=True, timeout=timeout)


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRE_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra or {})
    return env


def leftovers(root: Path) -> dict[int, str]:
    """Attempt processes still running with a working folder under ``root``."""
    return attempt_processes(root)


# --- test doubles, registered once per session -------------------------------------------

class Script:
    """What the doubles do, keyed by attempt id (tests fill these sets)."""

    env_fails: set[str] = set()
    provider_fails: set[str] = set()
    times_out: set[str] = set()
    silent: set[str] = set()


class FlakyEnvironment(LocalEnvironment):
    """The local environment, whose start fails for the attempt ids in Script.env_fails."""

    def start(self) -> None:
        if self.attempt_id in Script.env_fails:
            raise EnvironmentFailure(f"test double: {self.attempt_id} cannot start")
        super().start()


class ScriptedAgent:
    """Does nothing (like nop), or fails as Script says for its attempt id."""

    name = "scripted"
    tier: str | None = None

    def __init__(self, **_: object) -> None:
        pass

    def run(self, session: AgentSession, *, rng: object) -> AgentOutcome:
        attempt = session.env.attempt_id
        if attempt in Script.silent:
            return AgentOutcome()  # never reaches the policy runtime (hooks not installed)
        session.begin()
        if attempt in Script.provider_fails:
            raise ProviderError("test double: rate limited", before_action=True)
        if attempt in Script.times_out:
            raise AgentTimeout("test double: out of time")
        session.bash("true")
        while session.stop() is not None:
            pass
        return AgentOutcome()


@pytest.fixture(scope="session", autouse=True)
def _doubles() -> None:
    for kind, name, target in (("environment", "flaky", FlakyEnvironment),
                               ("agent", "scripted", ScriptedAgent)):
        if name not in REGISTRY.names(kind):
            REGISTRY.register(kind, name, target)


@pytest.fixture()
def script() -> Iterator[type[Script]]:
    """``Script``, empty; emptied again after the test, so a test of the same worker that
    does not ask for it meets no failure planted here."""
    _empty_script()
    yield Script
    _empty_script()


def _empty_script() -> None:
    for field in ("env_fails", "provider_fails", "times_out", "silent"):
        setattr(Script, field, set())


def run_config(tmp: Path, *, arms: tuple[str, ...] = ARMS, replacement: dict | None = None,
               agent: str = "scripted", environment: str = "flaky", workers: int = 2,
               tasks: tuple[str, ...] = ("csv-column-stats",), portfolio: str = "fire-core",
               run: str = "t") -> RunConfig:
    """A one-task panel of the bundled suite with the test doubles."""
    return RunConfig(
        panel=PanelConfig(name="rt", suite="fire-mini", eligible=(), silent=tasks, arms=arms,
                          attempts=1, portfolio=portfolio, analysis="demo",
                          replacement=replacement or {}),
        agent=ComponentConfig(agent), environment=ComponentConfig(environment),
        executor=ComponentConfig("local", {"workers": workers}), seed=0, run=run,
        results_dir=str(tmp))
