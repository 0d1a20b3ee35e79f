"""Bad attempts files and plans, as a careless or hostile user writes them: each gets a
one-line error naming the file, the line and the field (exit 2), or a correct result.
Every row of docs/robustness.md's analysis table has its case here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fire_exp.analysis import analyze, load_attempts, load_plan
from fire_exp.cli import main as cli
from fire_exp.errors import InputError
from fire_exp.records import append_records
from tests.analysis.analysis_helpers import REPO, make_record

HEADER = "task,arm,replicate,cohort,reward\n"
GOOD = "t1,real,0,eligible,1\nt1,sham,0,eligible,0\n"


def _csv(tmp_path: Path, body: str, header: str = HEADER, name: str = "a.csv") -> Path:
    path = tmp_path / name
    path.write_text(header + body, encoding="utf-8")
    return path


def _analyze(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``fire-exp analyze`` of a file without a manifest: with a plan given, as it needs."""
    plan = [] if "--plan" in args else ["--plan", "default"]
    code = cli(["analyze", *args, *plan])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("body", "line", "field", "says"), [
    ("t1,real,0,eligible,1.5\n", 2, "reward", "1.5 lies outside the reward scale [0, 1]"),
    ("t1,real,0,eligible,-0.3\n", 2, "reward", "-0.3 lies outside"),
    ("t1,real,0,eligible,7\n", 2, "reward", "7 lies outside"),
    ("t1,real,0,eligible,\n", 2, "reward", "is empty"),
    ("t1,real,0,eligible,nan\n", 2, "reward", "is not a finite number"),
    ("t1,Sham,0,eligible,1\n", 2, "arm", "did you mean 'sham'?"),
    ("t1,shamm,0,eligible,1\n", 2, "arm", "did you mean 'sham'?"),
    ("t1,real,0,eligble,1\n", 2, "cohort", "did you mean 'eligible'?"),
    ("t1,real,0,eligible,1\nt1,sham,0,silent,0\n", 3, "cohort",
     "task 't1' is 'silent' here but 'eligible' on line 2"),
])
def test_bad_csv_cells_are_refused_by_line_and_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, line: int, field: str,
        says: str) -> None:
    path = _csv(tmp_path, body)
    code, out, err = _analyze(capsys, str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{path}: line {line}, column '{field}'" in err and says in err


def test_a_passed_column_contradicting_the_reward_is_refused(tmp_path: Path) -> None:
    path = _csv(tmp_path, "t1,real,0,1,0\n", "task,arm,replicate,passed,reward\n")
    with pytest.raises(InputError, match="column 'passed': true contradicts reward 0"):
        load_attempts(path, load_plan(REPO / "analysis" / "default.yaml"))
    path = _csv(tmp_path, "t1,real,0,0,1\n", "task,arm,replicate,passed,reward\n")
    with pytest.raises(InputError, match="false contradicts reward 1"):
        load_attempts(path)


def test_a_plan_may_declare_another_reward_scale(tmp_path: Path) -> None:
    plan = load_plan(REPO / "analysis" / "default.yaml").model_copy(
        update={"reward_scale": (0.0, 10.0)})
    path = _csv(tmp_path, "t1,real,0,eligible,7\nt1,sham,0,eligible,10\n")
    loaded = load_attempts(path, plan)
    assert list(loaded.attempts["reward"]) == [7.0, 10.0]
    assert list(loaded.attempts["passed"]) == [False, True]


def test_analyze_reads_a_csv_on_the_given_plans_reward_scale(tmp_path: Path) -> None:
    """The CSV is read once, with the plan: a reward of 10 on a [0, 10] scale passes, 7
    fails, and nothing is refused on the default [0, 1] scale first."""
    plan = load_plan(REPO / "analysis" / "default.yaml").model_copy(
        update={"reward_scale": (0.0, 10.0)})
    rows = "".join(f"t{i},{arm},0,eligible,{r}\n" for i in range(4)
                   for arm, r in (("real", 10), ("sham", 7)))
    result = analyze(_csv(tmp_path, rows), plan)
    rates = result.pass_rates.set_index(["cohort", "arm"])["pass_rate_pct"]
    assert rates[("eligible", "real")] == 100.0 and rates[("eligible", "sham")] == 0.0


def test_a_csv_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (HEADER + GOOD).encode())
    assert list(load_attempts(path).attempts["task"]) == ["t1", "t1"]


