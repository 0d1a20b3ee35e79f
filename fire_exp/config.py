"""Typed configuration, converted once from Hydra's DictConfig at the entry point.

The core never sees a DictConfig. Each group of ``configs/`` maps to one dataclass here;
the keys of a component's group (agent, environment, executor) but its name land in
``params`` as composed, and this module knows none of them: the component's settings model
checks them where the registry builds it (``runner/build.py``, ``fire_exp/settings.py``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from fire_exp.arms.spec import ArmSpec, arm_specs_from_dict
from fire_exp.errors import InputError
from fire_exp.files import unknown_key_message


@dataclass(frozen=True)
class PanelConfig:
    """A panel: tasks by cohort, arms, attempts per task and arm, portfolio, plan."""

    name: str
    suite: str
    eligible: tuple[str, ...]
    silent: tuple[str, ...]
    arms: tuple[str, ...]
    attempts: int
    portfolio: str
    controls: str = "controls"
    analysis: str = "default"
    replacement: dict[str, Any] = field(default_factory=dict)
    ablation: bool = False  # add a leave-one-family-out arm per family (policies/ablation.py)
    # Arms declared by what they change (fire_exp/arms); an arm of ``arms`` not declared
    # here is a registered preset.
    declare: dict[str, ArmSpec] = field(default_factory=dict)
    # Spending caps (runner/stopping.py): operational, so not hashed with the experiment;
    # a run stopped by one resumes under a larger one.
    budget_usd: float | None = None
    budget_attempts: int | None = None
    # Each task's agent time budget ([agent].timeout_sec) times this, for every arm alike
    # (Harbor's --agent-timeout-multiplier): a slow local model gets more time, a panel in
    # a test less. Part of the experiment, so hashed (when not 1).
    agent_timeout_multiplier: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        """The panel as composed values (what the config hash and the manifest hash).

        A panel declaring no arms hashes as it did before arms could be declared, so the
        paper's panels keep their config hash.
        """
        values = asdict(self)
        if not self.declare:
            values.pop("declare")
        for key in ("budget_usd", "budget_attempts"):  # spending caps are not the experiment
            values.pop(key)
        if self.agent_timeout_multiplier == 1.0:  # the paper's panels keep their hash
            values.pop("agent_timeout_multiplier")
        return values

    @property
    def tasks(self) -> list[tuple[str, str]]:
        """(task, cohort) in panel order."""
        return [(t, "eligible") for t in self.eligible] + [(t, "silent") for t in self.silent]


@dataclass(frozen=True)
class ComponentConfig:
    """An agent, environment or executor: a registered name plus its parameters."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def digest(self) -> str:
        text = json.dumps({"name": self.name, "params": self.params}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class RunConfig:
    """Everything ``fire-exp run`` needs, resolved."""

    panel: PanelConfig
    agent: ComponentConfig
    environment: ComponentConfig
    executor: ComponentConfig
    seed: int
    run: str
    results_dir: str
    prereg: str | None = None
    analyze: bool = True
    resume: str | None = None  # the run being resumed (``run`` is then the same name)
    cost_pilot: str | None = None  # attempts to project the cost from (runner/projection.py)
    # The file each config group was composed from (Hydra's choices, e.g. panel -> demo),
    # recorded at the entry point so the preregistration can hash the files anywhere
    # (a Ray worker rebuilds the panel without Hydra).
    choices: dict[str, str] = field(default_factory=dict)
    # Neither run= nor resume= given: ``run`` is new_run's name, and a folder of that name
    # already there (another run started in the same second) is not this run's.
    fresh: bool = False
    # ceilings=false: lift every ceiling (the panel's here, the components' settings' when
    # they are built) on purpose; a permission, not the experiment (not hashed).
    ceilings: bool = True

    def config_hash(self) -> str:
        """SHA-256 of what defines the experiment (not where or when it runs)."""
        text = json.dumps({"panel": self.panel.as_dict(), "agent": asdict(self.agent),
                           "environment": asdict(self.environment), "seed": self.seed},
                          sort_keys=True, default=list)
        return hashlib.sha256(text.encode()).hexdigest()


def _require(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in data or data[key] is None:
        raise InputError(f"configs/{where}", key, "missing", f"set {where}.{key}")
    value = data[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise InputError(f"configs/{where}", key,
                         f"expected {kind.__name__}, got {type(value).__name__} {value!r}")
    return value


def _names(data: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = data.get(key) or []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InputError(f"configs/{where}", key, "expected a list of names")
    return tuple(value)


# Ceilings of the panel's own numbers: a value above one is far more likely a typo (an extra
# zero) than an experiment, and would exhaust the machine or the budget. ``ceilings=false``
# lifts them on purpose. A component's settings carry their own (``fire_exp.settings``),
# checked where the component is built.
ATTEMPTS_CEILING = 100  # attempts per task and arm
SCHEDULE_CEILING = 100_000  # attempts in one panel (tasks x arms x attempts)
LIFT = "or set ceilings=false to lift the ceiling on purpose"


def _check_finite(value: Any, where: str, key: str) -> None:
    """Refuse NaN or an infinity anywhere in a value (nested lists and mappings too)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"configs/{where}", key, f"{value} is not a finite number",
                         f"set {where}.{key} to a finite number")
    if isinstance(value, dict):
        for sub, item in value.items():
            _check_finite(item, where, f"{key}.{sub}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check_finite(item, where, f"{key}[{i}]")


# A name that becomes a file or folder name (a panel, a run, a task of a suite): one
# path component, never '.' or '..', so it stays inside the folder it is meant for.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")


def check_name(value: str, where: str, key: str) -> str:
    """Refuse a name that would leave its folder (``../x``, ``a/b``, ``/tmp``) or is empty.

    >>> check_name("fire-mini", "panel", "name")
    'fire-mini'
    """
    if not _NAME.fullmatch(value) or ".." in value:
        raise InputError(f"configs/{where}", key, f"{value!r} is not a plain name",
                         "use letters, digits, '.', '_', '+' and '-', starting with a letter "
                         "or digit; no '/' and no '..'")
    return value


def _component(data: dict[str, Any], where: str) -> ComponentConfig:
    """A component's name and its settings as composed; the registered component's
    settings model checks them when the panel is built (``runner/build.py``)."""
    if not isinstance(data, dict):
        raise InputError(f"configs/{where}", "<group>", "expected a mapping")
    name = _require(data, "name", str, where)
    return ComponentConfig(name=name, params={k: v for k, v in data.items() if k != "name"})


def _task_names(data: dict[str, Any], key: str) -> tuple[str, ...]:
    """A cohort's tasks: plain names, each listed once."""
    names = _names(data, key, "panel")
    seen: set[str] = set()
    for name in names:
        check_name(name, "panel", key)
        if name in seen:
            raise InputError("configs/panel", key, f"task {name!r} is listed twice",
                             "list each task once; attempts= sets the attempts per task")
        seen.add(name)
    return names


def panel_from_dict(data: dict[str, Any], *, ceilings: bool = True) -> PanelConfig:
    """Build a PanelConfig from the ``panel`` group, checking every field.

    A key the panel does not name is refused, with the key meant: ``+panel.atempts=1``
    (a typo added with ``+``) once vanished, and the panel ran its own attempts.
    """
    where = "panel"
    known = [f.name for f in fields(PanelConfig)]
    for key in data:
        if key not in known:
            raise InputError("configs/panel", str(key), unknown_key_message(str(key), known),
                             "panel keys: " + ", ".join(known))
    arms = _names(data, "arms", where)
    if not arms:
        raise InputError("configs/panel", "arms", "no arms", "list the arms of the panel")
    twice = sorted({arm for arm in arms if arms.count(arm) > 1})
    if twice:
        raise InputError("configs/panel", "arms", f"arm {twice[0]!r} is listed twice",
                         "list each arm once")
    attempts = _require(data, "attempts", int, where)
    if attempts < 1:
        raise InputError("configs/panel", "attempts", f"{attempts} < 1", "use at least 1")
    if attempts > ATTEMPTS_CEILING and ceilings:
        raise InputError("configs/panel", "attempts", f"{attempts:,} is above the ceiling "
                         f"{ATTEMPTS_CEILING:,}",
                         f"set panel.attempts to {ATTEMPTS_CEILING:,} or less, {LIFT}")
    eligible, silent = _task_names(data, "eligible"), _task_names(data, "silent")
    if not eligible and not silent:
        raise InputError("configs/panel", "eligible/silent", "no tasks")
    _check_finite(dict(data.get("replacement") or {}), where, "replacement")
    declare = arm_specs_from_dict(data.get("declare"))
    both = set(eligible) & set(silent)
    if both:
        raise InputError("configs/panel", "silent", f"{sorted(both)} are also eligible")
    size = (len(eligible) + len(silent)) * len(arms) * attempts
    if size > SCHEDULE_CEILING and ceilings:
        raise InputError("configs/panel", "attempts", f"the panel schedules {size:,} attempts, "
                         f"above the ceiling {SCHEDULE_CEILING:,}",
                         f"schedule fewer tasks, arms or attempts, {LIFT}")
    return PanelConfig(
        name=check_name(_require(data, "name", str, where), where, "name"),
        suite=_require(data, "suite", str, where),
        eligible=eligible, silent=silent, arms=arms, attempts=attempts,
        portfolio=_require(data, "portfolio", str, where),
        controls=str(data.get("controls", "controls")),
        analysis=str(data.get("analysis", "default")),
        replacement=dict(data.get("replacement") or {}),
        ablation=_flag(data, "ablation", where), declare=declare,
        budget_usd=_budget(data, "budget_usd", float),
        budget_attempts=_budget(data, "budget_attempts", int),
        agent_timeout_multiplier=_multiplier(data, "agent_timeout_multiplier"))


def _multiplier(data: dict[str, Any], key: str) -> float:
    """A positive, finite factor (1 when unset)."""
    value = data.get(key, 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0 < value < math.inf:
        raise InputError("configs/panel", key, f"expected a positive number, got {value!r}",
                         f"set panel.{key}=<factor> (0.5 halves every task's agent time "
                         "budget) or leave it unset")
    return float(value)


def _budget(data: dict[str, Any], key: str, kind: type) -> Any:
    """A spending cap: None (no cap) or a positive number (``budget_attempts`` whole)."""
    value = data.get(key)
    if value is None:
        return None
    whole = kind is int
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float) \
            or not 0 < value < math.inf:  # inf is no cap: leave it unset
        what = "a whole number of attempts" if whole else "a positive amount in US dollars"
        raise InputError("configs/panel", key, f"expected {what}, got {value!r}",
                         f"set panel.{key}=<{'N' if whole else 'USD'}> or leave it unset")
    return kind(value)


def _flag(data: dict[str, Any], key: str, where: str, default: bool = False) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise InputError(f"configs/{where}", key, f"expected true or false, got {value!r}")
    return value


def run_config_from_dict(data: dict[str, Any],
                         choices: dict[str, str] | None = None) -> RunConfig:
    """Build the typed RunConfig from a resolved config (``OmegaConf.to_container``) and
    the file each config group was chosen from (Hydra's runtime choices)."""
    for group in ("panel", "agent", "environment", "executor"):
        if not isinstance(data.get(group), dict):
            raise InputError("configs/config.yaml", group, "missing config group",
                             f"choose one, e.g. {group}=...")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError("configs/config.yaml", "seed", f"expected an integer, got {seed!r}")
    if seed < 0:
        raise InputError("configs/config.yaml", "seed", f"{seed} is negative",
                         "use a seed of 0 or more")
    run, resume = _run_name(data)
    ceilings = _flag(data, "ceilings", "config.yaml", default=True)
    return RunConfig(
        panel=panel_from_dict(data["panel"], ceilings=ceilings),
        agent=_component(data["agent"], "agent"),
        environment=_component(data["environment"], "environment"),
        executor=_component(data["executor"], "executor"), seed=seed, ceilings=ceilings,
        run=run, results_dir=str(data.get("results_dir", "results")),
        prereg=_optional_text(data, "prereg"),
        analyze=_flag(data, "analyze", "config.yaml", default=True),
        resume=resume, cost_pilot=_optional_text(data, "cost_pilot"),
        choices=dict(choices or {}),
        fresh=data.get("run") in (None, "") and data.get("resume") in (None, ""))


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise InputError("configs/config.yaml", key, f"expected a path, got {value!r}",
                         f"set {key}=PATH or leave it unset")
    return value


def _run_name(data: dict[str, Any]) -> tuple[str, str | None]:
    """(the run's folder name, the run resumed or None) from ``run``, ``resume``, ``new_run``."""
    run, resume = data.get("run"), data.get("resume")
    run = None if run in (None, "") else str(run)
    resume = None if resume in (None, "") else str(resume)
    if resume is not None and run is not None and run != resume:
        raise InputError("configs/config.yaml", "resume",
                         f"run={run} and resume={resume} disagree", "give one of them")
    name = resume or run or str(data.get("new_run") or "run")
    check_name(name, "config.yaml", "resume" if resume else "run" if run else "new_run")
    return name, resume
