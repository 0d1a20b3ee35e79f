"""Build a panel's objects from the typed config, once, before the first attempt.

:func:`build_panel` loads and checks everything the config names and returns a
:class:`Panel` of built objects: the tasks (with digests), the arms' families, the coding
portfolio, the parsed analysis plan, the replacement rule, the executor, and the
factories of agent and environment, whose parameters were checked against their
constructors. Nothing downstream reads the config's components again: ``Panel.config``
stays only as the record of what the panel was built from (the preregistration hashes
it; a Ray worker rebuilds the panel from it).

:func:`prepare_panel` then checks what the agent and the environment need and builds or
checks every task's image, so a panel that cannot run refuses before its first attempt.
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import sys

from fire_exp import __version__
from fire_exp.agents.base import BoxedAgent, preflight_agent
from fire_exp.agents.simulated import load_script
from fire_exp.analysis.plan import load_plan
from fire_exp.analysis.run import resolve_plan
from fire_exp.config import ComponentConfig, RunConfig
from fire_exp.errors import InputError
from fire_exp.policies.ablation import ablation_arms
from fire_exp.policies.arms import build_arm
from fire_exp.policies.loader import load_portfolio
from fire_exp.registry import REGISTRY
from fire_exp.runner.model import AgentFactory, EnvironmentFactory, Executor, Panel, Report
from fire_exp.runner.params import checked_params
from fire_exp.runner.replacement import ReplacementRule
from fire_exp.runner.schedule import build_schedule
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.model import Task
from fire_exp.tasks.suites import resolve_suite

# Panel and its factories are defined in runner/model.py; they are named here too, as the
# panel this module builds.
__all__ = ["AgentFactory", "EnvironmentFactory", "Panel", "Report", "agent_factory",
           "build_panel", "environment_factory", "make_executor", "prepare_panel", "versions"]

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


def agent_factory(component: ComponentConfig) -> AgentFactory:
    """The agent of ``configs/agent/NAME.yaml``; one is made now, so bad settings fail here."""
    where = f"configs/agent/{component.name}.yaml"
    make = REGISTRY.get("agent", component.name)
    factory = AgentFactory(component.name, make, checked_params(make, component.params, where))
    factory.make()
    return factory


def environment_factory(component: ComponentConfig) -> EnvironmentFactory:
    """The environment backend of ``configs/environment/NAME.yaml``, parameters checked."""
    where = f"configs/environment/{component.name}.yaml"
    backend = REGISTRY.get("environment", component.name)
    params = checked_params(backend, component.params, where, skip=3)
    return EnvironmentFactory(component.name, backend, params)


def make_executor(component: ComponentConfig) -> Executor:
    """The executor of ``configs/executor/NAME.yaml``."""
    where = f"configs/executor/{component.name}.yaml"
    make = REGISTRY.get("executor", component.name)
    try:
        executor: Executor = make(**checked_params(make, component.params, where))
    except ValueError as exc:
        raise InputError(where, "<params>", str(exc)) from exc
    return executor


def _load_tasks(config: RunConfig) -> dict[str, Task]:
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
            try:
                load_script(task.simulation_script)
            except (UnicodeDecodeError, RecursionError, ValueError) as exc:  # not InputError
                if isinstance(exc, InputError):
                    raise
                raise InputError(task.simulation_script, "<yaml>", "not UTF-8 text, nested "
                                 "too deeply, or a number of thousands of digits",
                                 "save it as plain UTF-8 YAML") from None
    return tasks


def build_panel(config: RunConfig) -> Panel:
    """Load and check everything the panel names. Raises InputError on bad input."""
    pc = config.panel
    where = f"configs/panel/{pc.name}.yaml"
    tasks = _load_tasks(config)
    portfolio = load_portfolio(pc.portfolio)
    controls = load_portfolio(pc.controls)
    plan_path = resolve_plan(pc.analysis, field="panel.analysis").resolve()
    arm_names = list(ablation_arms(pc.arms, portfolio.families, pc.ablation))
    return Panel(
        name=pc.name, seed=config.seed, tasks=tasks, cohorts=dict(pc.tasks),
        portfolio=portfolio, controls=controls,
        arms={arm: build_arm(arm, portfolio, controls) for arm in arm_names},
        analysis_plan=plan_path, plan=load_plan(plan_path),
        replacement=ReplacementRule.from_config(pc.replacement, where),
        agent=agent_factory(config.agent), environment=environment_factory(config.environment),
        executor=make_executor(config.executor),
        schedule=build_schedule(pc.tasks, arm_names, pc.attempts, config.seed), config=config)


def prepare_panel(panel: Panel, report: Report | None = None) -> None:
    """Before the first attempt: check the agent's and the environment's requirements, then
    build or check every task's image. Nothing is recorded; a failure refuses the run.

    Raises:
        PreflightError: the agent or the environment lacks something it needs.
        EnvironmentFailure: a task's image cannot be built or found.
    """
    def stderr(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    agent = panel.agent.make()
    tasks = list(panel.tasks.values())
    preflight_agent(agent, panel.environment.name)
    panel.environment.preflight()
    panel.environment.prepare(tasks, report or stderr)
    if isinstance(agent, BoxedAgent):  # e.g. an agent CLI installed into every task image
        agent.prepare_boxes(panel.environment.name, tasks, panel.environment.params)
