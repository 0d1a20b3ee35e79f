"""Load Harbor tasks: ``task.toml`` + ``instruction.md`` + ``environment/`` + ``tests/``.

Unknown keys are tolerated (Harbor's schema grows); a missing required file, malformed
TOML or a wrong type fails with the task's path and the field named.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.tasks.model import (
    AgentConfig,
    EnvironmentConfig,
    Task,
    VerifierConfig,
    task_digest,
)

_CANARY = re.compile(r"^\s*(<!--.*canary.*-->|#\s*BENCHMARK DATA.*|#.*canary.*)\s*$", re.I)
_NETWORK_MODES = {"public", "no-network", "allowlist"}


def strip_canary(text: str) -> str:
    """Drop leading canary comment lines (and the blank lines after them)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines) and (_CANARY.match(lines[i]) or (i and not lines[i].strip())):
        i += 1
    return "\n".join(lines[i:]).strip() + "\n"


def _get(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str,
          path: Path, default: Any) -> Any:
    value = table.get(key, default)
    if value is default:
        return value
    # bool is an int in Python; a boolean where a number is expected is a type error.
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise InputError(path, f"{where}.{key}", f"expected {_kind_name(kind)}, got a boolean")
    if not isinstance(value, kind):
        raise InputError(path, f"{where}.{key}",
                         f"expected {_kind_name(kind)}, got {type(value).__name__} {value!r}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "a number", float: "a number", str: "a string", bool: "a boolean",
             dict: "a table", list: "an array"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise InputError(path, f"[{key}]", f"expected a table, got {type(value).__name__}")
    return value


def _parse_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, "<toml>", f"malformed TOML: {exc}", "fix the syntax") from exc


def parse_task_toml(path: Path) -> dict[str, Any]:
    """Parse and type-check ``task.toml``; returns the keyword arguments of :class:`Task`."""
    data = _parse_toml(path)
    version = data.get("schema_version", data.get("version", "1.0"))
    if not isinstance(version, str | int | float) or isinstance(version, bool):
        raise InputError(path, "schema_version", f"expected a string, got {version!r}")
    num = (int, float)
    agent_t, ver_t, env_t = (_table(data, k, path) for k in ("agent", "verifier", "environment"))
    env_vars = _get(ver_t, "env", dict, "verifier", path, {})
    for k, v in env_vars.items():
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise InputError(path, f"verifier.env.{k}", f"expected a string, got {v!r}")
    network = _get(env_t, "network_mode", str, "environment", path, None)
    if network is None:
        allow = _get(env_t, "allow_internet", bool, "environment", path, True)
        network = "public" if allow else "no-network"
    if network not in _NETWORK_MODES:
        raise InputError(path, "environment.network_mode",
                         f"unknown mode {network!r}", f"use one of {sorted(_NETWORK_MODES)}")
    task_t = _table(data, "task", path)
    return {
        "schema_version": str(version),
        "toml_name": _get(task_t, "name", str, "task", path, None),
        "metadata": _table(data, "metadata", path),
        "agent": AgentConfig(
            timeout_sec=float(_get(agent_t, "timeout_sec", num, "agent", path, 900.0))),
        "verifier": VerifierConfig(
            timeout_sec=float(_get(ver_t, "timeout_sec", num, "verifier", path, 600.0)),
            env={k: str(v) for k, v in env_vars.items()}),
        "environment": EnvironmentConfig(
            build_timeout_sec=float(_get(env_t, "build_timeout_sec", num, "environment", path,
                                         600.0)),
            docker_image=_get(env_t, "docker_image", str, "environment", path, None),
            cpus=float(_get(env_t, "cpus", num, "environment", path, 1.0)),
            memory_mb=int(_get(env_t, "memory_mb", num, "environment", path, 2048)),
            storage_mb=int(_get(env_t, "storage_mb", num, "environment", path, 10240)),
            network_mode=network,
            workdir=_get(env_t, "workdir", str, "environment", path, "/app")),
    }


def load_task(path: Path | str) -> Task:
    """Load one Harbor task directory.

    Raises:
        InputError: naming the file and field that is missing or malformed.
    """
    path = Path(path).resolve()
    if not path.is_dir():
        raise InputError(path, "<task>", "not a directory", "point at a task folder")
    toml_path = path / "task.toml"
    if not toml_path.is_file():
        raise InputError(path, "task.toml", "missing",
                         "a Harbor task needs task.toml (Terminal-Bench 1 tasks: "
                         "`fire-exp tasks convert`)")
    fields = parse_task_toml(toml_path)
    instruction_path = path / "instruction.md"
    if not instruction_path.is_file():
        raise InputError(path, "instruction.md", "missing", "write the agent's instruction there")
    instruction = strip_canary(instruction_path.read_text(encoding="utf-8"))
    if not instruction.strip():
        raise InputError(instruction_path, "<text>", "empty instruction")
    env: EnvironmentConfig = fields["environment"]
    if env.docker_image is None and not (path / "environment").is_dir():
        raise InputError(path, "environment/", "missing",
                         "add environment/Dockerfile or set [environment].docker_image")
    if not (path / "tests" / "test.sh").is_file():
        raise InputError(path, "tests/test.sh", "missing",
                         "the verifier entry point must write /logs/verifier/reward.txt")
    toml_name = fields.pop("toml_name")
    name = path.name if toml_name is None else toml_name.rsplit("/", 1)[-1]
    return Task(name=name, path=path, instruction=instruction, digest=task_digest(path),
                **fields)


def is_task_dir(path: Path) -> bool:
    """Whether ``path`` looks like a Harbor task directory."""
    return (path / "task.toml").is_file()


def load_tasks(path: Path | str) -> list[Task]:
    """Load a task directory, or every task directory directly under ``path``, by name."""
    path = Path(path)
    if is_task_dir(path):
        return [load_task(path)]
    if not path.is_dir():
        raise InputError(path, "<tasks>", "no such folder")
    tasks = [load_task(p) for p in sorted(path.iterdir()) if p.is_dir() and is_task_dir(p)]
    if not tasks:
        raise InputError(path, "<tasks>", "no task directories (with task.toml) found")
    return tasks
