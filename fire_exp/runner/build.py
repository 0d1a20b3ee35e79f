"""Build a panel's objects from the typed config, once, before the first attempt.

:func:`build_panel` loads and checks everything the config names and returns a
:class:`Panel` of built objects: the tasks (with digests), the arms' families, the coding
portfolio, the parsed analysis plan, the replacement rule, the executor, and the
factories of agent and environment, whose settings were checked, once, against each
component's settings model (``fire_exp/settings.py``). Nothing downstream reads the
config's components again: ``Panel.config`` stays only as the record of what the panel was
built from (the preregistration hashes it; a Ray worker rebuilds the panel from it).

:func:`prepare_panel` then checks what the agent and the environment need and builds or
checks every task's image, so a panel that cannot run refuses before its first attempt.
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fire_exp import __version__
from fire_exp.agents.base import BoxedAgent, preflight_agent
from fire_exp.agents.simulated import load_script
from fire_exp.analysis.plan import load_plan
from fire_exp.analysis.run import resolve_plan
from fire_exp.arms.build import arm_policies, arm_spec
from fire_exp.arms.place import arm_setup, check_fair
from fire_exp.arms.spec import ArmSpec, resolve_agent_config
from fire_exp.config import ComponentConfig, RunConfig
from fire_exp.errors import InputError
from fire_exp.files import load_yaml
from fire_exp.policies.ablation import ablation_arms
from fire_exp.policies.loader import load_portfolio
from fire_exp.registry import REGISTRY
from fire_exp.runner.model import AgentFactory, EnvironmentFactory, Executor, Panel, Report
from fire_exp.runner.replacement import ReplacementRule
from fire_exp.runner.schedule import build_schedule, build_task_block_schedule
from fire_exp.settings import check_settings
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.model import Task
from fire_exp.tasks.suites import resolve_suite

# Panel and its factories are defined in runner/model.py; they are named here too, as the
# panel this module builds.
__all__ = ["AgentFactory", "EnvironmentFactory", "Panel", "Report", "agent_factory",
           "build_panel", "checked_settings", "environment_factory", "make_executor",
           "prepare_environments", "prepare_panel", "versions"]

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


def checked_settings(kind: str, component: ComponentConfig, *, group: str | None = None,
                     ceilings: bool = True) -> dict[str, Any]:
    """``component``'s settings, checked once against its registered settings model.

    The settings are returned as composed (not the model's values), so what a component is
    built from, the records and the preregistration hashes are the config's own.

    Args:
        kind: ``agent``, ``environment`` or ``executor``.
        component: its registered name and its settings.
        group: the dotted config path the fix names (default: ``kind``).
        ceilings: False lifts the settings' ceilings (``ceilings=false``).

    Raises:
        InputError: naming ``configs/KIND/NAME.yaml``, the key and the fix.
    """
    check_settings(REGISTRY.settings(kind, component.name), component.params,
                   where=f"configs/{kind}/{component.name}.yaml", group=group or kind,
                   ceilings=ceilings)
    return dict(component.params)


def agent_factory(component: ComponentConfig, *, group: str = "agent",
                  ceilings: bool = True) -> AgentFactory:
    """The agent of ``configs/agent/NAME.yaml``, its settings checked; one is made now, so
    what only its constructor can check (a binary on this machine) fails here too."""
    params = checked_settings("agent", component, group=group, ceilings=ceilings)
    factory = AgentFactory(component.name, REGISTRY.get("agent", component.name), params)
    factory.make()
    return factory


def environment_factory(component: ComponentConfig, *, group: str = "environment",
                        ceilings: bool = True) -> EnvironmentFactory:
    """The environment backend of ``configs/environment/NAME.yaml``, its settings checked."""
    params = checked_settings("environment", component, group=group, ceilings=ceilings)
    return EnvironmentFactory(component.name, REGISTRY.get("environment", component.name),
                              params)


def make_executor(component: ComponentConfig, *, ceilings: bool = True) -> Executor:
    """The executor of ``configs/executor/NAME.yaml``, its settings checked."""
    params = checked_settings("executor", component, ceilings=ceilings)
    executor: Executor = REGISTRY.get("executor", component.name)(**params)
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
    return tasks


def _check_scripts(tasks: Mapping[str, Task]) -> None:
    """Every task has a valid script for the simulated agent."""
    for task in tasks.values():
        if task.simulation_script is None:
            raise InputError(task.path, "simulated.yaml", "missing",
                             "the simulated agent needs a script beside each task")
        try:
            load_script(task.simulation_script)
        except (UnicodeDecodeError, RecursionError, ValueError) as exc:  # not an InputError
            raise InputError(task.simulation_script, "<yaml>", "not UTF-8 text, nested too "
                             "deeply, or a number of thousands of digits",
                             "save it as plain UTF-8 YAML") from exc


def _agent_config_file(path: Path) -> ComponentConfig:
    """An agent config file read as Hydra would compose it alone (no interpolation)."""
    data = load_yaml(path, "see configs/agent/*.yaml")
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise InputError(path, "name", "not an agent config", "see configs/agent/*.yaml")
    return ComponentConfig(data["name"], {k: v for k, v in data.items() if k != "name"})


def _arm_components(config: RunConfig, specs: Mapping[str, ArmSpec]
                    ) -> tuple[dict[str, AgentFactory], dict[str, EnvironmentFactory]]:
    """The agent and environment factories of the arms that change their parameters."""
    agents, environments = {}, {}
    for name, spec in specs.items():
        try:
            if spec.agent or spec.agent_config:
                base = config.agent if spec.agent_config is None else \
                    _agent_config_file(resolve_agent_config(spec.agent_config, name))
                agents[name] = agent_factory(ComponentConfig(
                    base.name, {**base.params, **spec.agent}),
                    group=f"panel.declare.{name}.agent", ceilings=config.ceilings)
            if spec.environment:
                environments[name] = environment_factory(ComponentConfig(
                    config.environment.name,
                    {**config.environment.params, **spec.environment}),
                    group=f"panel.declare.{name}.environment", ceilings=config.ceilings)
        except InputError as exc:  # name the arm whose parameters the component refused
            raise InputError("configs/panel", f"declare.{name}", str(exc)) from None
    return agents, environments


def build_panel(config: RunConfig) -> Panel:
    """Load and check everything the panel names. Raises InputError on bad input."""
    pc = config.panel
    where = f"configs/panel/{pc.name}.yaml"
    tasks = _load_tasks(config)
    portfolio = load_portfolio(pc.portfolio)
    controls = load_portfolio(pc.controls)
    plan_path = resolve_plan(pc.analysis, field="panel.analysis").resolve()
    arm_names = list(ablation_arms(pc.arms, portfolio.families, pc.ablation))
    plan = load_plan(plan_path)
    # A sequential plan runs task blocks in a frozen random order (runner/stopping.py).
    schedule = build_task_block_schedule if plan.sequential is not None else build_schedule
    specs = {arm: arm_spec(arm, pc.declare) for arm in arm_names}
    setups = {arm: arm_setup(spec) for arm, spec in specs.items() if spec.declared}
    for setup in setups.values():
        check_fair(setup, tasks)
    arm_agents, arm_environments = _arm_components(config, specs)
    if "simulated" in {config.agent.name, *(f.name for f in arm_agents.values())}:
        _check_scripts(tasks)
    return Panel(
        name=pc.name, seed=config.seed, tasks=tasks, cohorts=dict(pc.tasks),
        portfolio=portfolio, controls=controls,
        arms={arm: arm_policies(spec, portfolio, controls) for arm, spec in specs.items()},
        setups=setups, arm_agents=arm_agents, arm_environments=arm_environments,
        analysis_plan=plan_path, plan=plan,
        replacement=ReplacementRule.from_config(pc.replacement, where,
                                                ceilings=config.ceilings),
        agent=agent_factory(config.agent, ceilings=config.ceilings),
        environment=environment_factory(config.environment, ceilings=config.ceilings),
        executor=make_executor(config.executor, ceilings=config.ceilings),
        schedule=schedule(pc.tasks, arm_names, pc.attempts, config.seed), config=config)


def prepare_panel(panel: Panel, report: Report | None = None) -> None:
    """Before the first attempt: check what each task needs of its box against the
    environment's capabilities, the agent's and the environment's requirements, then
    build or check every task's image. Nothing is recorded; a failure refuses the run.

    Raises:
        PreflightError: a task needs what its box cannot give (a network policy it cannot
            enforce), or the agent or the environment lacks something it needs.
        EnvironmentFailure: a task's image cannot be built or found.
    """
    def stderr(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    tasks = list(panel.tasks.values())
    for environment in [panel.environment, *panel.arm_environments.values()]:
        environment.check_tasks(tasks)  # a task that needs what its box cannot give
    for factory in [panel.agent, *panel.arm_agents.values()]:
        preflight_agent(factory.make(), panel.environment.capabilities)
    prepare_nodes = getattr(panel.executor, "prepare", None)
    if prepare_nodes is not None and prepare_nodes(panel, report or stderr):
        return  # a cluster: every node checked and prepared its own environments
    prepare_environments(panel, report or stderr)


def prepare_environments(panel: Panel, report: Report) -> None:
    """On the machine that runs the attempts: every environment's preflight, its task
    images, and what a boxed agent adds to them. Raises PreflightError, EnvironmentFailure."""
    tasks = list(panel.tasks.values())
    environments = [panel.environment, *panel.arm_environments.values()]
    for environment in environments:
        environment.preflight()
        environment.prepare(tasks, report)
    for factory in [panel.agent, *panel.arm_agents.values()]:
        agent = factory.make()
        if isinstance(agent, BoxedAgent):  # e.g. an agent CLI installed into every task image
            for environment in environments:
                agent.prepare_boxes(environment.backend_class, tasks, environment.params)
