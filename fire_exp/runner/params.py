"""Check a component's parameters against the constructor they are passed to.

A config group (``agent/``, ``environment/``, ``executor/``) names a registered factory
and its parameters. Before anything runs, each parameter must be one the factory takes,
and a parameter the factory annotates as ``bool``, ``int``, ``float`` or ``str`` (or such
a type or None) must have that type, so a typo or a wrong value in a config fails when
the panel is built, naming the file and key, instead of inside every attempt.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from fire_exp.errors import InputError

_SIMPLE = (bool, int, float, str)


def _hints(factory: Callable[..., Any]) -> dict[str, Any]:
    target = factory.__init__ if isinstance(factory, type) else factory  # type: ignore[misc]
    try:
        return typing.get_type_hints(target)
    except Exception:  # noqa: BLE001 - an annotation we cannot resolve is not checked
        return {}


def _allowed(hint: Any) -> tuple[type, ...] | None:
    """The simple types ``hint`` admits (None in the tuple as ``type(None)``); None: any."""
    if hint in _SIMPLE:
        return (hint,)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = typing.get_args(hint)
        if all(a in _SIMPLE or a is type(None) for a in args):
            return tuple(args)
    return None


def _fits(value: Any, allowed: tuple[type, ...]) -> bool:
    if value is None:
        return type(None) in allowed
    if isinstance(value, bool):
        return bool in allowed
    if isinstance(value, int) and float in allowed:
        return True
    return isinstance(value, tuple(t for t in allowed if t is not bool))


def checked_params(factory: Callable[..., Any], params: Mapping[str, Any], where: str,
                   skip: int = 0) -> dict[str, Any]:
    """``params`` if ``factory`` accepts each of them with its annotated type.

    Args:
        factory: a class or function (a class is checked through its ``__init__``).
        params: the keyword arguments the config gives.
        where: the config file, for the error.
        skip: leading positional parameters supplied by the caller, not the config
            (an environment's task, attempt folder and attempt id).

    Raises:
        InputError: an unknown key, or a value of the wrong type.
    """
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return dict(params)
    accepted = list(signature.parameters.values())[skip:]
    by_name = {p.name: p for p in accepted
               if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    open_ended = any(p.kind is p.VAR_KEYWORD for p in accepted)
    hints = _hints(factory)
    for key, value in params.items():
        if key not in by_name:
            if open_ended:
                continue
            raise InputError(where, key, "unknown parameter",
                             f"use some of {', '.join(by_name) or '(none)'}")
        allowed = _allowed(hints.get(key))
        if allowed is not None and not _fits(value, allowed):
            names = " or ".join("None" if t is type(None) else t.__name__ for t in allowed)
            raise InputError(where, key, f"expected {names}, got {value!r}")
    return dict(params)
