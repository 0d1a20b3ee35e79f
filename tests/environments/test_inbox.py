"""The session host is three things, each once: the in-box program, the process utilities
it shares with the host side, and one client.

The in-box modules run in boxes with nothing but a ``python3``: they import the standard
library only (and the program its neighbour ``procs``); the host side imports ``procs``
but never the program; the ``/proc`` marker scan and ``kill_marked`` are defined once.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

from fire_exp.environments import inbox

PACKAGE = Path(__file__).resolve().parents[2] / "fire_exp"
SHARED = ("kill_marked", "marked_processes", "is_alive", "session_of", "pipe_holders",
          "attached_streams", "as_owner")


@functools.cache
def _trees() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(), str(path))
            for path in PACKAGE.rglob("*.py") if "suites" not in path.parts}


def _imported(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names |= {f"{base}.{alias.name}" if base else alias.name for alias in node.names}
            names.add(base)
    return names


def test_the_in_box_modules_import_only_the_standard_library() -> None:
    for name in inbox.FILES:
        imported = _imported(ast.parse((inbox.HERE / name).read_text()))
        foreign = {n for n in imported if n.split(".")[0] not in sys.stdlib_module_names
                   and n not in ("procs", ".", "..procs", ".procs")}
        assert not foreign, f"inbox/{name} imports {sorted(foreign)}"


def test_the_host_side_never_imports_the_in_box_program() -> None:
    for path, tree in _trees().items():
        if path.parent == inbox.HERE:
            continue
        hits = {n for n in _imported(tree) if n.endswith("inbox.session_host")
                or n == "fire_exp.environments.session_host"}
        assert not hits, f"{path.relative_to(PACKAGE)} imports the in-box program: {hits}"


def test_the_process_utilities_are_defined_once() -> None:
    defined: dict[str, list[str]] = {}
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in SHARED:
                defined.setdefault(node.name, []).append(str(path.relative_to(PACKAGE)))
    assert defined == {name: ["environments/inbox/procs.py"] for name in SHARED}
