"""``fire-exp tasks list|show|validate|convert``: look at, check and convert tasks.

PATH is one task folder or a folder of tasks (Harbor ``task.toml`` or Terminal-Bench 1
``task.yaml``, converted on load). ``validate`` prints one line per task, ``ok`` or what is
wrong (file, field, fix), and exits 1 when any task is broken.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fire_exp.errors import FireExpError, InputError
from fire_exp.tasks.loader import discover, load_task
from fire_exp.tasks.model import Task
from fire_exp.tasks.tb1 import TB1_FILE, convert_tb1, is_tb1_dir


def _load_all(path: Path) -> list[tuple[Path, Task | None, str]]:
    """(folder, task or None, error) for every task under ``path``."""
    out: list[tuple[Path, Task | None, str]] = []
    for folder in discover(path):
        try:
            out.append((folder, load_task(folder), ""))
        except FireExpError as exc:
            out.append((folder, None, str(exc)))
    return out


def _image(task: Task) -> str:
    return task.environment.docker_image or "environment/Dockerfile"


def _list(path: Path) -> int:
    rows = _load_all(path)
    for folder, task, error in rows:
        if task is None:
            print(f"{folder.name:28} BROKEN  {error}")
            continue
        env = task.environment
        print(f"{task.name:28} {task.digest[:12]}  {_image(task):26} {env.network_mode:10} "
              f"agent {task.agent.timeout_sec:g}s  verifier {task.verifier.timeout_sec:g}s")
    return 1 if any(task is None for _, task, _ in rows) else 0


def _show(path: Path) -> int:
    task = load_task(path)
    env = task.environment
    fields = {
        "name": task.name, "path": str(task.path), "digest": task.digest,
        "schema_version": task.schema_version, "image": _image(task),
        "workdir": env.workdir, "network": env.network_mode,
        "limits": f"{env.cpus:g} cpus, {env.memory_mb} MB memory, {env.storage_mb} MB storage",
        "build timeout": f"{env.build_timeout_sec:g}s",
        "agent timeout": f"{task.agent.timeout_sec:g}s",
        "verifier timeout": f"{task.verifier.timeout_sec:g}s",
        "verifier env": ", ".join(task.verifier.env) or "-",
        "solution": "solution/solve.sh" if (task.solution_dir / "solve.sh").is_file() else "-",
        "metadata": ", ".join(f"{k}={v}" for k, v in task.metadata.items()) or "-",
    }
    for key, value in fields.items():
        print(f"{key + ':':18} {value}")
    print("\n" + task.instruction.rstrip())
    return 0


def _validate(paths: list[Path]) -> int:
    broken = 0
    for path in paths:
        try:
            rows = _load_all(path)
        except InputError as exc:
            print(f"FAIL {exc}")
            broken += 1
            continue
        for folder, task, error in rows:
            if task is None:
                print(f"FAIL {error}")
                broken += 1
            else:
                note = " (Terminal-Bench 1, converted)" if is_tb1_dir(folder) else ""
                print(f"ok   {folder}: {task.name} {task.digest[:12]}{note}")
    if broken:
        print(f"{broken} broken task(s)", file=sys.stderr)
    return 1 if broken else 0


def _convert(src: Path, dest: Path) -> int:
    if (src / TB1_FILE).is_file():
        print(f"converted {src} -> {convert_tb1(src, dest)}")
        load_task(dest)
        return 0
    sources = [p for p in sorted(src.iterdir()) if (p / TB1_FILE).is_file()] \
        if src.is_dir() else []
    if not sources:
        raise InputError(src, TB1_FILE, "no Terminal-Bench 1 task here",
                         "point at a task with task.yaml, or a folder of them")
    for task in sources:
        out = convert_tb1(task, dest / task.name)
        load_task(out)
        print(f"converted {task} -> {out}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fire-exp tasks", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="one line per task").add_argument("path", type=Path)
    sub.add_parser("show", help="everything about one task").add_argument("path", type=Path)
    validate = sub.add_parser("validate", help="check tasks; exit 1 if any is broken")
    validate.add_argument("paths", type=Path, nargs="+")
    convert = sub.add_parser("convert", help="Terminal-Bench 1 (task.yaml) to Harbor")
    convert.add_argument("src", type=Path)
    convert.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list(args.path)
    if args.command == "show":
        return _show(args.path)
    if args.command == "validate":
        return _validate(args.paths)
    return _convert(args.src, args.dest)
