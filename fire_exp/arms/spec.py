"""An arm as the panel config declares it: a name and what it changes.

``panel.declare`` maps an arm's name to what it changes against the panel's defaults::

    declare:
      agents_md:
        description: an AGENTS.md in the working folder
        files: {AGENTS.md: arms/agents-md.md}
      no_file: {description: nothing placed}

Each field is one kind of change:

- ``policies``: the registered arm whose policies it runs (``real``, ``sham``,
  ``always_verify``, ``reconsider``, ``real-minus-FAMILY``; ``none``, the default, runs none);
  ``portfolio`` and ``controls`` swap the folders those policies are built from.
- ``agent_config``: another agent config (``configs/agent/NAME.yaml`` or a path), in place of
  the panel's: one harness against another (``simulated``, ``openai``, ``codex``, ...).
- ``agent``: agent parameters over the panel's agent config (or the arm's ``agent_config``):
  ``model``, ``temperature``, ``max_steps``, ``tier``, ..., checked against the agent's
  constructor.
- ``instruction``: text added after the task's instruction (the agent receives both; the
  policies keep deciding on the task's own text).
- ``files``: files placed in the task's working folder before the agent starts, ``path in
  the working folder -> source file`` (relative sources resolve under ``configs/``, then
  the current folder). Never under ``tests/``, ``logs/`` or ``solution/``, never outside
  the working folder, never a file the verifier ships (:func:`fire_exp.arms.place`).
- ``environment``: environment parameters over the panel's environment config, among
  :data:`SAFE_ENVIRONMENT_PARAMS` only.

An arm listed in ``panel.arms`` and not declared is a preset: a registered arm (the paper's
five, the ablation arms), which changes its policies and nothing else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from fire_exp.errors import InputError

__all__ = ["FORBIDDEN_FOLDERS", "NO_POLICIES", "SAFE_ENVIRONMENT_PARAMS", "ArmSpec",
           "arm_specs_from_dict", "check_file_destination", "preset", "resolve_agent_config",
           "resolve_source"]

NO_POLICIES = "none"
# What the verifier reads or the harness owns: an arm may place nothing there.
FORBIDDEN_FOLDERS = ("tests", "logs", "solution")
# Environment parameters an arm may change: how many processes the box may run and
# which network a task allowed one joins; never the image, nor where results land.
SAFE_ENVIRONMENT_PARAMS = frozenset({"pids_limit", "public_network"})
_FIELDS = ("description", "policies", "portfolio", "controls", "agent_config", "agent",
           "instruction", "files", "environment")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_WHERE = "configs/panel"


@dataclass(frozen=True)
class ArmSpec:
    """What one arm changes against the panel's defaults (see the module docstring).

    Attributes:
        name: the arm's name in the schedule, the records and the analysis plan.
        policies: the registered arm whose policies it runs (``none``: no policies).
        portfolio: the policy portfolio those policies come from (None: the panel's).
        controls: the control sources (None: the panel's).
        agent_config: an agent config in place of the panel's (None: the panel's).
        agent: agent parameters over the panel's agent config (or ``agent_config``).
        instruction: text added after the task's instruction ("" adds nothing).
        files: working-folder path -> source file, placed before the agent starts.
        environment: environment parameters over the panel's (safe ones only).
        description: one line for the report.
        declared: declared in the panel config (False: a preset of a registered arm).
    """

    name: str
    policies: str = NO_POLICIES
    portfolio: str | None = None
    controls: str | None = None
    agent_config: str | None = None
    agent: dict[str, Any] = field(default_factory=dict)
    instruction: str = ""
    files: dict[str, str] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    declared: bool = True

    @property
    def policy_source(self) -> str:
        """The registered arm that builds its policies (``baseline`` for none)."""
        return "baseline" if self.policies == NO_POLICIES else self.policies

    def settings(self) -> dict[str, Any]:
        """What the arm changes as composed values (its files by destination and source),
        the dictionary the preregistration hashes."""
        values = asdict(self)
        values.pop("declared")
        return values

    def settings_json(self) -> str:
        """:meth:`settings` as canonical JSON."""
        return json.dumps(self.settings(), sort_keys=True, separators=(",", ":"))

    def changes(self) -> list[str]:
        """What the arm changes, one phrase per change, for the report."""
        out = [] if self.policies == NO_POLICIES else [f"policies: {self.policies}"]
        out += [f"{key}: {value}" for key, value in (("portfolio", self.portfolio),
                                                     ("controls", self.controls),
                                                     ("agent", self.agent_config)) if value]
        out += [f"agent.{k}={v}" for k, v in sorted(self.agent.items())]
        if self.instruction:
            out.append(f"instruction + {len(self.instruction)} characters")
        out += [f"file {dest} from {source}" for dest, source in sorted(self.files.items())]
        out += [f"environment.{k}={v}" for k, v in sorted(self.environment.items())]
        return out or ["nothing"]


def preset(name: str) -> ArmSpec:
    """A registered arm as a spec: its own policies, nothing else changed.

    >>> preset("baseline").policies, preset("sham").policies
    ('none', 'sham')
    """
    return ArmSpec(name=name, policies=NO_POLICIES if name == "baseline" else name,
                   declared=False)


def check_file_destination(dest: str, where: str = "files") -> str:
    """``dest`` as a normalized path inside the working folder, or InputError.

    >>> check_file_destination("./docs/AGENTS.md")
    'docs/AGENTS.md'
    """
    path = PurePosixPath(dest)
    parts = [p for p in path.parts if p != "."]
    if not dest.strip() or path.is_absolute() or ".." in parts or not parts:
        raise InputError(_WHERE, f"{where}.{dest}", "a placed file must be a relative path inside the "
                         "task's working folder", "write it as e.g. AGENTS.md or docs/NOTES.md")
    if parts[0] in FORBIDDEN_FOLDERS:
        raise InputError(_WHERE, f"{where}.{dest}", f"an arm may not place files under {parts[0]}/ "
                         "(the verifier's tests, logs and reward files are the same in "
                         "every arm)", "place it elsewhere in the working folder")
    return "/".join(parts)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InputError(_WHERE, where, f"expected a mapping, got {value!r}")
    return dict(value)


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(_WHERE, where, f"expected text, got {value!r}")
    return value


def _spec(name: str, data: Any) -> ArmSpec:
    where = f"declare.{name}"
    if not _NAME.match(name):
        raise InputError(_WHERE, where, "an arm's name may hold letters, digits, '_', '.' "
                         "and '-' and starts with a letter or digit", "rename the arm")
    data = _mapping(data, where)
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise InputError(_WHERE, f"{where}.{unknown[0]}", "not a field of an arm",
                         f"use some of {', '.join(_FIELDS)}")
    files = _mapping(data.get("files"), f"{where}.files")
    for dest, source in files.items():
        if not isinstance(source, str) or not source.strip():
            raise InputError(_WHERE, f"{where}.files.{dest}", "expected a source file path")
    environment = _mapping(data.get("environment"), f"{where}.environment")
    unsafe = sorted(set(environment) - SAFE_ENVIRONMENT_PARAMS)
    if unsafe:
        raise InputError(_WHERE, f"{where}.environment.{unsafe[0]}",
                         "not an environment setting an arm may change",
                         f"an arm may change {', '.join(sorted(SAFE_ENVIRONMENT_PARAMS))}")
    placed: dict[str, str] = {}
    for dest, source in files.items():
        path = check_file_destination(dest, f"{where}.files")
        if path in placed:
            raise InputError(_WHERE, f"{where}.files.{dest}", f"places {path} twice",
                             "give each file one destination")
        placed[path] = str(source)
    portfolio, controls = data.get("portfolio"), data.get("controls")
    return ArmSpec(
        name=name, policies=_text(data.get("policies"), f"{where}.policies") or NO_POLICIES,
        portfolio=_text(portfolio, f"{where}.portfolio") or None,
        controls=_text(controls, f"{where}.controls") or None,
        agent_config=_text(data.get("agent_config"), f"{where}.agent_config") or None,
        agent=_mapping(data.get("agent"), f"{where}.agent"),
        instruction=_text(data.get("instruction"), f"{where}.instruction"),
        files=placed,
        environment=environment,
        description=_text(data.get("description"), f"{where}.description"))


def arm_specs_from_dict(data: Any) -> dict[str, ArmSpec]:
    """The arms ``panel.declare`` declares, every field checked.

    Raises:
        InputError: naming ``configs/panel``, the field and what to do.
    """
    declared = _mapping(data, "declare")
    return {name: _spec(name, spec) for name, spec in declared.items()}


def resolve_source(source: str) -> Path:
    """A placed file's source: under ``configs/`` if it is there, else the path as given."""
    from fire_exp.paths import CONFIG_DIR

    for candidate in (CONFIG_DIR / source, Path(source).expanduser()):
        if candidate.is_file():
            return candidate.resolve()
    raise InputError(_WHERE, f"files: {source}", "no such file",
                     f"put it under {CONFIG_DIR}/ or give a path to it")


def resolve_agent_config(name: str, arm: str) -> Path:
    """An arm's agent config: ``configs/agent/NAME.yaml``, else a path to a YAML file."""
    from fire_exp.paths import CONFIG_DIR

    for candidate in (CONFIG_DIR / "agent" / f"{name}.yaml", Path(name).expanduser()):
        if candidate.is_file():
            return candidate.resolve()
    known = sorted(p.stem for p in (CONFIG_DIR / "agent").glob("*.yaml"))
    raise InputError(_WHERE, f"declare.{arm}.agent_config", f"no agent config {name!r}",
                     f"use one of {', '.join(known)}, or a path to a YAML file")
