"""The checks where attempts enter the analysis, rule by rule: each violation is refused by
``check_entries`` with its exact message (file, line, field, what to do), and the whole-frame
fast path ``frame_is_clean`` says False on exactly the same input (True on clean input), so
the slow path that names the line runs whenever a rule is broken."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.analysis.validate import Entry, check_columns, check_entries, frame_is_clean
from fire_exp.errors import InputError

PATH = Path("attempts.csv")
PLAN = AnalysisPlan.model_validate({
    "name": "p", "seed": 1, "primary": {"contrast": "real - baseline", "cohort": "eligible"},
    "arms": ["sham"], "reward_scale": [0.0, 2.0]})


def entries(*changes: dict[str, object]) -> list[Entry]:
    """Three clean attempts (lines 2-4), the i-th changed by ``changes[i]``."""
    base = [Entry(2, "t1", "real", "eligible", 2.0, True, "r"),
            Entry(3, "t1", "baseline", "eligible", 0.0, False, "r"),
            Entry(4, "t2", "sham", "silent", 1.0, True, "r")]
    return [replace(e, **c) for e, c in zip(base, [*changes, {}, {}, {}], strict=False)]


def frame(rows: list[Entry]) -> pd.DataFrame:
    return pd.DataFrame({"task": [e.task for e in rows], "arm": [e.arm for e in rows],
                         "cohort": [e.cohort for e in rows],
                         "reward": [float("nan") if e.reward is None else e.reward
                                    for e in rows],
                         "passed": [e.passed for e in rows], "run": [e.run for e in rows]})


def refusal(rows: list[Entry], *, plan: AnalysisPlan | None = PLAN, merge_runs: bool = False,
            column: str = "column") -> str:
    assert not frame_is_clean(frame(rows), plan=plan, merge_runs=merge_runs)
    with pytest.raises(InputError) as err:
        check_entries(PATH, rows, plan=plan, merge_runs=merge_runs, column=column)
    return str(err.value)


def test_clean_attempts_pass_both_paths() -> None:
    rows = entries()
    check_entries(PATH, rows, plan=PLAN, merge_runs=False)
    assert frame_is_clean(frame(rows), plan=PLAN, merge_runs=False)
    ablation = entries({"arm": "real-minus-enumeration"})  # analysed with real
    check_entries(PATH, ablation, plan=PLAN, merge_runs=False)
    assert frame_is_clean(frame(ablation), plan=PLAN, merge_runs=False)
    everyone = entries({}, {}, {"cohort": "all"})
    check_entries(PATH, everyone, plan=PLAN, merge_runs=False)
    assert frame_is_clean(frame(everyone), plan=PLAN, merge_runs=False)


@pytest.mark.parametrize(("change", "message"), [
    ({"reward": float("nan")}, "line 2, column 'reward': nan is not a finite number "
                               "(give a number in the reward scale)"),
    ({"reward": float("inf")}, "line 2, column 'reward': inf is not a finite number "
                               "(give a number in the reward scale)"),
    ({"reward": 2.5}, "line 2, column 'reward': 2.5 lies outside the reward scale [0, 2] (fix "
                      "the reward, or declare reward_scale: [LOW, HIGH] in the plan)"),
    ({"reward": -0.25}, "line 2, column 'reward': -0.25 lies outside the reward scale [0, 2] "
                        "(fix the reward, or declare reward_scale: [LOW, HIGH] in the plan)"),
    ({"reward": 0.0}, "line 2, column 'passed': true contradicts reward 0 (make passed agree "
                      "with the reward, or drop the passed column)"),
    ({"reward": 2.0, "passed": False}, "line 2, column 'passed': false contradicts reward 2 "
                                       "(make passed agree with the reward, or drop the passed "
                                       "column)"),
    ({"arm": "shamm"}, "line 2, column 'arm': arm 'shamm' is not named by the plan 'p' (did "
                       "you mean 'sham'? (known: baseline, real, sham); rename it, or list it "
                       "under the plan's arms:)"),
    ({"cohort": "eligble"}, "line 2, column 'cohort': cohort 'eligble' is not among the "
                            "plan's cohorts (did you mean 'eligible'? (known: eligible, "
                            "silent); fix the label, or add the cohort to the plan)"),
])
def test_each_broken_rule_is_refused_by_line_and_field(change: dict[str, object],
                                                       message: str) -> None:
    assert refusal(entries(change)) == f"{PATH}: {message}"


def test_the_ends_of_the_scale_are_inside_it() -> None:
    rows = entries({"reward": 2.0}, {"reward": 0.0})
    check_entries(PATH, rows, plan=PLAN, merge_runs=False)
    assert frame_is_clean(frame(rows), plan=PLAN, merge_runs=False)
    between = entries({"reward": 1.5, "passed": False}, {"reward": 0.5, "passed": True})
    check_entries(PATH, between, plan=PLAN, merge_runs=False)  # passed only contradicts ends
    assert frame_is_clean(frame(between), plan=PLAN, merge_runs=False)


def test_an_empty_reward_is_refused_only_when_passed() -> None:
    rows = entries({}, {"reward": None})
    check_entries(PATH, rows, plan=PLAN, merge_runs=False)
    assert refusal(entries({"reward": None})) == (
        f"{PATH}: line 2, column 'reward': is empty but 'passed' is true (give the reward, or "
        "mark the attempt as not passed)")


def test_without_a_plan_the_scale_is_zero_to_one_and_names_go_unchecked() -> None:
    rows = entries({"reward": 1.0, "arm": "anything", "cohort": "x"}, {"cohort": "x"},
                   {"reward": 0.5, "cohort": "y"})
    check_entries(PATH, rows, plan=None, merge_runs=False)
    assert frame_is_clean(frame(rows), plan=None, merge_runs=False)
    assert refusal(entries(), plan=None) == (
        f"{PATH}: line 2, column 'reward': 2 lies outside the reward scale [0, 1] (fix the "
        "reward, or declare reward_scale: [LOW, HIGH] in the plan)")


def test_a_task_in_two_cohorts_is_refused_naming_both_lines() -> None:
    rows = entries({}, {"cohort": "silent"})
    assert refusal(rows) == (f"{PATH}: line 3, column 'cohort': task 't1' is 'silent' here but "
                             "'eligible' on line 2 (a task belongs to one cohort: fix the "
                             "label)")


def test_two_runs_need_merge_runs() -> None:
    rows = entries({}, {}, {"run": "other"})
    message = (f"{PATH}: line 4, field 'run': run 'other' differs from run 'r' of line 2: the "
               "file holds several runs (analyse one run, or pass --merge-runs to pool them on "
               "purpose)")
    assert refusal(rows, column="field") == message
    check_entries(PATH, rows, plan=PLAN, merge_runs=True)
    assert frame_is_clean(frame(rows), plan=PLAN, merge_runs=True)
    no_run = frame(entries()).drop(columns="run")
    assert frame_is_clean(no_run, plan=PLAN, merge_runs=False)


def test_the_first_violation_in_file_order_is_the_one_named() -> None:
    rows = entries({}, {"arm": "nope"}, {"reward": 9.0})
    assert "line 3, column 'arm'" in refusal(rows)


@pytest.mark.parametrize(("header", "message"), [
    (["task;arm;reward"], "line 1 (header): one column 'task;arm;reward': the file looks "
                          "';'-separated (save it comma-separated)"),
    (["task\tarm"], "line 1 (header): one column 'task\\tarm': the file looks '\\t'-separated "
                    "(save it comma-separated)"),
    (["task|arm"], "line 1 (header): one column 'task|arm': the file looks '|'-separated (save "
                   "it comma-separated)"),
    (["TAX;RATE"], "line 1 (header): one column 'TAX;RATE': the file looks ';'-separated (save "
                   "it comma-separated)"),
    (["task", "rewrd"], "line 1 (header): column 'rewrd' is not a column fire-exp reads; did "
                        "you mean 'reward'? (rename it: a column fire-exp does not know is "
                        "ignored)"),
    (["task", "Cohort ", "arm"], "line 1 (header): column 'Cohort ' is not a column fire-exp "
                                 "reads; did you mean 'cohort'? (rename it: a column fire-exp "
                                 "does not know is ignored)"),
    (["task", "arm", "task"], "line 1 (header): column 'task' appears twice (keep one column "
                              "of each name)"),
    (["task", "arm", "task.1"], "line 1 (header): column 'task' appears twice (keep one column "
                                "of each name)"),
])
def test_a_header_fire_exp_would_misread_is_refused(header: list[str], message: str) -> None:
    with pytest.raises(InputError) as err:
        check_columns(PATH, header, ["task", "arm", "cohort", "reward"])
    assert str(err.value) == f"{PATH}: {message}"


@pytest.mark.parametrize("header", [
    ["task", "arm", "notes"], ["task"], ["XREF"], ["task", "v1.2"], ["task", "reward", "reward2"],
    ["task", "arm.1"], ["task", "arm", "cohort", "Reward"],
    ["task", "task.x"],  # like task, and task is there: not a duplicate, not a typo
    ["task", "task.1.1"],  # pandas' name for a second task.1, not for a second task
])
def test_a_header_without_lookalikes_is_read(header: list[str]) -> None:
    check_columns(PATH, header, ["task", "arm", "cohort", "reward", "reward2", "Reward"])
