"""A component's settings: one pydantic model per environment, agent and executor.

Each component declares its settings beside its class (``settings_model``): the keys it
takes, their types, ranges and ceilings, and their defaults, written once. The build layer
validates a config group against the model once, before anything is written
(:func:`check_settings`), and turns the first fault into one :class:`InputError` naming the
config file, the key and the fix. This module knows no component's keys: only the kinds of
constraint (:func:`ceiling`, :func:`one_of`, :data:`Seconds`) the models are written with.

>>> class Pool(Settings):
...     workers: Annotated[int, Field(ge=1), ceiling(256)] = 2
>>> check_settings(Pool, {"workers": 4}, where="configs/executor/pool.yaml",
...                group="executor").workers
4
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic import ValidationInfo as _Info
from pydantic_core import ErrorDetails, PydanticCustomError

from fire_exp.errors import InputError

__all__ = ["DURATION_CEILING_S", "Count", "NoSettings", "Seconds", "Settings", "ceiling", "check_settings",
           "one_of", "setting_error"]

# A value above a ceiling is far more likely a typo (an extra zero) than an experiment,
# and would exhaust the machine or the budget; ``ceilings=false`` lifts them on purpose.
DURATION_CEILING_S = 86_400.0  # a day, for any duration or timeout
_LIFT = "or set ceilings=false to lift the ceiling on purpose"


class Settings(BaseModel):
    """The base of every component's settings: no unknown key, strict types (a YAML
    string is not a number), finite numbers, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class NoSettings(Settings):
    """The settings of a component that takes none (any key is refused)."""


def setting_error(problem: str, fix: str = "") -> PydanticCustomError:
    """The fault a model's own validator raises: what is wrong and what to do."""
    return PydanticCustomError("setting", "{problem}", {"problem": problem, "fix": fix})


def ceiling(high: float) -> AfterValidator:
    """A field's ceiling, lifted when the validation context says ``ceilings: False``."""
    def below(value: Any, info: _Info) -> Any:
        lifted = isinstance(info.context, Mapping) and info.context.get("ceilings") is False
        if value is not None and value > high and not lifted:
            raise PydanticCustomError("above_ceiling", "above the ceiling {ceiling}",
                                      {"ceiling": high})
        return value
    return AfterValidator(below)


def one_of(*choices: str) -> AfterValidator:
    """A text field that takes one of ``choices``."""
    def chosen(value: Any) -> Any:
        if value not in choices:
            raise setting_error(f"{value!r} is unknown", f"use one of {', '.join(choices)}")
        return value
    return AfterValidator(chosen)


Seconds = Annotated[float, Field(ge=0), ceiling(DURATION_CEILING_S)]
Count = Annotated[int, Field(ge=1)]


def check_settings(model: type[Settings], params: Mapping[str, Any], *, where: str,
                   group: str, ceilings: bool = True) -> Settings:
    """``params`` validated against ``model``; the first fault as one InputError.

    Args:
        model: the component's settings model.
        params: the config group's keys but ``name``, as composed.
        where: the config file, for the error (``configs/agent/simulated.yaml``).
        group: the dotted config path the fix names (``agent``, ``panel.declare.x.agent``).
        ceilings: False lifts every ceiling (``ceilings=false``); never finiteness.

    Raises:
        InputError: an unknown key, a value of the wrong type, out of range, not finite,
            or above its ceiling.
    """
    for key, value in params.items():
        _check_finite(value, where, group, str(key))
    try:
        return model.model_validate(dict(params), context={"ceilings": ceilings})
    except ValidationError as exc:
        raise _one_line(model, exc.errors(include_url=False)[0], params, where,
                        group) from None


def _check_finite(value: Any, where: str, group: str, key: str) -> None:
    """Refuse NaN or an infinity anywhere in a setting (nested lists and mappings too)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(where, key, f"{value} is not a finite number",
                         f"set {group}.{key} to a finite number")
    items = value.items() if isinstance(value, Mapping) else \
        enumerate(value) if isinstance(value, list | tuple) else ()
    for sub, item in items:
        _check_finite(item, where, group, f"{key}.{sub}" if isinstance(value, Mapping)
                      else f"{key}[{sub}]")


def _path(loc: tuple[int | str, ...], params: Mapping[str, Any]) -> tuple[str, Any]:
    """The key path of ``loc`` in the input and the value there (a union member's tag in
    ``loc``, such as ``int``, is not a key of the input and ends the path)."""
    parts: list[str] = []
    node: Any = params
    for part in loc:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
            parts.append(str(part))
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            parts[-1] += f"[{part}]"
        else:
            break
    return ".".join(parts), node


# A value of the wrong type: what was expected, and the placeholder of the fix.
_TYPES = {"float": ("a number", "number"), "int": ("a whole number", "N"),
          "string": ("text", "text"), "bool": ("true or false", "true|false"),
          "list": ("a list", "[...]"), "dict": ("a mapping", "{...}"),
          "model": ("a mapping", "{...}")}


def _one_line(model: type[Settings], error: ErrorDetails, params: Mapping[str, Any],
              where: str, group: str) -> InputError:
    kind, ctx = error["type"], error.get("ctx") or {}
    key, value = _path(error["loc"], params)
    if kind == "extra_forbidden":
        return InputError(where, key, "unknown parameter",
                          f"use some of {', '.join(_fields(model, key)) or '(none)'}")
    if kind == "missing":
        return InputError(where, key, "missing", f"set {group}.{key}")
    if kind == "greater_than_equal":
        low = f"{ctx['ge']:g}"
        return InputError(where, key, f"{value} is below {low}",
                          f"set {group}.{key} to {low} or more")
    if kind == "above_ceiling":
        high = ctx["ceiling"]
        return InputError(where, key, f"{value:,} is above the ceiling {high:,g}",
                          f"set {group}.{key} to {high:,g} or less, {_LIFT}")
    if kind == "setting":
        return InputError(where, key, ctx["problem"], ctx.get("fix", ""))
    if kind.endswith("_type") or kind.endswith("_parsing"):
        wanted, placeholder = _TYPES.get(kind.split("_")[0], (kind.split("_")[0],) * 2)
        return InputError(where, key, f"expected {wanted}, got {value!r}",
                          f"set {group}.{key}=<{placeholder}>")
    return InputError(where, key, f"{error['msg']}, got {value!r}")


def _fields(model: type[BaseModel], key: str) -> list[str]:
    """The keys the model takes where ``key`` was refused (a nested model's, for a.b)."""
    for part in key.split(".")[:-1]:
        field = model.model_fields.get(part)
        nested = [a for a in getattr(field.annotation, "__args__", (field.annotation,))
                  if isinstance(a, type) and issubclass(a, BaseModel)] if field else []
        if not nested:
            return []
        model = nested[0]
    return list(model.model_fields)
