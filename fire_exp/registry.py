"""The one registry of agents, environments and executors, wired in one place.

Built-ins are registered below by the module that implements them (imported lazily, so
``docker`` or ``ray`` load only when used). Third parties extend through the entry-point
group ``fire_exp`` (``name = "module:factory"``, with a name prefixed ``agent.``,
``environment.``, ``executor.`` or ``importer.``; an importer is a class of no arguments
following ``fire_exp.importers.Importer``). A duplicate name raises; an unknown name lists the
known ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from fire_exp.errors import InputError

KINDS = ("agent", "environment", "executor", "importer")

_BUILTINS: dict[str, dict[str, str]] = {
    "agent": {
        "simulated": "fire_exp.agents.simulated:SimulatedAgent",
        "oracle": "fire_exp.agents.base:OracleAgent",
        "nop": "fire_exp.agents.base:NopAgent",
        "openai": "fire_exp.agents.openai:OpenAIAgent",
        "claude-code": "fire_exp.agents.coding_agents:ClaudeCodeAgent",
        "codex": "fire_exp.agents.coding_agents:CodexAgent",
    },
    "environment": {
        "local": "fire_exp.environments.local:LocalEnvironment",
        "docker": "fire_exp.environments.docker:DockerEnvironment",
    },
    "executor": {
        "local": "fire_exp.runner.executors:LocalExecutor",
        "ray": "fire_exp.runner.ray_executor:RayExecutor",
    },
    "importer": {  # fire-exp import KIND
        "harbor": "fire_exp.importers.harbor:HarborImporter",
        "inspect": "fire_exp.importers.inspect_eval:InspectImporter",
    },
}


class Registry:
    """Names to factories, per kind."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, str | Callable[..., Any]]] = {k: {} for k in KINDS}
        self._plugins_loaded = False

    def register(self, kind: str, name: str, target: str | Callable[..., Any]) -> None:
        """Register ``target`` (a callable, or ``"module:attr"``) as ``name`` of ``kind``."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; use one of {KINDS}")
        if name in self._entries[kind]:
            raise ValueError(f"{kind} {name!r} is already registered")
        self._entries[kind][name] = target

    def names(self, kind: str) -> list[str]:
        self._load_plugins()
        return sorted(self._entries[kind])

    def get(self, kind: str, name: str) -> Callable[..., Any]:
        """The factory registered as ``name``; an unknown name lists the known ones."""
        self._load_plugins()
        target = self._entries[kind].get(name)
        if target is None:
            raise InputError(f"configs/{kind}", "name", f"unknown {kind} {name!r}",
                             f"known: {', '.join(self.names(kind))}")
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            try:
                target = getattr(importlib.import_module(module), attr)
            except ImportError as exc:
                raise InputError(f"configs/{kind}", "name",
                                 f"{kind} {name!r} is not available: {exc}",
                                 "install the optional dependency it needs") from exc
        return target

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in entry_points(group="fire_exp"):
            kind, _, name = ep.name.partition(".")
            if kind in KINDS and name:
                self.register(kind, name, ep.value)


REGISTRY = Registry()
for _kind, _entries in _BUILTINS.items():
    for _name, _target in _entries.items():
        REGISTRY.register(_kind, _name, _target)
