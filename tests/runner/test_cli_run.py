"""``fire-exp run`` resume handling and the Ray executor's config, without running Ray."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from fire_exp.cli._hydra import to_run_config
from fire_exp.cli.run import resume_command
from fire_exp.paths import CONFIG_DIR, SUITES_DIR
from fire_exp.runner.build import make_executor
from tests.runner.runner_helpers import ROOT, cli


def test_resume_of_a_missing_run_is_refused(tmp_path: Path) -> None:
    proc = cli("resume=nothing-here", results=tmp_path)
    assert proc.returncode == 2 and "no run 'nothing-here'" in proc.stderr


def test_resume_reverifies_the_preregistration(tmp_path: Path) -> None:
    rule = "+panel.replacement={max_replacements:1,causes:[provider_failed]}"
    # "1:before": the driver dies at its first store write, after the preregistration step
    first = cli("run=r", rule, results=tmp_path, env={"FIRE_EXP_CRASH_AT": "1:before"},
                subprocess_=True)
    assert first.returncode < 0 and (tmp_path / "rt" / "r" / "prereg.json").is_file()
    changed = cli("resume=r", results=tmp_path)  # the replacement rule is frozen
    assert changed.returncode == 2 and "changed since freezing" in changed.stderr
    assert "panel_config" in changed.stderr
    same = cli("resume=r", rule, results=tmp_path, env={"FIRE_EXP_CRASH_AT": "1:before"},
               subprocess_=True)
    assert same.returncode < 0, same.stderr  # verified, and got as far as the store


def test_run_and_resume_must_agree(tmp_path: Path) -> None:
    proc = cli("run=a", "resume=b", results=tmp_path)
    assert proc.returncode == 2 and "disagree" in proc.stderr


def test_resume_command_keeps_the_overrides() -> None:
    assert resume_command(["panel=demo", "run=x", "seed=3", "panel.eligible=[a, b]"], "x") == \
        "fire-exp run panel=demo seed=3 'panel.eligible=[a, b]' resume=x"


def test_ray_config_builds_the_executor_without_importing_ray() -> None:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["executor=ray", "executor.workers=3"])
    config = to_run_config(cfg)
    executor = make_executor(config.executor)
    assert (executor.name, executor.address, executor.workers) == ("ray", None, 3)
    probe = ("import sys, fire_exp.runner.ray_executor, fire_exp.runner; "
             "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_task_the_environment_cannot_prepare_refuses_before_recording(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITES_DIR / "fire-mini" / "csv-column-stats", suite / "needs-image")
    (suite / "needs-image" / "environment" / "setup.sh").unlink()  # only its Dockerfile left
    proc = cli(f"panel.suite={suite}", "panel.eligible=[]", "panel.silent=[needs-image]",
               "run=r", results=tmp_path / "results")
    assert proc.returncode == 2, proc.stderr
    error = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(error) == 1 and "csv-column-stats: no environment/setup.sh" in error[0]
    assert not (tmp_path / "results").exists()  # nothing recorded, not even the manifest


def test_a_bad_environment_parameter_refuses_before_the_first_attempt(tmp_path: Path) -> None:
    proc = cli("run=r", "+environment.keep_workdri=true", results=tmp_path)
    assert proc.returncode == 2
    assert "configs/environment/local.yaml: keep_workdri: unknown parameter" in proc.stderr
    assert not (tmp_path / "rt").exists()


@pytest.mark.slow
def test_resume_refuses_records_the_manifest_never_scheduled(tmp_path: Path) -> None:
    """Slow: a whole small panel, before its records are edited."""
    import json

    assert cli("run=r", results=tmp_path).returncode == 0
    attempts = tmp_path / "rt" / "r" / "attempts.jsonl"
    lines = attempts.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"kind":"finished"' in line)
    record = json.loads(lines[index])
    lines[index] = json.dumps(record | {"task": "ghost-task"}, separators=(",", ":"))
    attempts.write_text("\n".join(lines) + "\n")
    before = attempts.read_bytes()
    resumed = cli("resume=r", results=tmp_path)
    assert resumed.returncode == 2, resumed.stderr
    assert f"line {index + 1}, field 'task': task 'ghost-task' is not scheduled" in \
        resumed.stderr
    assert attempts.read_bytes() == before  # nothing ran, nothing appended
