"""What of the box an agent uses beside its session (``agents/session.py``): the
harness's own agents run every command through ``session.bash``, so of ``session.env``
they read only the attempt's files and upload the solution; only a coding-agent CLI
(``agents/coding_agents/``), whose tool calls reach the policies through its hooks, uses
the box for more."""

from __future__ import annotations

import ast
from pathlib import Path

AGENTS = Path(__file__).resolve().parents[2] / "fire_exp" / "agents"
# What of the box an agent outside coding_agents/ may use: its task, its files, its paths,
# and upload (the oracle's solution); never exec, run or another way to run a command.
ALLOWED = {"task", "files", "paths", "upload"}


def box_uses(source: str) -> set[str]:
    """The attributes read of ``session.env`` (or of a name bound to it) in ``source``."""
    tree = ast.parse(source)
    aliases = {node.targets[0].id for node in ast.walk(tree)
               if isinstance(node, ast.Assign) and len(node.targets) == 1
               and isinstance(node.targets[0], ast.Name) and _is_box(node.value, set())}
    return {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and _is_box(node.value, aliases)}


def _is_box(node: ast.AST, aliases: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in aliases
    return isinstance(node, ast.Attribute) and node.attr == "env" and \
        isinstance(node.value, ast.Name) and node.value.id == "session"


def test_the_harness_agents_use_the_box_only_for_files() -> None:
    used = {path.name: box_uses(path.read_text()) for path in AGENTS.glob("*.py")}
    assert {name: uses - ALLOWED for name, uses in used.items() if uses - ALLOWED} == {}
    assert used["base.py"] >= {"upload"}  # the oracle: the claim names something real


def test_a_command_through_the_box_is_found() -> None:
    assert box_uses("def run(session):\n    session.env.exec('ls', 1)\n") == {"exec"}
    assert box_uses("def run(session):\n    box = session.env\n    box.run('ls', 1)\n") == \
        {"run"}
