"""The mapping file names tasks, arms and cohorts: each a name, and each task named there a
task of the results (docs/robustness.md, "One meaning per input")."""

from __future__ import annotations

from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.importers.harbor import load_mapping
from fire_exp.importers.mapping import ArmMapping, check_cohort_tasks
from tests.conftest import run_cli
from tests.importers.helpers import harbor_trial

ARMS = 'arms: {"job-real": real, "job-sham": sham}\n'


@pytest.mark.parametrize(("text", "where", "says"), [
    # YAML reads yes as true: every result of t1 went to a cohort 'True'
    (ARMS + "cohorts: {t1: yes}\n", "cohorts.t1", "is True, not a name"),
    (ARMS + "cohorts: {0123: eligible}\n", "cohorts", "is 83, not a name"),  # octal
    (ARMS + "default_cohort: 5\n", "default_cohort", "is 5, not a name"),
    ('arms: {"job-real": real, "job-sham": ""}\n', "arms.job-sham", "is '', not a name"),
    ('arms: {"job-real": real, yes: sham}\n', "arms", "is True, not a name"),
    ('arms: {"job-real": real, "job-sham": "sh\\u200bam"}\n', "arms.job-sham",
     "invisible character"),
    (ARMS + 'cohorts: {t1: "elig\\tible"}\n', "cohorts.t1", "control character"),
])
def test_a_mapping_name_that_is_not_a_name_is_refused(
        tmp_path: Path, text: str, where: str, says: str) -> None:
    path = tmp_path / "map.yaml"
    path.write_text("arm_from: job\n" + text)
    with pytest.raises(InputError) as err:
        load_mapping(path)
    assert err.value.field == where and says in err.value.problem


def test_a_cohort_task_close_to_one_left_in_the_default_cohort_is_a_typo() -> None:
    """``dedupe-email: eligible`` put the imported task dedupe-emails in the default
    cohort without a word (its attempts then read as another cohort's)."""
    mapping = ArmMapping(cohorts={"dedupe-email": "eligible", "t9": "silent"},
                         default_cohort="silent")
    with pytest.raises(InputError, match="did you mean 'dedupe-emails'") as err:
        check_cohort_tasks(mapping, {"dedupe-emails", "t1"}, "map.yaml")
    assert err.value.field == "cohorts.dedupe-email"
    # a task of another job, close to none imported here, is counted
    note = check_cohort_tasks(mapping, {"dedupe-email", "t1"}, "map.yaml")
    assert note is not None and "1 task(s) no result holds, e.g. t9" in note
    assert check_cohort_tasks(ArmMapping(cohorts={"t1": "eligible"}), {"t1"}, "m") is None


def test_import_refuses_the_typo_and_counts_the_others(tmp_path: Path) -> None:
    for arm in ("real", "sham"):
        harbor_trial(tmp_path / f"job-{arm}", "dedupe-emails", 0, reward=1.0)
    jobs = [str(tmp_path / "job-real"), str(tmp_path / "job-sham")]
    (tmp_path / "map.yaml").write_text("arm_from: job\n" + ARMS +
                                       "cohorts: {dedupe-email: eligible}\n")
    proc = run_cli("import", "harbor", *jobs, "--map", str(tmp_path / "map.yaml"),
                   "--out", str(tmp_path / "a.jsonl"))
    assert proc.returncode == 2 and "did you mean 'dedupe-emails'" in proc.stderr
    assert not (tmp_path / "a.jsonl").exists()
    (tmp_path / "map.yaml").write_text("arm_from: job\n" + ARMS +
                                       "cohorts: {dedupe-emails: eligible, t9: silent}\n")
    proc = run_cli("import", "harbor", *jobs, "--map", str(tmp_path / "map.yaml"),
                   "--out", str(tmp_path / "a.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert "1 task(s) no result holds, e.g. t9" in proc.stdout
