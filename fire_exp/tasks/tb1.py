"""Terminal-Bench 1 tasks (``task.yaml``) converted to the Harbor layout.

A Terminal-Bench 1 task keeps everything at its top level: ``task.yaml`` (instruction,
metadata, ``max_agent_timeout_sec``, ``max_test_timeout_sec``), the ``Dockerfile`` whose
build context is the task folder, ``docker-compose.yaml``, ``solution.sh`` (or
``solution.yaml``, a list of commands), ``run-tests.sh`` and ``tests/``. It has no reward
file: pass or fail is the test run's outcome. The conversion (reference/harbor-tasks.md):

- ``instruction`` → ``instruction.md``; metadata → ``[metadata]``; timeouts →
  ``[agent]`` / ``[verifier]``;
- the build context (every other top-level file) → ``environment/``;
- ``tests/`` → ``tests/``, ``run-tests.sh`` → ``tests/run-tests.sh`` with ``$TEST_DIR`` read
  as ``/tests``, and a ``tests/test.sh`` that writes ``1`` to
  ``/logs/verifier/reward.txt`` when it exits 0, else ``0``;
- ``solution.sh`` (or the commands of ``solution.yaml``) → ``solution/solve.sh``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.files import load_yaml, parse_yaml, read_text
from fire_exp.tasks.model import task_digest

TB1_FILE = "task.yaml"
_NOT_CONTEXT = {TB1_FILE, "solution.sh", "solution.yaml", "run-tests.sh", "tests",
                "__pycache__"}
_DEFAULT_RUN_TESTS = """#!/bin/bash
# Terminal-Bench 1's default test run (parser: pytest).
pytest "$TEST_DIR/test_outputs.py" -rA
"""
_TEST_SH = """#!/bin/bash
# Converted from Terminal-Bench 1 by fire-exp: the test run's exit status is the reward.
export TEST_DIR=/tests T_BENCH_TEST_DIR=/tests
mkdir -p /logs/verifier
cd {workdir}
bash /tests/run-tests.sh
if [ $? -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""
_METADATA_KEYS = ("author_name", "author_email", "difficulty", "category", "tags",
                  "parser_name", "expert_time_estimate_min", "junior_time_estimate_min")


def is_tb1_dir(path: Path) -> bool:
    """Whether ``path`` is a Terminal-Bench 1 task (``task.yaml``, no ``task.toml``)."""
    return (path / TB1_FILE).is_file() and not (path / "task.toml").is_file()


def read_task_yaml(path: Path) -> dict[str, Any]:
    """Parse and check ``task.yaml``; raises InputError naming the field."""
    file = path / TB1_FILE
    data = parse_yaml(read_text(file), file, "fix the file")
    if not isinstance(data, dict):
        raise InputError(file, "<yaml>", "expected a mapping at the top level")
    instruction = data.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        # Some Terminal-Bench 1 tasks keep several descriptions; the "base" one is the task.
        descriptions = data.get("descriptions")
        if isinstance(descriptions, list):
            instruction = next((d.get("description") for d in descriptions
                                if isinstance(d, dict) and d.get("key") == "base"), None)
    if not isinstance(instruction, str) or not instruction.strip():
        raise InputError(file, "instruction", "missing or empty", "write the task's text there")
    for key, default in (("max_agent_timeout_sec", 360.0), ("max_test_timeout_sec", 60.0)):
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not 0 < value <= 7 * 86_400:  # also refuses .inf and .nan
            raise InputError(file, key, f"expected a positive number of seconds up to a "
                             f"week, got {value!r}")
    data["instruction"] = instruction
    return data


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def _task_toml(name: str, data: dict[str, Any], workdir: str) -> str:
    meta = {k: data[k] for k in _METADATA_KEYS if data.get(k) is not None}
    lines = ['schema_version = "1.1"', "", "[task]", f"name = {_toml_value(name)}", "",
             "[metadata]", 'converted_from = "terminal-bench-1"']
    lines += [f"{k} = {_toml_value(v)}" for k, v in meta.items()]
    lines += ["", "[agent]", f"timeout_sec = {float(data.get('max_agent_timeout_sec', 360))}",
              "", "[verifier]",
              f"timeout_sec = {float(data.get('max_test_timeout_sec', 60))}", "",
              "[environment]", "build_timeout_sec = 600.0", f"workdir = {_toml_value(workdir)}",
              "allow_internet = true", ""]
    return "\n".join(lines)


def _workdir(dockerfile: Path) -> str:
    """The last ``WORKDIR`` of the Dockerfile (Terminal-Bench 1 images use /app)."""
    workdir = "/app"
    if dockerfile.is_file():
        for line in dockerfile.read_text(errors="replace").splitlines():
            words = line.split()
            if len(words) == 2 and words[0].upper() == "WORKDIR" and words[1].startswith("/"):
                workdir = words[1]
    return workdir


def _solution_script(src: Path) -> str | None:
    if (src / "solution.sh").is_file():
        return (src / "solution.sh").read_text(encoding="utf-8")
    if (src / "solution.yaml").is_file():
        steps = load_yaml(src / "solution.yaml") or []
        commands = [s["command"] if isinstance(s, dict) else str(s) for s in steps]
        return "#!/bin/bash\nset -e\n" + "\n".join(commands) + "\n"
    return None


def convert_tb1(src: Path | str, dest: Path | str) -> Path:
    """Write the Harbor form of the Terminal-Bench 1 task ``src`` into ``dest``.

    Raises:
        InputError: ``src`` is not a Terminal-Bench 1 task, or ``dest`` already exists.
    """
    src, dest = Path(src).resolve(), Path(dest)
    if not (src / TB1_FILE).is_file():
        raise InputError(src, TB1_FILE, "missing", "not a Terminal-Bench 1 task")
    if dest.exists() and any(dest.iterdir()):
        raise InputError(dest, "<folder>", "exists and is not empty", "choose a new folder")
    data = read_task_yaml(src)
    if not (src / "Dockerfile").is_file():
        raise InputError(src, "Dockerfile", "missing", "a Terminal-Bench 1 task builds from it")
    workdir = _workdir(src / "Dockerfile")
    (dest / "environment").mkdir(parents=True, exist_ok=True)
    for child in src.iterdir():
        if child.name in _NOT_CONTEXT:
            continue
        target = dest / "environment" / child.name
        (shutil.copytree if child.is_dir() else shutil.copy2)(child, target)
    tests = dest / "tests"
    if (src / "tests").is_dir():
        shutil.copytree(src / "tests", tests)
    tests.mkdir(exist_ok=True)
    run_tests = (src / "run-tests.sh").read_text(encoding="utf-8") \
        if (src / "run-tests.sh").is_file() else _DEFAULT_RUN_TESTS
    run_tests = run_tests.replace("${TEST_DIR}", "/tests").replace("$TEST_DIR", "/tests")
    (tests / "run-tests.sh").write_text(run_tests, encoding="utf-8")
    (tests / "test.sh").write_text(_TEST_SH.format(workdir=workdir), encoding="utf-8")
    solution = _solution_script(src)
    if solution is not None:
        (dest / "solution").mkdir(exist_ok=True)
        (dest / "solution" / "solve.sh").write_text(solution, encoding="utf-8")
    (dest / "instruction.md").write_text(data["instruction"].strip() + "\n", encoding="utf-8")
    (dest / "task.toml").write_text(_task_toml(src.name, data, workdir), encoding="utf-8")
    for script in dest.rglob("*.sh"):
        script.chmod(0o755)
    return dest


def cache_dir() -> Path:
    """Where Terminal-Bench 1 tasks converted on load are kept (``$FIRE_EXP_CACHE``)."""
    root = os.environ.get("FIRE_EXP_CACHE") or Path.home() / ".cache" / "fire-exp"
    return Path(root) / "tb1"


def converted(src: Path) -> Path:
    """The Harbor form of ``src``, converted once per content digest into the cache."""
    digest = hashlib.sha256(task_digest(src).encode()).hexdigest()[:12]
    dest = cache_dir() / f"{src.name}-{digest}"
    if not (dest / "task.toml").is_file():
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        convert_tb1(src, tmp)
        try:
            tmp.rename(dest)
        except OSError:  # another process converted it first
            shutil.rmtree(tmp, ignore_errors=True)
    return dest
