"""The routing audit: which fire-core families are eligible on which fire-mini tasks."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import yaml

from fire_exp.cli.audit_routing import audit, parse_args
from fire_exp.errors import InputError
from fire_exp.policies.model import Family
from fire_exp.policies.routing import route_texts

REPO = Path(__file__).resolve().parents[2]
PANEL = yaml.safe_load((REPO / "configs" / "panel" / "fire-mini.yaml").read_text())


def test_the_panel_cohorts_match_the_routing() -> None:
    table = audit("fire-core", "fire-mini")
    routes = {r.task: r.families for r in table.routes}
    assert all(routes[t] for t in PANEL["eligible"]), "an eligible task no family covers"
    assert set(PANEL["silent"]) == set(table.uncovered)
    assert len(PANEL["silent"]) >= 8


def test_every_family_has_an_eligible_task() -> None:
    table = audit("fire-core", "fire-mini")
    for family in table.families:
        assert table.tasks_of(family), f"{family} routes to no task"
    assert len(table.tasks_of("service_persistence")) >= 2
    assert len(table.tasks_of("database_evidence")) >= 2


class _Words(Family):
    def __init__(self, name: str, word: str) -> None:
        self.name, self.word = name, word

    def eligible(self, task_text: str) -> bool:
        if self.word == "!":
            raise RuntimeError("broken predicate")
        return self.word in task_text


def test_cofiring_uncovered_and_errors() -> None:
    families = [_Words("a", "server"), _Words("b", "git"), _Words("c", "!")]
    texts = {"t1": "a git server", "t2": "a server", "t3": "count words"}
    table = route_texts(families, texts, "p")
    assert table.cofiring == {("a", "b"): ("t1",)}
    assert table.uncovered == ("t3",)
    assert all(r.errors == ("c: RuntimeError",) for r in table.routes)
    rows = list(csv.DictReader(table.to_csv().splitlines()))
    assert [(r["task"], r["a"], r["b"], r["n_families"]) for r in rows] == [
        ("t1", "1", "1", "2"), ("t2", "1", "0", "1"), ("t3", "0", "0", "0")]
    assert "a + b: t1" in table.to_markdown()


def test_unknown_argument_names_the_fix() -> None:
    try:
        parse_args(["suite=fire-mini"])
    except InputError as exc:
        assert "usage: fire-exp audit-routing" in str(exc)
    else:
        raise AssertionError("an unknown key was accepted")


def test_cli_prints_and_saves_csv_and_markdown(tmp_path: Path) -> None:
    env = os.environ | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "fire_exp", "audit-routing",
                           "portfolio=fire-core", "tasks=fire-mini", f"out={tmp_path}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Tasks no family covers (8)" in proc.stdout
    rows = list(csv.DictReader((tmp_path / "fire-core__fire-mini.csv").open()))
    assert {r["task"] for r in rows} >= set(PANEL["eligible"]) | set(PANEL["silent"])
    assert (tmp_path / "fire-core__fire-mini.md").read_text().startswith("# Routing")
