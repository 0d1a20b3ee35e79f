"""Freezing that cannot be fooled: after ``fire-exp freeze``, changing one byte of a policy
source, a task file or the analysis plan makes ``fire-exp run`` refuse, naming the file.

Everything runs on copies in a temporary folder (portfolio, suite, plan, manifest, results),
passed through config overrides, so nothing in the repository is modified.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fire_exp.paths import PORTFOLIOS_DIR, SUITES_DIR

REPO = Path(__file__).resolve().parents[2]
TASKS = ("enumerate-lock-codes", "log-error-summary")
# A valid plan (freezing parses it); the first "e" is in the comment, for flip_one_byte.
PLAN = "# analysis plan of the freezing tests\n" + (REPO / "analysis" / "demo.yaml").read_text()


def fire_exp(*args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "fire_exp", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def frozen(tmp_path: Path) -> dict[str, Path | list[str]]:
    """A small fire-mini panel on copies of its inputs, frozen into a tmp manifest."""
    portfolio = tmp_path / "portfolio"
    shutil.copytree(PORTFOLIOS_DIR / "fire-core", portfolio)
    suite = tmp_path / "suite"
    for task in TASKS:
        shutil.copytree(SUITES_DIR / "fire-mini" / task, suite / task)
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    prereg = tmp_path / "prereg.json"
    overrides = ["panel=fire-mini", f"panel.portfolio={portfolio}", f"panel.suite={suite}",
                 f"panel.analysis={plan}", f"panel.eligible=[{TASKS[0]}]",
                 f"panel.silent=[{TASKS[1]}]", "panel.arms=[real,baseline]", "panel.attempts=1",
                 f"prereg={prereg}", f"results_dir={tmp_path / 'results'}", "run=t",
                 "analyze=false"]
    proc = fire_exp("freeze", *overrides)
    assert proc.returncode == 0, proc.stderr
    assert prereg.is_file()
    return {"portfolio": portfolio, "suite": suite, "plan": plan, "overrides": overrides}


def flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    i = data.index(b"e")  # in a comment or docstring: the file stays valid
    data[i] = ord("E")
    path.write_bytes(bytes(data))


def refused(overrides: list[str], named: Path) -> str:
    proc = fire_exp("run", *overrides)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "changed since freezing" in proc.stderr
    assert str(named) in proc.stderr
    return proc.stderr


def test_an_unchanged_panel_runs(frozen) -> None:  # type: ignore[no-untyped-def]
    proc = fire_exp("run", *frozen["overrides"])
    assert proc.returncode == 0, proc.stderr
    assert "verified against" in proc.stderr


def test_a_changed_policy_source_is_refused(frozen) -> None:  # type: ignore[no-untyped-def]
    source = frozen["portfolio"] / "enumeration.py"
    flip_one_byte(source)
    refused(frozen["overrides"], source)


def test_a_changed_task_file_is_refused(frozen) -> None:  # type: ignore[no-untyped-def]
    task = frozen["suite"] / TASKS[1]
    flip_one_byte(task / "tests" / "check.py")
    refused(frozen["overrides"], task / "tests" / "check.py")


def test_a_changed_analysis_plan_is_refused(frozen) -> None:  # type: ignore[no-untyped-def]
    flip_one_byte(frozen["plan"])
    refused(frozen["overrides"], frozen["plan"])


def test_a_policy_source_added_after_freezing_is_refused(frozen) -> None:  # type: ignore[no-untyped-def]
    extra = frozen["portfolio"] / "late_addition.py"
    shutil.copy(frozen["portfolio"] / "enumeration.py", extra)
    text = extra.read_text().replace('name = "enumeration"', 'name = "late_addition"')
    extra.write_text(text)
    proc = fire_exp("run", *frozen["overrides"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "late_addition.py" in proc.stderr and "not in the preregistration" in proc.stderr