def _jsonl(tmp_path: Path, records: list, name: str = "attempts.jsonl") -> Path:
    path = tmp_path / name
    append_records(path, records)
    return path


@pytest.mark.parametrize(("edit", "field", "says"), [
    ({"reward": 5.0}, "reward", "5 lies outside the reward scale"),
    ({"reward": float("nan")}, "reward", "finite number"),
    ({"arm": "Sham"}, "arm", "did you mean 'sham'?"),
])
def test_bad_jsonl_records_are_refused_by_line_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: dict, field: str,
        says: str) -> None:
    path = _jsonl(tmp_path, [make_record("t1", "real"), make_record("t1", "sham", passed=False)])
    lines = path.read_text().splitlines()
    raw = json.loads(lines[1]) | edit
    lines[1] = json.dumps(raw)  # NaN written as the bare token NaN, as Python's json does
    path.write_text("\n".join(lines) + "\n")
    code, out, err = _analyze(capsys, str(path))
    assert code == 2 and err.count("\n") == 1, err
    assert f"{path}: line 2, field '{field}'" in err and says in err


def test_two_runs_in_one_file_need_merge_runs(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    first = [make_record(t, a, passed=a == "real", cohort="eligible")
             for t in ("t1", "t2", "t3") for a in ("real", "sham")]
    second = [r.model_copy(update={"run": "r2", "attempt_id": r.attempt_id + "-b"})
              for r in first]
    path = _jsonl(tmp_path, first + second)
    code, _, err = _analyze(capsys, str(path), "--out", str(tmp_path / "out"))
    assert code == 2 and "line 7, field 'run'" in err and "--merge-runs" in err
    merged = load_attempts(path, merge_runs=True)
    att = merged.attempts
    assert len(att) == 12 and merged.n_superseded == 0  # nothing "replaced"
    assert sorted(att[att["task"] == "t1"]["replicate"].tolist()) == [0, 0, 1, 1]


def test_a_torn_tail_is_reported_in_the_printed_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [make_record(t, a, passed=a == "real") for t in ("t1", "t2") for a in
               ("real", "sham")]
    path = _jsonl(tmp_path, records)
    with open(path, "a") as fh:
        fh.write('{"schema_version": 1, "kind": "fini')
    code, out, _ = _analyze(capsys, str(path), "--out", str(tmp_path / "o"))
    assert "the last line of" in out and "torn by a crash" in out
    assert code in (0, 1)  # 2 tasks: the primary exists (exit 0)


def test_analyze_out_naming_a_file_is_one_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _csv(tmp_path, GOOD)
    target = tmp_path / "a-file.txt"
    target.write_text("not a folder")
    code, _, err = _analyze(capsys, str(path), "--out", str(target))
    assert code == 2 and f"{target}: --out: is a file" in err and err.count("\n") == 1


def test_a_missing_primary_contrast_exits_non_zero(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _csv(tmp_path, "t1,real,0,eligible,1\nt1,baseline,0,eligible,0\n")
    code, out, err = _analyze(capsys, str(path), "--out", str(tmp_path / "o"))
    assert code == 1 and "primary: 'real - sham' on 'eligible' could not be computed" in err
    assert (tmp_path / "o" / "contrasts.csv").is_file()  # the tables are still written


@pytest.mark.parametrize(("plan_text", "field", "says"), [
    ("primary: {contrast: real - sham, cohort: eligble}", "primary.cohort",
     "did you mean 'eligible'?"),
    ("primary: {contrast: real - sham}\ninteraction: {contrast: real - sham, "
     "cohorts: [eligible, silnt]}", "interaction.cohorts", "did you mean 'silent'?"),
    ("primary: {contrast: real - sham}\nreward_scale: [1, 0]", "reward_scale",
     "is not below"),
])
def test_an_inconsistent_plan_is_refused_at_analyze(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plan_text: str, field: str,
        says: str) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"name: p\nseed: 1\n{plan_text}\n")
    code, _, err = _analyze(capsys, str(_csv(tmp_path, GOOD)), "--plan", str(plan))
    assert code == 2 and f"{plan}: " in err and says in err, err
    assert field.split(".")[0] in err


def test_two_thousand_tasks_are_analysed(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """2,000 tasks x 5 arms x 4 attempts: the sign-flip once overflowed past 1,024 tasks."""
    gen = np.random.default_rng(0)
    arms = ["real", "sham", "always_verify", "reconsider", "baseline"]
    rate = {"real": 0.7, "sham": 0.55, "always_verify": 0.6, "reconsider": 0.6,
            "baseline": 0.5}
    index = np.repeat(np.arange(2000), 20)
    frame = pd.DataFrame({
        "task": [f"t{i}" for i in index], "arm": np.tile(np.repeat(arms, 4), 2000),
        "replicate": np.tile(np.arange(4), 2000 * 5),
        "cohort": np.where(index % 2 == 0, "eligible", "silent")})
    frame["reward"] = (gen.random(len(frame)) < frame["arm"].map(rate)).astype(int)
    path = tmp_path / "big.csv"
    frame.to_csv(path, index=False)
    code, out, err = _analyze(capsys, str(path), "--out", str(tmp_path / "o"))
    assert code == 0, err
    contrasts = pd.read_csv(tmp_path / "o" / "contrasts.csv")
    primary = contrasts[contrasts["role"] == "primary"].iloc[0]
    assert primary["n_tasks"] == 1000 and primary["p_method"] == "exact-lattice"
    assert 10 < primary["estimate_pp"] < 20 and primary["p_value"] < 1e-6


def test_a_run_read_before_its_plan_is_checked_once_the_plan_is_known(tmp_path: Path) -> None:
    """validate_attempts: the hook for callers that choose the plan after reading."""
    from fire_exp.analysis.load import validate_attempts
    from fire_exp.records import read_records

    plan = load_plan(REPO / "analysis" / "default.yaml")
    path = _jsonl(tmp_path, [make_record("t1", "real"), make_record("t1", "shamm")])
    read = read_records(path)
    with pytest.raises(InputError, match="line 2, field 'arm'.*did you mean 'sham'"):
        validate_attempts(path, plan, read=read)
    csv = _csv(tmp_path, "t1,real,0,eligible,1\nt1,reconsidr,0,eligible,0\n")
    with pytest.raises(InputError, match="line 3, column 'arm'"):
        validate_attempts(csv, plan)
    validate_attempts(_csv(tmp_path, GOOD, name="ok.csv"), plan)  # a clean file passes


def test_csv_cells_keep_their_meaning_whichever_reader_path_parses_them(tmp_path: Path) -> None:
    """Numbers and true/false parsed by the CSV reader, anything else cell by cell: names
    stay text ("007"), passed may be yes/no, a whole-number replicate may read 1.0 (an
    empty cost cell, once read as 0, is refused: ``test_one_meaning.py``)."""
    header = "task,arm,replicate,cohort,passed,reward,cost_usd\n"
    body = ("007,real,0,eligible,yes,1,0.5\n007,sham,1.0,eligible,no,0,0\n"
            "010,real,0,eligible,True,1,1e-3\n010,sham,0,eligible,False,0,2\n")
    att = load_attempts(_csv(tmp_path, body, header)).attempts
    assert list(att["task"]) == ["007", "007", "010", "010"]
    assert list(att["passed"]) == [True, False, True, False]
    assert list(att["replicate"]) == [0, 1, 0, 0]
    assert list(att["cost_usd"]) == [0.5, 0.0, 0.001, 2.0]
    typed = load_attempts(_csv(tmp_path, "t1,real,0,eligible,true,1,0.25\n"
                                         "t1,sham,0,eligible,false,0,0.5\n", header, "b.csv"))
    assert list(typed.attempts["passed"]) == [True, False]
    assert list(typed.attempts["cost_usd"]) == [0.25, 0.5]


def test_ctrl_c_during_a_command_is_one_line_and_status_130(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import fire_exp.cli.analyze as command

    def interrupted(argv: list[str]) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "main", interrupted)
    assert cli(["analyze", "attempts.csv"]) == 130
    assert capsys.readouterr().err == "fire-exp analyze: interrupted\n"
