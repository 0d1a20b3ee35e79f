"""Layer 2: build a panel's objects from the typed config.

A :class:`Panel` holds everything a run needs, loaded and checked before the first
attempt: the tasks (with digests), the arms' families, the coding portfolio, the analysis
plan's path, the factories of agent and environment, and the randomized schedule.
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fire_exp import __version__
from fire_exp.agents.base import Agent
from fire_exp.agents.simulated import load_script
from fire_exp.config import RunConfig
from fire_exp.environments.base import Environment
from fire_exp.errors import InputError
from fire_exp.paths import ANALYSIS_DIR
from fire_exp.policies.ablation import ablation_arms
from fire_exp.policies.arms import ArmPolicies, build_arm
from fire_exp.policies.loader import Portfolio, load_portfolio
from fire_exp.registry import REGISTRY
from fire_exp.runner.replacement import ReplacementRule
from fire_exp.runner.schedule import ScheduledAttempt, build_schedule
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.model import Task
from fire_exp.tasks.suites import resolve_suite

EnvironmentFactory = Callable[[Task, Path, str], Environment]


@dataclass(frozen=True)
class Panel:
    """A panel ready to run."""

    config: RunConfig
    tasks: dict[str, Task]
    cohorts: dict[str, str]
    portfolio: Portfolio
    controls: Portfolio
    arms: dict[str, ArmPolicies]
    analysis_plan: Path
    schedule: list[ScheduledAttempt]

    @property
    def name(self) -> str:
        return self.config.panel.name

    def make_agent(self) -> Agent:
        return build_agent(self.config)

    def make_environment(self, task: Task, attempt_dir: Path, attempt_id: str) -> Environment:
        factory = REGISTRY.get("environment", self.config.environment.name)
        env: Environment = factory(task, attempt_dir, attempt_id,
                                   **self.config.environment.params)
        return env


def build_agent(config: RunConfig) -> Agent:
    factory = REGISTRY.get("agent", config.agent.name)
    try:
        agent: Agent = factory(**config.agent.params)
    except TypeError as exc:
        raise InputError(f"configs/agent/{config.agent.name}.yaml", "<params>", str(exc),
                         "remove or rename the unknown key") from exc
    return agent


def resolve_plan(name: str) -> Path:
    """An analysis plan's name under ``analysis/`` or a path to a YAML file."""
    for candidate in (ANALYSIS_DIR / f"{name}.yaml", Path(name)):
        if candidate.is_file():
            return candidate.resolve()
    raise InputError("panel.analysis", name, "no analysis plan of that name",
                     f"put it in {ANALYSIS_DIR}/NAME.yaml")


@functools.cache
def versions() -> dict[str, str]:
    """The package versions every attempt record carries."""
    found = {"fire-exp": __version__, "python": platform.python_version()}
    for package in ("numpy", "scipy", "pandas", "docker"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def build_panel(config: RunConfig) -> Panel:
    """Load and check everything the panel names. Raises InputError on bad input."""
    pc = config.panel
    suite = resolve_suite(pc.suite)
    tasks: dict[str, Task] = {}
    for name, _ in pc.tasks:
        path = suite / name
        if not path.is_dir():
            raise InputError(f"configs/panel/{pc.name}.yaml", "eligible/silent",
                             f"task {name!r} not found in {suite}")
        tasks[name] = load_task(path)
    if config.agent.name == "simulated":
        for task in tasks.values():
            if task.simulation_script is None:
                raise InputError(task.path, "simulated.yaml", "missing",
                                 "the simulated agent needs a script beside each task")
            load_script(task.simulation_script)
    portfolio = load_portfolio(pc.portfolio)
    controls = load_portfolio(pc.controls)
    arm_names = ablation_arms(pc.arms, portfolio.families, pc.ablation)
    arms = {arm: build_arm(arm, portfolio, controls) for arm in arm_names}
    build_agent(config)  # fail on a bad agent config now, not in the first attempt
    ReplacementRule.from_config(pc.replacement, f"configs/panel/{pc.name}.yaml")
    REGISTRY.get("environment", config.environment.name)
    schedule = build_schedule(pc.tasks, list(arm_names), pc.attempts, config.seed)
    return Panel(config=config, tasks=tasks, cohorts=dict(pc.tasks), portfolio=portfolio,
                 controls=controls, arms=arms, analysis_plan=resolve_plan(pc.analysis),
                 schedule=schedule)
