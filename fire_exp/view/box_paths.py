"""Paths inside an attempt's box, shown as the box names them, never as this machine does.

The local environment's box is a folder of the run (``ATTEMPT/box/work``, ``ATTEMPT/logs``),
so what the agent and the verifier printed carries this machine's folders
(``No such file or directory: '/home/me/results/demo/RUN/attempts/T/A/r0/box/work/x'``).
A site shared with a paper shows them as a Docker box names the same folders: the task's
working folder (``task.toml`` ``environment.workdir``, ``/app`` by default), ``/logs``,
``/tests`` and ``/solution``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

__all__ = ["box_names", "in_box_names", "task_workdir"]

DEFAULT_WORKDIR = "/app"  # fire_exp.tasks.model's default
# What a Docker box calls the attempt's logs, tests and solution (environments/docker.py).
LOGS, TESTS, SOLUTION = "/logs", "/tests", "/solution"


def task_workdir(task_dir: Path | None) -> str:
    """The task's working folder as its box names it (``/app`` when the task says none)."""
    toml = task_dir / "task.toml" if task_dir is not None else None
    if toml is None or not toml.is_file():
        return DEFAULT_WORKDIR
    try:
        env = tomllib.loads(toml.read_text(encoding="utf-8")).get("environment", {})
    except (OSError, tomllib.TOMLDecodeError):
        return DEFAULT_WORKDIR
    workdir = env.get("workdir") if isinstance(env, dict) else None
    return workdir if isinstance(workdir, str) and workdir.startswith("/") else DEFAULT_WORKDIR


def box_names(attempt_root: Path, workdir: str) -> list[tuple[str, str]]:
    """``(machine folder, box name)`` pairs of one attempt, longest first (as written and
    with symbolic links resolved).

    >>> box_names(Path("/r/a/r0"), "/app")[:2]
    [('/r/a/r0/box/solution', '/solution'), ('/r/a/r0/box/tests', '/tests')]
    """
    pairs: dict[str, str] = {}
    for root in dict.fromkeys([attempt_root, attempt_root.absolute(), attempt_root.resolve()]):
        box = root / "box"
        pairs |= {str(box / "work"): workdir, str(box / "tests"): TESTS,
                  str(box / "solution"): SOLUTION, str(root / "logs"): LOGS,
                  str(box): "/"}
    return sorted(pairs.items(), key=lambda p: (-len(p[0]), p[0]))


def in_box_names(value: Any, pairs: list[tuple[str, str]]) -> Any:
    """``value`` (text, or lists and dicts of it) with every machine folder of ``pairs``
    replaced by the box's name for it."""
    if isinstance(value, dict):
        return {k: in_box_names(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [in_box_names(v, pairs) for v in value]
    if isinstance(value, str) and "/" in value:
        for folder, name in pairs:
            if folder in value:
                value = value.replace(folder + "/", name.rstrip("/") + "/").replace(folder, name)
    return value
