import pytest

from fire_exp.analysis import load_attempts
from fire_exp.errors import InputError
from fire_exp.records import Cause, append_records
from tests.analysis.analysis_helpers import make_record


def _write_csv(path, text):
    path.write_text(text)
    return path


def test_csv_minimal_columns_and_defaults(tmp_path):
    p = _write_csv(tmp_path / "a.csv", "task,arm,replicate,reward\nt1,real,0,1\nt1,sham,0,0\n")
    loaded = load_attempts(p)
    a = loaded.attempts
    assert list(a["passed"]) == [True, False] and set(a["cohort"]) == {"all"}
    assert loaded.n_records == 2 and loaded.n_invalid == 0


@pytest.mark.parametrize("body, line, column", [
    ("t1,real,0,1\nt1,sham,x,0\n", 3, "replicate"),
    ("t1,real,0,1\nt1,sham,1,abc\n", 3, "reward"),
    ("t1,real,0,1\n,sham,1,0\n", 3, "task"),
    ("t1,real,0,1\nt1,real,0,0\n", 3, "replicate"),  # duplicate attempt
])
def test_csv_errors_name_line_and_column(tmp_path, body, line, column):
    p = _write_csv(tmp_path / "a.csv", "task,arm,replicate,reward\n" + body)
    with pytest.raises(InputError) as exc:
        load_attempts(p)
    assert exc.value.field == f"line {line}, column '{column}'"
    assert exc.value.path == str(p)


def test_csv_missing_column_and_ragged_row(tmp_path):
    with pytest.raises(InputError, match="missing column"):
        load_attempts(_write_csv(tmp_path / "a.csv", "task,arm,reward\nt,r,1\n"))
    with pytest.raises(InputError, match="line 2"):
        load_attempts(_write_csv(tmp_path / "b.csv", "task,arm,replicate,reward\nt,r,0\n"))


def test_csv_invalid_rows_are_counted_not_scored(tmp_path):
    p = _write_csv(tmp_path / "a.csv",
                   "task,arm,replicate,passed,valid\nt1,real,0,1,1\nt1,real,1,1,0\n")
    loaded = load_attempts(p)
    assert len(loaded.attempts) == 1 and loaded.n_invalid == 1


def test_jsonl_replacement_chain_and_invalid(tmp_path):
    path = tmp_path / "attempts.jsonl"
    append_records(path, [
        make_record("t1", "real", 0, passed=False, cause=Cause.PROVIDER_FAILED, n=0),
        make_record("t1", "real", 0, passed=True, n=1),           # first fair: kept
        make_record("t1", "real", 0, passed=False, n=2),          # later fair: superseded
        make_record("t2", "real", 0, passed=False, cause=Cause.ENVIRONMENT_FAILED, n=0),
        make_record("t2", "real", 0, passed=False, cause=Cause.HARNESS_FAILED, n=1),
        make_record("t3", "real", 0, passed=True, valid=False),
    ])
    loaded = load_attempts(tmp_path)  # a run folder
    a = loaded.attempts.set_index("task")
    assert bool(a.loc["t1", "passed"]) and not bool(a.loc["t1", "no_fair_attempt"])
    # no fair record: the last one counts, as a failure
    assert not bool(a.loc["t2", "passed"]) and bool(a.loc["t2", "no_fair_attempt"])
    assert a.loc["t2", "cause"] == "harness_failed"
    assert bool(a.loc["t2", "infrastructure_failure"])
    assert "t3" not in a.index and loaded.n_invalid == 1
    assert loaded.n_superseded == 3 and loaded.n_records == 6


def test_jsonl_errors_name_line_and_field(tmp_path):
    path = tmp_path / "attempts.jsonl"
    append_records(path, [make_record()])
    with open(path, "a") as fh:
        fh.write('{"schema_version": 1, "kind": "finished", "run": 3}\n')
    with pytest.raises(InputError) as exc:
        load_attempts(path)
    assert "attempts.jsonl: line 2, field 'run'" in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such attempts file"):
        load_attempts(tmp_path / "nope.csv")
