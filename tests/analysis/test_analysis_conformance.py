"""Records against the preregistration: an attempts file is analysed only when every record
is a scheduled attempt (or a declared replacement of one) of its run's frozen manifest."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fire_exp.analysis import analyze
from fire_exp.errors import InputError
from fire_exp.runner.replacement import replacement_seed
from fire_exp.runner.schedule import ScheduledAttempt

DEMO_RUN = Path(__file__).resolve().parents[1] / "report" / "data" / "demo_run"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A copy of a finished demo run: prereg.json (60 scheduled attempts) and its records."""
    return Path(shutil.copytree(DEMO_RUN, tmp_path / "run"))


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "attempts.jsonl").read_text().splitlines()]


def _write(run: Path, records: list[dict[str, Any]]) -> None:
    (run / "attempts.jsonl").write_text(
        "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))


def _edit_first_finished(run: Path, edit: Callable[[dict[str, Any]], None]) -> int:
    """Apply ``edit`` to the first finished record; returns its line number."""
    records = _lines(run)
    index = next(i for i, r in enumerate(records) if r["kind"] == "finished")
    edit(records[index])
    _write(run, records)
    return index + 1


def test_the_untouched_run_is_analysed(run: Path) -> None:
    result = analyze(run)
    assert result.metadata["plan_source"] == "frozen" and result.status.scheduled == 60


@pytest.mark.parametrize(("edit", "field", "says"), [
    (lambda r: r.update(task="no-such-task"), "task", "task 'no-such-task' is not scheduled"),
    (lambda r: r.update(task="serve-status-pag"), "task", "did you mean 'serve-status-page'"),
    # an arm the plan analyses (an ablation arm, as the plan names real) but never scheduled
    (lambda r: r.update(arm="real-minus-enumeration"), "arm",
     "arm 'real-minus-enumeration' is not scheduled"),
    (lambda r: r.update(replicate=7), "replicate", "replicate 7 of"),
    (lambda r: r.update(panel="fire-mini"), "panel", "is not the run's panel 'demo'"),
    (lambda r: r.update(attempt_id=r["attempt_id"] + "#1"), "attempt_id",
     "no record declares it"),
    # another seed, or a task edited after freezing: not the attempt preregistered
    (lambda r: r.update(seed=r["seed"] + 1), "seed", "is not the seed"),
    (lambda r: r.update(task_digest="0" * 64), "task_digest", "is not the digest"),
    # an attempt of the same panel under another agent model (its seeds are the same)
    (lambda r: r.update(config_hash="1" * 64), "config_hash", "is not the config hash"),
])
def test_a_record_the_schedule_never_held_is_refused_by_line(
        run: Path, edit: Callable[[dict[str, Any]], None], field: str, says: str) -> None:
    line = _edit_first_finished(run, edit)
    with pytest.raises(InputError) as err:
        analyze(run)
    assert err.value.field == f"line {line}, field '{field}'"
    assert says in err.value.problem and err.value.path.endswith("attempts.jsonl")


def test_a_task_relabelled_in_another_cohort_is_refused(run: Path) -> None:
    records = _lines(run)
    task = next(r["task"] for r in records if r["kind"] == "finished")
    for r in records:
        if r["kind"] == "finished" and r["task"] == task:
            r["cohort"] = "silent" if r["cohort"] == "eligible" else "eligible"
    _write(run, records)
    with pytest.raises(InputError, match="was frozen in cohort") as err:
        analyze(run)
    assert err.value.field.endswith("field 'cohort'")


def test_a_renamed_task_no_longer_shrinks_the_primary_silently(run: Path) -> None:
    """The issue's case: one record renamed to a task that does not exist was analysed,
    and the run reported complete with the primary on 2 tasks instead of 3."""
    _edit_first_finished(run, lambda r: r.update(task="ghost-task"))
    with pytest.raises(InputError, match="not scheduled"):
        analyze(run)


def _with_replacement(run: Path, edit: Callable[[dict[str, Any]], None] = lambda r: None,
                      ) -> int:
    """Make the first finished record an environment failure replaced by ``#1`` (its seed
    the one the runner draws), edit the replacement; returns the replacement's line."""
    records = _lines(run)
    index = next(i for i, r in enumerate(records) if r["kind"] == "finished")
    first = records[index]
    successor = f"{first['attempt_id']}#1"
    failed = first | {"reward": None, "passed": False, "cause": "environment_failed",
                      "lineage": {"replaces": None, "replaced_by": successor,
                                  "cause": "environment_failed"}}
    item = ScheduledAttempt(0, first["task"], first["cohort"], first["arm"],
                            first["replicate"], first["order"], first["seed"])
    seed = json.loads((run / "prereg.json").read_text())["seed"]
    replacement = first | {"attempt_id": successor, "seed": replacement_seed(seed, item, 1),
                           "lineage": {"replaces": first["attempt_id"], "replaced_by": None,
                                       "cause": "environment_failed"}}
    edit(replacement)
    records[index:index + 1] = [failed, replacement]
    _write(run, records)
    return index + 2


def test_a_declared_replacement_is_analysed(run: Path) -> None:
    _with_replacement(run)
    result = analyze(run)
    assert result.metadata["n_superseded"] == 1


def test_a_replacement_of_another_seed_is_refused(run: Path) -> None:
    line = _with_replacement(run, lambda r: r.update(seed=r["seed"] + 1))
    with pytest.raises(InputError, match="the panel seed derives for") as err:
        analyze(run)
    assert err.value.field == f"line {line}, field 'seed'"


def test_a_replacement_carrying_its_originals_seed_is_refused(run: Path) -> None:
    records = _lines(run)
    original = next(r for r in records if r["kind"] == "finished")
    line = _with_replacement(run, lambda r: r.update(seed=original["seed"]))
    with pytest.raises(InputError, match=f"seed {original['seed']} is not the seed") as err:
        analyze(run)
    assert err.value.field == f"line {line}, field 'seed'"


def test_a_manifest_whose_panel_seed_is_not_a_seed_is_named(run: Path) -> None:
    _with_replacement(run)
    manifest = json.loads((run / "prereg.json").read_text())
    (run / "prereg.json").write_text(json.dumps(manifest | {"seed": True}))
    with pytest.raises(InputError) as err:
        analyze(run)
    assert err.value.path.endswith("prereg.json") and err.value.field == "seed"


@pytest.mark.parametrize("reward", [0.0, 1.0], ids=["disagreeing", "identical"])
def test_an_attempt_recorded_twice_is_refused(run: Path, reward: float) -> None:
    records = _lines(run)
    first = next(r for r in records if r["kind"] == "finished" and r["reward"] == 1.0)
    first_line = records.index(first) + 1
    records.append(first | {"reward": reward, "passed": reward == 1.0})
    _write(run, records)
    with pytest.raises(InputError) as err:
        analyze(run)
    assert err.value.field == f"line {len(records)}, field 'attempt_id'"
    assert f"already recorded on line {first_line}" in err.value.problem
    assert ("disagree" in err.value.problem) == (reward == 0.0)


def test_a_csv_beside_a_manifest_is_checked_against_its_schedule(run: Path) -> None:
    rows = ["task,arm,replicate,cohort,reward",
            "serve-status-page,real,0,eligible,1", "serve-status-page,sham,0,eligible,0",
            "ghost,real,0,eligible,1"]
    (run / "attempts.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError) as err:
        analyze(run / "attempts.csv")
    assert err.value.field == "line 4, column 'task'"


@pytest.mark.parametrize(("schedule", "where"), [
    ("not a list", "schedule"),
    ([], "schedule"),
    ([{"task": "t", "cohort": "eligible", "arm": "real", "replicate": "x"}],
     "schedule[0].replicate"),
    ([{"task": "t", "cohort": "eligible", "arm": "real"}], "schedule[0].replicate"),
    ([7], "schedule[0]"),
])
def test_a_malformed_schedule_names_the_manifest_and_the_entry(
        run: Path, schedule: Any, where: str) -> None:
    manifest = json.loads((run / "prereg.json").read_text())
    manifest["schedule"] = schedule
    (run / "prereg.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError) as err:
        analyze(run)
    assert err.value.path.endswith("prereg.json") and err.value.field == where


def test_without_a_manifest_the_attempts_need_a_plan_given(run: Path) -> None:
    (run / "prereg.json").unlink()
    with pytest.raises(InputError, match="no preregistration manifest"):
        analyze(run)
    described = analyze(run, "demo").metadata["plan_used"]
    assert "NO PREREGISTRATION" in str(described)
