"""Load Harbor tasks: ``task.toml`` + ``instruction.md`` + ``environment/`` + ``tests/``.

Unknown keys are tolerated (Harbor's schema grows); a missing required file, malformed
TOML or a wrong type fails with the task's path and the field named.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.files import read_text
from fire_exp.tasks import tb1
from fire_exp.tasks.model import (
    AgentConfig,
    EnvironmentConfig,
    Task,
    VerifierConfig,
    task_digest,
)

_CANARY = re.compile(r"^\s*(<!--.*canary.*-->|#\s*BENCHMARK DATA.*|#.*canary.*)\s*$", re.I)
_CANARY_WORDS = re.compile(r"canary|BENCHMARK DATA", re.I)
_NETWORK_MODES = {"public", "no-network", "allowlist"}
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
_TASK_MARKERS = ("instruction.md", "tests/test.sh", "environment/Dockerfile")
_BUILD_FILES = ("Dockerfile", "docker-compose.yaml", "docker-compose.yml")


def strip_canary(text: str) -> str:
    """Drop leading canary comments (and the blank lines after them).

    A canary is a line such as ``<!-- ... canary GUID ... -->``, ``# BENCHMARK DATA ...``
    or ``# ... canary ...``, or an HTML comment over several lines that mentions one.
    """
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if _CANARY.match(line) or (i and not line.strip()):
            i += 1
            continue
        if line.lstrip().startswith("<!--") and "-->" not in line:
            end = next((j for j in range(i, len(lines)) if "-->" in lines[j]), None)
            block = "\n".join(lines[i:(end or i) + 1])
            if end is not None and _CANARY_WORDS.search(block):
                i = end + 1
                continue
        break
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
    text = read_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        twice = _key_twice(text, str(exc))
        if twice is not None:
            raise InputError(path, twice[0], f"key {twice[1]!r} appears twice",
                             "keep one") from exc
        raise InputError(path, "<toml>", f"malformed TOML: {exc}", "fix the syntax") from exc
    except (RecursionError, ValueError) as exc:  # nested too deeply; a 5,000-digit integer
        raise InputError(path, "<toml>", "nested too deeply, or an integer of thousands of "
                         "digits", "fix the value") from exc


def _key_twice(text: str, message: str) -> tuple[str, str] | None:
    """tomllib's "Cannot overwrite a value (at line N, …)" as (``line N``, the key written
    there), so a key twice is named as the JSON and YAML readers name it."""
    found = re.match(r"Cannot overwrite a value \(at line (\d+)", message)
    if found is None:
        return None
    number = int(found.group(1))
    line = text.splitlines()[number - 1] if number <= len(text.splitlines()) else ""
    return f"line {number}", line.split("=", 1)[0].strip() or "?"


def _env_table(table: dict[str, Any], where: str, path: Path) -> dict[str, str]:
    """An ``env`` table of strings (numbers are accepted and turned into strings)."""
    env = _get(table, "env", dict, where, path, {})
    for k, v in env.items():
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise InputError(path, f"{where}.env.{k}", f"expected a string, got {v!r}")
    return {k: str(v) for k, v in env.items()}


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_MB = {"": 1 / 2**20, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024**2}


def _size_mb(table: dict[str, Any], key_mb: str, key_text: str, path: Path,
             default: int) -> int:
    """``memory_mb = 2048``, or the older ``memory = "2G"`` (also "512M", "2 GB")."""
    if key_mb in table or key_text not in table:
        return int(_positive(table, key_mb, path, default))
    text = _get(table, key_text, str, "environment", path, None)
    match = _SIZE.match(text)
    if match is None:
        raise InputError(path, f"environment.{key_text}", f"not a size: {text!r}",
                         f'write e.g. "2G", or {key_mb} = 2048')
    size = float(match.group(1)) * _MB[match.group(2).lower()]
    if not size <= _RESOURCE_CEILINGS[key_mb]:
        raise InputError(path, f"environment.{key_text}", f"{text!r} is too large",
                         "give a size a machine can grant")
    return max(1, int(size))


_USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
# What a task may ask for: a task asking for more is a typo (or ``inf``), not a task.
_RESOURCE_CEILINGS = {"timeout_sec": 7 * 86_400.0, "build_timeout_sec": 7 * 86_400.0,
                      "cpus": 1024.0, "memory_mb": 2.0**30, "storage_mb": 2.0**40}


def _positive(table: dict[str, Any], key: str, path: Path, default: float,
              where: str = "environment") -> float:
    value = float(_get(table, key, (int, float), where, path, default))
    if not value > 0:
        raise InputError(path, f"{where}.{key}", f"must be positive, got {value:g}")
    high = _RESOURCE_CEILINGS.get(key, math.inf)
    if not value <= high:  # also refuses inf
        raise InputError(path, f"{where}.{key}", f"{value:g} is above {high:g}",
                         "give a finite value a machine can grant")
    return value


def _network_mode(env_t: dict[str, Any], path: Path) -> str:
    network = _get(env_t, "network_mode", str, "environment", path, None)
    if network is None:
        allow = _get(env_t, "allow_internet", bool, "environment", path, True)
        network = "public" if allow else "no-network"
    if network not in _NETWORK_MODES:
        raise InputError(path, "environment.network_mode",
                         f"unknown mode {network!r}", f"use one of {sorted(_NETWORK_MODES)}")
    return str(network)


def _user(agent_t: dict[str, Any], path: Path) -> str | None:
    user = _get(agent_t, "user", str, "agent", path, None)
    if user is not None and not _USER_NAME.fullmatch(user):
        raise InputError(path, "agent.user", f"{user!r} is not a user name",
                         'name a box user such as "root" or "fire-agent"')
    return None if user is None else str(user)


def parse_task_toml(path: Path) -> dict[str, Any]:
    """Parse and type-check ``task.toml``; returns the keyword arguments of :class:`Task`.

    Every section and key of the Harbor reference is read and type-checked; keys it does
    not know (``artifacts``, ``[[task.authors]]``, ``mcp_servers``, ...) are tolerated.
    """
    data = _parse_toml(path)
    version = data.get("schema_version", data.get("version", "1.0"))
    if not isinstance(version, str | int | float) or isinstance(version, bool):
        raise InputError(path, "schema_version", f"expected a string, got {version!r}")
    agent_t, ver_t, env_t = (_table(data, k, path) for k in ("agent", "verifier", "environment"))
    task_t = _table(data, "task", path)
    gpus = _get(env_t, "gpus", int, "environment", path, 0)
    if not 0 <= gpus <= 64:
        raise InputError(path, "environment.gpus", f"{gpus} is outside 0..64",
                         "give the number of GPUs the task needs")
    return {
        "schema_version": str(version),
        "toml_name": _get(task_t, "name", str, "task", path, None),
        "metadata": _table(data, "metadata", path),
        "agent": AgentConfig(timeout_sec=_positive(agent_t, "timeout_sec", path, 900.0, "agent"),
                             user=_user(agent_t, path)),
        "verifier": VerifierConfig(
            timeout_sec=_positive(ver_t, "timeout_sec", path, 600.0, "verifier"),
            env=_env_table(ver_t, "verifier", path)),
        "environment": EnvironmentConfig(
            build_timeout_sec=_positive(env_t, "build_timeout_sec", path, 600.0),
            docker_image=_get(env_t, "docker_image", str, "environment", path, None) or None,
            cpus=_positive(env_t, "cpus", path, 1.0),
            memory_mb=_size_mb(env_t, "memory_mb", "memory", path, 2048),
            storage_mb=_size_mb(env_t, "storage_mb", "storage", path, 10240),
            network_mode=_network_mode(env_t, path),
            workdir=_get(env_t, "workdir", str, "environment", path, "/app"),
            gpus=int(gpus), env=_env_table(env_t, "environment", path),
            services=_get(env_t, "services", bool, "environment", path, False)),
    }


def load_task(path: Path | str) -> Task:
    """Load one Harbor task directory.

    Raises:
        InputError: naming the file and field that is missing or malformed.
    """
    path = Path(path).resolve()
    if not path.is_dir():
        raise InputError(path, "<task>", "not a directory", "point at a task folder")
    if tb1.is_tb1_dir(path):
        return load_task(tb1.converted(path))
    toml_path = path / "task.toml"
    if not toml_path.is_file():
        raise InputError(path, "task.toml", "missing",
                         "a Harbor task needs task.toml (Terminal-Bench 1 tasks: "
                         "`fire-exp tasks convert`)")
    fields = parse_task_toml(toml_path)
    instruction_path = path / "instruction.md"
    if not instruction_path.is_file():
        raise InputError(path, "instruction.md", "missing", "write the agent's instruction there")
    instruction = strip_canary(read_text(instruction_path))
    if "\x00" in instruction:  # a CLI argument cannot hold it; the agent would get less
        line = instruction[:instruction.index("\x00")].count("\n") + 1
        raise InputError(instruction_path, f"line {line}", "holds a NUL byte",
                         "the instruction is text: remove it")
    if not instruction.strip():
        raise InputError(instruction_path, "<text>", "empty instruction")
    env: EnvironmentConfig = fields["environment"]
    if env.docker_image is None and not any(
            (path / "environment" / f).is_file() for f in _BUILD_FILES):
        raise InputError(path, "environment/Dockerfile", "missing",
                         "add environment/Dockerfile or set [environment].docker_image")
    if not env.workdir.startswith("/"):
        raise InputError(toml_path, "environment.workdir",
                         f"must be an absolute path, got {env.workdir!r}")
    if not (path / "tests" / "test.sh").is_file():
        raise InputError(path, "tests/test.sh", "missing",
                         "the verifier entry point must write /logs/verifier/reward.txt")
    toml_name = fields.pop("toml_name")
    name = path.name if toml_name is None else toml_name.rsplit("/", 1)[-1]
    if not _PLAIN_NAME.fullmatch(name) or ".." in name:
        raise InputError(toml_path, "task.name", f"{name!r} is not a plain name",
                         "use letters, digits, '.', '_', '+' and '-' (it names folders)")
    return Task(name=name, path=path, instruction=instruction, digest=task_digest(path),
                **fields)


def is_task_dir(path: Path) -> bool:
    """Whether ``path`` is a task directory (Harbor ``task.toml`` or Terminal-Bench 1
    ``task.yaml``)."""
    return (path / "task.toml").is_file() or (path / tb1.TB1_FILE).is_file()


def _looks_like_task(path: Path) -> bool:
    """A folder meant as a task, even a broken one (validation reports what is missing)."""
    return is_task_dir(path) or any((path / f).exists() for f in _TASK_MARKERS)


def discover(path: Path | str) -> list[Path]:
    """``path`` if it is a task, else the task folders directly under it, by name."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(path, "<tasks>", "no such folder")
    if is_task_dir(path):
        return [path]
    found = [p for p in sorted(path.iterdir()) if p.is_dir() and _looks_like_task(p)]
    if not found:
        raise InputError(path, "<tasks>", "no task directories (with task.toml) found")
    return found


def load_tasks(path: Path | str) -> list[Task]:
    """Load a task directory, or every task directory directly under ``path``, by name."""
    return [load_task(p) for p in discover(path)]
