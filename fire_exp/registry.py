"""The one registry of agents, environments and executors, wired in one place.

Built-ins are registered below by the module that implements them (imported lazily, so
``docker`` or ``ray`` load only when used). Third parties extend through the entry-point
group ``fire_exp`` (``name = "module:factory"``, with a name prefixed ``agent.``,
``environment.``, ``executor.`` or ``importer.``; an importer is a class of no arguments
following ``fire_exp.importers.Importer``). A duplicate name raises; an unknown name lists the
known ones.

Each component's settings model (``fire_exp.settings.Settings``) is its factory's
``settings_model``; :meth:`Registry.settings` gives it, or, for a factory that declares none
(a third party's), a model derived from its signature, so the build step checks every
component's settings the same way, once.
"""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from pydantic import ConfigDict, create_model

from fire_exp.errors import InputError
from fire_exp.settings import Settings

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

    def settings(self, kind: str, name: str) -> type[Settings]:
        """The settings model of the component registered as ``name``: its factory's
        ``settings_model``, else one derived from its signature (:func:`signature_settings`)."""
        factory = self.get(kind, name)
        model = declared_settings(factory)
        return model if model is not None else \
            signature_settings(factory, skip=3 if kind == "environment" else 0)

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in entry_points(group="fire_exp"):
            kind, _, name = ep.name.partition(".")
            if kind in KINDS and name:
                self.register(kind, name, ep.value)


def declared_settings(factory: Callable[..., Any]) -> type[Settings] | None:
    """The ``settings_model`` a class declares for its constructor; None when it declares
    none, or a subclass overrides the constructor without declaring its own."""
    for cls in getattr(factory, "__mro__", ()):
        model = vars(cls).get("settings_model")
        if isinstance(model, type) and issubclass(model, Settings):
            return model
        if "__init__" in vars(cls):
            return None
    return None


_SIMPLE = (bool, int, float, str)


def _simple(hint: Any) -> Any:
    """``hint`` if it admits only simple types (or None), else Any (not checked)."""
    if hint in _SIMPLE:
        return hint
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        if all(a in _SIMPLE or a is type(None) for a in typing.get_args(hint)):
            return hint
    return Any


def signature_settings(factory: Callable[..., Any], skip: int = 0) -> type[Settings]:
    """A settings model from a factory that declares none: a key for each keyword
    parameter, its type where annotated with bool, int, float or str (or such a type or
    None), any key at all when the factory takes ``**kwargs``. ``skip``: the leading
    parameters its caller supplies (an environment's task, attempt folder and attempt id).
    """
    target = factory.__init__ if isinstance(factory, type) else factory  # type: ignore[misc]
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # noqa: BLE001 - an annotation we cannot resolve is not checked
        hints = {}
    try:
        accepted = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return _Open
    positional = [p for p in accepted if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    accepted = [p for p in accepted if p not in positional[:skip]]
    fields: dict[str, Any] = {
        p.name: (_simple(hints.get(p.name)), None if p.default is p.empty else p.default)
        for p in accepted if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    base = _Open if any(p.kind is p.VAR_KEYWORD for p in accepted) else Settings
    model: type[Settings] = create_model(
        f"{getattr(factory, '__name__', 'Component')}Settings", __base__=base, **fields)
    return model


class _Open(Settings):
    """Settings of a factory that takes any keyword (``**kwargs``)."""

    model_config = ConfigDict(extra="allow")


REGISTRY = Registry()
for _kind, _entries in _BUILTINS.items():
    for _name, _target in _entries.items():
        REGISTRY.register(_kind, _name, _target)
