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
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
TASKS = ("enumerate-lock-codes", "log-error-summary")
PLAN = ("# analysis plan of the freezing tests\nname: freezing\nseed: 1\n"
        "primary: {contrast: real - baseline, cohort: eligible}\n"
        "bootstrap: {n_resamples: 200}\npermutation: {n_resamples: 200}\n")


def fire_exp(*args: str, repo: Path = REPO) -> subprocess.CompletedProcess[str]:
    """``fire-exp ARGS`` of this checkout (in this process: ``run_cli``), or of a copy of
    the harness (``repo``) in a process of its own, which imports the copy."""
    if repo == REPO:
        return run_cli(*args, timeout=300)
    env = os.environ | {"PYTHONPATH": str(repo)}
    return subprocess.run([sys.executable, "-m", "fire_exp", *args], cwd=repo, env=env,
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


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A copy of the harness (package, configs, portfolios, plans) that a test may edit."""
    copy = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__")
    for name in ("fire_exp", "configs", "portfolios", "analysis"):
        shutil.copytree(REPO / name, copy / name, ignore=ignore)
    return copy


def _freeze_copy(copy: Path, tmp_path: Path) -> list[str]:
    overrides = ["panel=demo", "panel.eligible=[kv-http-service]",
                 "panel.silent=[csv-column-stats]", "panel.arms=[real,sham]",
                 "panel.attempts=1", f"prereg={tmp_path / 'frozen.json'}",
                 f"results_dir={tmp_path / 'results'}", "run=t", "analyze=false"]
    proc = fire_exp("freeze", *overrides, repo=copy)
    assert proc.returncode == 0, proc.stderr
    return overrides


def test_an_edited_harness_source_is_refused_by_name(repo_copy: Path, tmp_path: Path) -> None:
    overrides = _freeze_copy(repo_copy, tmp_path)
    source = repo_copy / "fire_exp" / "agents" / "simulated.py"
    source.write_text(source.read_text() + "\n# edited after freezing\n")
    proc = fire_exp("run", *overrides, repo=repo_copy)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "fire_exp/agents/simulated.py (changed) changed since freezing" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_edited_config_file_is_refused_by_name(repo_copy: Path, tmp_path: Path) -> None:
    overrides = _freeze_copy(repo_copy, tmp_path)
    config = repo_copy / "configs" / "agent" / "simulated.yaml"
    config.write_text(config.read_text() + "\n# a comment added after freezing\n")
    proc = fire_exp("run", *overrides, repo=repo_copy)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{config} changed since freezing" in proc.stderr


@pytest.mark.parametrize(("plan", "message"), [
    ("primary: {contrast: real - shamm}", "arm 'shamm' is not an arm of fire-exp or of this "
                                          "panel (did you mean 'sham'?"),
    ("primary: {contrast: real - sham, cohort: eligble}", "did you mean 'eligible'?"),
    ("primary: {contrast: real - sham}\ncohorts: [eligible, silnt, all]",
     "cohort 'silnt' is not a panel cohort"),
    # plans that validate field by field yet mean nothing, or fail only at analysis
    ("primary: {contrast: real - real}", "primary.contrast: 'real - real' contrasts arm "
                                         "'real' with itself"),
    ("primary: {contrast: real - sham}\nsecondary: [baseline - baseline]",
     "secondary.0: 'baseline - baseline' contrasts arm 'baseline' with itself"),
    ("primary: {contrast: real - sham}\nsecondary: [sham - real]",
     "secondary.0: 'sham - real' is 'real - sham' reversed"),
    ("primary: {contrast: real - sham}\ncohorts: [eligible, silent, eligible, all]",
     "cohorts: 'eligible' is listed twice"),
    ("primary: {contrast: real - sham}\ninteraction: {contrast: real - sham, cohorts: "
     "[eligible, eligible]}", "interaction.cohorts: 'eligible' and 'eligible' share tasks"),
    ("primary: {contrast: real - sham}\ninteraction: {contrast: real - sham, cohorts: "
     "[eligible, all]}", "interaction.cohorts: 'eligible' and 'all' share tasks"),
    ("primary: {contrast: real - sham}\nreward_scale: [0, .inf]", "reward_scale: [0.0, inf] "
                                                                 "is not finite"),
    ("primary: {contrast: real - sham}\nbootstrap: {n_resamples: 100000000}",
     "bootstrap.n_resamples: 100,000,000 is above the ceiling 1,000,000"),
    ("primary: {contrast: real - sham}\npermutation: {n_resamples: 1000000000}",
     "permutation.n_resamples: 1,000,000,000 is above the ceiling"),
    # the panel makes silent tasks; a plan without that cohort would refuse their attempts
    ("primary: {contrast: real - sham}\narms: [always_verify, reconsider, baseline]\n"
     "cohorts: [eligible, all]", "the analysis would refuse this panel's attempts: cohort "
                                 "'silent' is not among the plan's cohorts"),
])
def test_an_invalid_plan_is_never_frozen(tmp_path: Path, plan: str, message: str) -> None:
    path = tmp_path / "plan.yaml"
    if "arms:" not in plan:  # the panel's arms the contrast leaves out
        plan += "\narms: [sham, always_verify, reconsider, baseline]"
    path.write_text(f"name: bad\nseed: 1\n{plan}\n")
    manifest = tmp_path / "frozen.json"
    proc = fire_exp("freeze", "panel=demo", f"panel.analysis={path}", f"prereg={manifest}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not manifest.exists()


def test_ceilings_false_lifts_the_resample_ceiling(tmp_path: Path) -> None:
    from fire_exp.analysis.plan import load_plan

    path = tmp_path / "plan.yaml"
    path.write_text("name: big\nseed: 1\nprimary: {contrast: real - sham}\n"
                    "bootstrap: {n_resamples: 2000000}\nceilings: false\n")
    plan = load_plan(path)
    assert plan.bootstrap.n_resamples == 2_000_000
    assert "ceilings" not in plan.model_dump()  # a permission, not part of the plan's hash


def _freeze_demo(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return fire_exp("freeze", "panel=demo", f"prereg={tmp_path / 'demo.prereg.json'}", *extra)


def test_freeze_over_a_manifest_needs_force_and_keeps_a_backup(tmp_path: Path) -> None:
    manifest = tmp_path / "demo.prereg.json"
    assert _freeze_demo(tmp_path).returncode == 0
    first = manifest.read_bytes()
    again = _freeze_demo(tmp_path, "seed=3")
    assert again.returncode == 2 and "already frozen here" in again.stderr
    assert "--force" in again.stderr and "Traceback" not in again.stderr
    assert manifest.read_bytes() == first  # untouched
    forced = _freeze_demo(tmp_path, "seed=3", "--force")
    assert forced.returncode == 0, forced.stderr
    backups = list(tmp_path.glob("demo.prereg.json.*.bak"))
    assert len(backups) == 1 and backups[0].read_bytes() == first
    assert manifest.read_bytes() != first and str(backups[0]) in forced.stdout
    hydra_flag = _freeze_demo(tmp_path, "seed=4", "force=true")
    assert hydra_flag.returncode == 0 and len(list(tmp_path.glob("*.bak"))) == 2


@pytest.mark.parametrize(("name", "content", "says"), [
    ("notes.json", "my notes\n", "exists and is not a preregistration manifest"),
    ("README.md", "# readme\n", "a manifest is a .json file"),
])
def test_freeze_never_replaces_a_file_it_did_not_write(tmp_path: Path, name: str,
                                                        content: str, says: str) -> None:
    target = tmp_path / name
    target.write_text(content)
    proc = fire_exp("freeze", "panel=demo", f"prereg={target}", "--force")
    assert proc.returncode == 2 and says in proc.stderr
    assert target.read_text() == content and not list(tmp_path.glob("*.bak"))


def test_a_schedule_list_edited_by_hand_is_refused_before_the_first_attempt(
        tmp_path: Path) -> None:
    import json

    manifest = tmp_path / "demo.prereg.json"
    assert _freeze_demo(tmp_path).returncode == 0
    frozen = json.loads(manifest.read_text())
    frozen["schedule"][5]["task"] = "ghost-task"
    manifest.write_text(json.dumps(frozen))
    proc = fire_exp("run", "panel=demo", f"prereg={manifest}", f"results_dir={tmp_path / 'r'}")
    assert proc.returncode == 2 and "schedule[5] differs from the schedule" in proc.stderr
    assert not (tmp_path / "r" / "demo").exists() or not list((tmp_path / "r").rglob("*.jsonl"))


def test_a_changed_cli_binary_is_refused_by_name(tmp_path: Path) -> None:
    """The coding-agent CLI's binary is frozen (SHA-256 and ``--version``); another binary
    at the same path refuses the run, naming it and the version frozen."""
    import json

    binary = tmp_path / "bin" / "codex"
    binary.parent.mkdir()
    shutil.copy(REPO / "tests/agents/fake_cli.py", binary)
    binary.chmod(0o755)
    agent = ["agent=codex", f"agent.binary={binary}", "agent.model=m1",
             "+agent.prices.m1={input:1.0,output:1.0}"]
    proc = _freeze_demo(tmp_path, *agent)
    assert proc.returncode == 0, proc.stderr
    frozen = json.loads((tmp_path / "demo.prereg.json").read_text())["hashes"]
    entry = frozen["agent_binary:codex"]
    assert entry["version"].startswith("fake-cli") and str(binary) in entry["path"]
    binary.write_text(binary.read_text() + "# another build\n")
    proc = fire_exp("run", "panel=demo", f"prereg={tmp_path / 'demo.prereg.json'}", *agent,
                    f"results_dir={tmp_path / 'results'}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"the agent's CLI binary {binary} ({entry['version']})" in proc.stderr
    assert "changed since freezing (agent_binary:codex)" in proc.stderr
    assert not (tmp_path / "results").exists()
