"""The arm mapping every importer shares: which arm a result belongs to, which cohort a task.

An importer reads another harness's results (Harbor trials, inspect_ai samples) and asks
this module three things: whether ``arm_from`` names something the importer can look up
(:func:`check_arm_from`), which arm a looked-up value is (:meth:`ArmMapping.arm`), and, once
records exist, the order of the arms within each (task, replicate) block
(:func:`with_order`). The mapping YAML (``arm_from``, ``arms``, ``cohorts``,
``default_cohort``, ``pass_threshold``) reads the same for every importer
(:func:`load_mapping`; docs/importers.md).
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.files import control_character, parse_yaml, read_text
from fire_exp.records import AttemptRecord

__all__ = ["ArmFields", "ArmMapping", "check_arm_from", "check_cohort_tasks", "field_value",
           "load_mapping", "with_order"]

_DOTTED = re.compile(r"^[A-Za-z_][\w-]*(\.[\w-]+)+$")
_KEYS = ("arm_from", "arms", "cohorts", "default_cohort", "pass_threshold")


@dataclass(frozen=True)
class ArmFields:
    """What an importer's ``arm_from`` may name.

    Attributes:
        names: the short field names it knows (``job``, ``model``, ...).
        into: what a dotted path points into, for messages (``result.json``).
        example: an example dotted path, for messages.
        default: ``arm_from`` when a mapping file leaves it out.
    """

    names: tuple[str, ...]
    into: str
    example: str
    default: str


def check_arm_from(value: str, where: Path | str, fields: ArmFields) -> str:
    """``value`` if it is one of ``fields.names`` or a dotted path. Raises InputError
    otherwise."""
    if value in fields.names or _DOTTED.match(value):
        return value
    raise InputError(where, "arm_from", f"{value!r} is neither one of {', '.join(fields.names)} "
                     f"nor a dotted path into {fields.into}", f"e.g. {fields.example}")


def field_value(raw: Any, path: str) -> str:
    """The value at a dotted path (``config.agent.kwargs.harness``; a number picks a list
    item) as text: a string as it is, anything else as sorted JSON, "" when missing or null.

    >>> field_value({"a": {"b": [{"c": "x"}]}, "n": {"k": 2}}, "a.b.0.c"), field_value({}, "a.b")
    ('x', '')
    """
    node: Any = raw
    for key in path.split("."):
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            node = node.get(key) if isinstance(node, dict) else None
    if node is None:
        return ""
    return node if isinstance(node, str) else json.dumps(node, sort_keys=True)


@dataclass(frozen=True)
class ArmMapping:
    """How results map to arms and tasks to cohorts.

    Attributes:
        arm_from: what the patterns match: a short field name of the importer
            (:class:`ArmFields`) or a dotted path into its results.
        arms: ``(pattern, arm)`` pairs, fnmatch patterns tried in order; the first match
            wins. Empty: the field's value itself is the arm.
        cohorts: task name → cohort.
        default_cohort: cohort of tasks not in ``cohorts``.
        pass_threshold: a reward at or above it passes.
    """

    arm_from: str = "job"
    arms: tuple[tuple[str, str], ...] = ()
    cohorts: dict[str, str] = field(default_factory=dict)
    default_cohort: str = "all"
    pass_threshold: float = 1.0

    def arm(self, values: dict[str, str]) -> str | None:
        """The arm of a result, given its value of ``arm_from`` in ``values`` (None when
        no pattern matches, or the value is empty and there are no patterns)."""
        value = values.get(self.arm_from, "")
        if not self.arms:
            return value or None
        return next((arm for pattern, arm in self.arms if fnmatch.fnmatchcase(value, pattern)),
                    None)

    def cohort(self, task: str) -> str:
        """The cohort of ``task``."""
        return self.cohorts.get(task, self.default_cohort)


def load_mapping(path: Path, fields: ArmFields) -> ArmMapping:
    """Read a mapping YAML (docs/importers.md, "The mapping file").

    Raises:
        InputError: missing file, bad YAML, or a field of the wrong shape.
    """
    try:
        raw = parse_yaml(read_text(path), path) or {}  # a key twice refused by line
    except FileNotFoundError:
        raise InputError(path, "<file>", "mapping file not found") from None
    if not isinstance(raw, dict):
        raise InputError(path, "<mapping>", "expected a mapping with arm_from, arms, cohorts")
    unknown = set(raw) - set(_KEYS)
    if unknown:
        raise InputError(path, sorted(unknown)[0], "unknown key", f"keys: {', '.join(_KEYS)}")
    source = check_arm_from(str(raw.get("arm_from", fields.default)), path, fields)
    arms, cohorts = raw.get("arms") or {}, raw.get("cohorts") or {}
    if not isinstance(arms, dict):
        raise InputError(path, "arms", "expected PATTERN: ARM pairs", "e.g. '*-real-*': real")
    if not isinstance(cohorts, dict):
        raise InputError(path, "cohorts", "expected TASK: COHORT pairs")
    pairs = {"arms": arms, "cohorts": cohorts}
    for key, pairs_of in pairs.items():
        for name, value in pairs_of.items():
            _name(path, key, name, "a key")
            _name(path, f"{key}.{name}", value, "a value")
    default = raw.get("default_cohort", "all")
    _name(path, "default_cohort", default, "the value")
    return ArmMapping(source, tuple(arms.items()), dict(cohorts), default,
                      _threshold(raw.get("pass_threshold", 1.0), path))


def _name(path: Path, where: str, value: Any, what: str) -> None:
    """Refuse a pattern, task, arm or cohort that is not a name: YAML reads ``yes`` as
    true (a cohort 'True'), ``0123`` as 83, and an empty or invisible name is another."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, where, f"{what} is {value!r:.60}, not a name",
                         "write names as text; quote one YAML reads otherwise ('yes', '0123')")
    control = control_character(value)
    if control:
        raise InputError(path, where, f"{value!r} {control}", "fix the name")


