"""Builders of attempt records for the analysis tests."""

from pathlib import Path

from fire_exp.records import AttemptRecord


def make_record(task="t1", arm="real", replicate=0, *, passed=True, cause=None, valid=True,
                n=0, cohort="eligible", **extra):
    return AttemptRecord(run="r", panel="p", attempt_id=f"{task}-{arm}-{replicate}-{n}",
                         task=task, task_digest="d", cohort=cohort, arm=arm,
                         replicate=replicate, order=0, seed=1, agent="sim",
                         environment="local", reward=float(passed), passed=passed,
                         cause=cause, valid=valid, **extra)


REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
