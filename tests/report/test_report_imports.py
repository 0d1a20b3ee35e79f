"""The report renders; it computes nothing: no module of fire_exp.report imports
fire_exp.stats, and the analysis never imports the report."""

from __future__ import annotations

import ast
from pathlib import Path

import fire_exp

PACKAGE = Path(fire_exp.__file__).resolve().parent


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _importers(package: str, forbidden: str) -> dict[str, set[str]]:
    found = {}
    for path in sorted((PACKAGE / package).rglob("*.py")):
        bad = {n for n in _imports(path) if n == forbidden or n.startswith(f"{forbidden}.")}
        if bad:
            found[path.name] = bad
    return found


def test_the_report_imports_nothing_from_stats():
    assert len(list((PACKAGE / "report").glob("*.py"))) >= 10
    assert _importers("report", "fire_exp.stats") == {}


def test_the_analysis_does_not_import_the_report():
    assert _importers("analysis", "fire_exp.report") == {}


def test_the_check_finds_an_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from fire_exp import stats\nimport fire_exp.stats.passk as p\n")
    assert _imports(module) >= {"fire_exp.stats", "fire_exp.stats.passk"}
