"""docs/architecture.md is true of the code where a test can read both.

- Every name of code it gives in backticks is in the code: a module path
  (``runner/launch.launch_run``), a module and its member (``execute.build_attempt``), a
  class and its member (``Environment.check_tasks``), a file or folder of the repository,
  a constant or class (``MAX_STOP_ROUNDS``). What the doc writes as an example's
  variables (``done.frame(NAME)``) is not code and is left out by shape or by
  :data:`NOT_CODE`.
- Its lists are whole: every capability in the box contract, every abstract method of
  ``Environment`` and every member of ``CliDialect`` in the recipes; and the one
  capability it says nothing reads is the only one.

The layers are tests/test_layers.py's; the box contract's scan is
tests/agents/test_box_contract.py's; what the rest of the doc says is checked by reading.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.coding_agents.dialect import CliDialect
from fire_exp.environments.base import Environment
from fire_exp.environments.capabilities import Capability

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fire_exp"
DOC = ROOT / "docs" / "architecture.md"
# Backticked text of the doc that names no code: an example's variables, files a run
# writes, Python's and Hydra's own names, and a CLI's variable.
NOT_CODE = {"resamples.add", "result.extra", "session.begin/bash/stop", "/proc", "NAME.csv",
            "NAME.md", "attempts.jsonl", "configs/agent/NAME.yaml",
            "configs/environment/NAME.yaml", "panels/PANEL.prereg.json", "__init__.py",
            "fire_exp.__init__", "IS_SANDBOX", "DictConfig", "KeyError", "RuntimeError",
            "agent.base_url", "panel.declare"}
# Where a file named without its folder, or a name of the tests, may be.
SOURCES = ("fire_exp", "tests", "benchmarks")


def modules() -> dict[str, Path]:
    """``fire_exp``'s modules by dotted name (a package by its own name)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "suites" in path.parts:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def _has(obj: Any, chain: list[str]) -> bool:
    for name in chain:
        fields = getattr(obj, "__dataclass_fields__", {})
        if not hasattr(obj, name) and name not in fields:
            return False
        obj = getattr(obj, name, None)
    return True


def _classes(name: str) -> list[Any]:
    return [getattr(importlib.import_module(m), name) for m, path in MODULES.items()
            if re.search(rf"^class {name}\b", path.read_text(), re.M)]


def resolves(ref: str) -> bool | None:
    """Whether the code has what ``ref`` names (None: ``ref`` names no code)."""
    ref = re.sub(r"\(.*\)$", "", ref)
    if ref in NOT_CODE or not re.fullmatch(r"[\w./]+", ref):
        return None
    if "/" in ref or re.fullmatch(r"[\w-]+\.(py|sh|yaml|json|md)", ref):
        return _path_resolves(ref)
    head, *chain = ref.split(".")
    if not chain:
        if not re.fullmatch(r"[A-Z][A-Za-z0-9_]+", head):
            return None  # a method or setting named alone: the lists below check those
        return any(re.search(rf"\b{head}\b", p.read_text())
                   for folder in SOURCES for p in (ROOT / folder).rglob("*.py"))
    if head == "fire_exp":
        return ref in MODULES
    if head[0].isupper():
        return any(_has(cls, chain) for cls in _classes(head))
    owners = [m for m in MODULES if m.rsplit(".", 1)[-1] == head]
    if not owners:
        return None  # a variable of an example (``done.frame``)
    return any(_has(importlib.import_module(m), chain) for m in owners)


def _path_resolves(ref: str) -> bool:
    path, _, member = ref.partition(".") if not ref.endswith(
        (".py", ".sh", ".yaml", ".json", ".md")) else (ref, "", "")
    path = path.rstrip("/")
    for base in (PACKAGE, ROOT):
        if (base / path).exists() or (base / f"{path}.py").exists():
            if not member:
                return True
            module = "fire_exp." + path.replace("/", ".") if base == PACKAGE else path
            module = module.removesuffix(".__init__")
            return module in MODULES and _has(importlib.import_module(module),
                                              member.split("."))
    # a file named from its package's folder (``hook_transport/files.py``, ``codex.py``)
    return any(p.as_posix().endswith(path) for folder in SOURCES
               for p in (ROOT / folder).rglob(path.rsplit("/", 1)[-1]))


def references(text: str) -> list[str]:
    return sorted({r for r in re.findall(r"`([^`\n]+)`", text)})


def test_every_name_of_code_the_doc_gives_is_in_the_code() -> None:
    missing = [ref for ref in references(DOC.read_text()) if resolves(ref) is False]
    assert missing == []


@pytest.mark.parametrize("planted", ["runner/launch.launch_runs", "execute.build_attempts",
                                     "Environment.end_agent_session", "environments/nope.py",
                                     "MAX_STOP_" + "TURNS", "fire_exp.runner.nope"])
def test_a_name_the_code_lacks_is_found(planted: str) -> None:
    assert resolves(planted) is False


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(title)
    end = text.find("\n#", start + len(title))
    return text[start:end if end > 0 else None]


def test_the_box_contract_names_every_capability() -> None:
    named = set(references(_section("## The box contract")))
    assert {c.name for c in Capability} - named == set()


def test_only_the_capability_the_doc_says_nothing_reads_is_read_nowhere() -> None:
    read = set()
    for path in MODULES.values():
        tree = ast.parse(path.read_text())
        declared = {id(n) for a in ast.walk(tree) if isinstance(a, (ast.Assign, ast.AnnAssign))
                    and any(isinstance(t, ast.Name) and t.id == "capabilities"
                            for t in (a.targets if isinstance(a, ast.Assign) else [a.target]))
                    for n in ast.walk(a)}
        read |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                 and isinstance(n.value, ast.Name) and n.value.id == "Capability"
                 and id(n) not in declared}
    unread = {c.name for c in Capability} - read
    assert unread == {"EGRESS_ALLOWLIST"}
    assert "but `EGRESS_ALLOWLIST`, which nothing reads" in " ".join(DOC.read_text().split())


def test_the_environment_recipe_names_every_abstract_method() -> None:
    step = _section("### Recipe: add an environment").split("\n2. ")[0]
    assert set(Environment.__abstractmethods__) - set(references(step)) == set()


def test_the_dialect_recipe_names_every_member() -> None:
    step = _section("### Recipe: add a coding-agent CLI").split("\n2. ")[0]
    members = set(CliDialect.__annotations__) | {
        name for name, value in vars(CliDialect).items()
        if callable(value) and not name.startswith("_")}
    assert members - set(references(step)) == set()