def check_cohort_tasks(mapping: ArmMapping, tasks: Iterable[str],
                       where: Path | str) -> str | None:
    """Check the mapping's ``cohorts`` against the tasks imported.

    A task named there that no result holds is counted (a mapping may serve several
    jobs); one close to an imported task left in the default cohort is a typo that put
    that task in the wrong cohort, and is refused.

    Returns:
        A note on the tasks no result holds, or None.

    Raises:
        InputError: naming the task meant.
    """
    tasks = set(tasks)
    unused = sorted(set(mapping.cohorts) - tasks)
    defaulted = sorted(tasks - set(mapping.cohorts))
    for name in unused:
        close = difflib.get_close_matches(name, defaulted, n=1, cutoff=0.8)
        if close:
            raise InputError(where, f"cohorts.{name}", f"no result holds task {name!r}, and "
                             f"task {close[0]!r} fell to the default cohort "
                             f"{mapping.default_cohort!r}", f"did you mean {close[0]!r}?")
    if not unused:
        return None
    return (f"the mapping's cohorts name {len(unused)} task(s) no result holds, e.g. "
            f"{unused[0]}: nothing imported for them")


def _threshold(value: Any, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise InputError(path, "pass_threshold", f"expected a finite number, got {value!r:.60}",
                         "e.g. pass_threshold: 1.0")
    return float(value)


def with_order(records: Iterable[AttemptRecord]) -> list[AttemptRecord]:
    """The records with ``order`` numbering the arms of each (task, replicate) block by
    start time (then arm name), from 0."""
    blocks: dict[tuple[str, int], list[AttemptRecord]] = {}
    for r in records:
        blocks.setdefault((r.task, r.replicate), []).append(r)
    out = []
    for block in blocks.values():
        block.sort(key=lambda r: (r.started_at, r.arm))
        out += [r.model_copy(update={"order": i}) for i, r in enumerate(block)]
    return out
