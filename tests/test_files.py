"""Every file read at an entry point turns a decoding or parsing fault into one line naming
the file (and the line or field): bytes that are not UTF-8, JSON nested past the parser's
depth, a 5,000-digit integer, a malformed cell; never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fire_exp.cli import main as cli
from fire_exp.errors import InputError
from fire_exp.files import decoded, parse_json
from fire_exp.importers.harbor import ArmMapping, import_harbor
from tests.importers.helpers import harbor_trial

DEMO_RUN = Path(__file__).resolve().parent / "report" / "data" / "demo_run"
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5000


@pytest.mark.parametrize(("data", "line"), [
    (b"ok\nbad \xff here\n", 2), (b"\xef\xbb\xbfok\n\nx\xc3(\n", 3), (b"\x80", 1)])
def test_bytes_that_are_not_utf8_name_their_line(data: bytes, line: int) -> None:
    with pytest.raises(InputError) as err:
        decoded(data, "f.txt")
    assert err.value.field == f"line {line}" and "not UTF-8" in err.value.problem


def test_utf16_is_named_as_such() -> None:
    with pytest.raises(InputError, match="looks like UTF-16"):
        decoded("task,arm\n".encode("utf-16"), "a.csv")


@pytest.mark.parametrize(("text", "says"), [
    (DEEP, "nested too deeply"), (f'{{"a": {HUGE}}}', "more than 4,300 digits"),
    ('{"a": [1,}', "not valid JSON")])
def test_json_that_python_cannot_read_is_one_error(text: str, says: str) -> None:
    with pytest.raises(InputError, match=says):
        parse_json(text, "f.json")


def _analyze(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli(["analyze", *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO_RUN, tmp_path / "run"))


def _replace_line(path: Path, number: int, data: bytes) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[number - 1] = data + b"\n"
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize(("data", "says"), [
    (b'{"schema_version": 1, "task": "caf\xe9"}', "line 5, field '<text>': is not UTF-8"),
    (DEEP.encode(), "line 5, field '<json>': JSON nested too deeply"),
    (f'{{"schema_version": 1, "replicate": {HUGE}}}'.encode(),
     "line 5, field '<json>': holds an integer of more than 4,300 digits"),
])
def test_an_attempts_line_python_cannot_read_is_one_line(
        run: Path, capsys: pytest.CaptureFixture[str], data: bytes, says: str) -> None:
    _replace_line(run / "attempts.jsonl", 5, data)
    assert says in _analyze(capsys, str(run))


def test_a_csv_that_is_not_utf8_names_its_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "a.csv"
    path.write_bytes(b"task,arm,replicate,reward\nt,real,0,1\nt\xe9,sham,0,0\n")
    assert "a.csv: line 3: is not UTF-8 text" in _analyze(capsys, str(path), "--plan",
                                                           "default")


@pytest.mark.parametrize(("header", "known"), [
    ("task,arm,replicate,rewrd", "reward"), ("task,arm,replicate,reward,Cohort", "cohort"),
    ("task,arm,replica,reward", "replicate"), ("task,arm,replicate,reward,cohrt", "cohort")])
def test_a_column_close_to_a_known_one_gets_a_did_you_mean(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str, known: str) -> None:
    path = tmp_path / "a.csv"
    cells = ",".join(["t", "real", "0", "1", "eligible"][:header.count(",") + 1])
    path.write_text(f"{header}\n{cells}\n")
    err = _analyze(capsys, str(path), "--plan", "default")
    assert "line 1 (header)" in err and f"did you mean '{known}'?" in err


def test_a_column_unlike_any_known_one_is_still_ignored(tmp_path: Path) -> None:
    from fire_exp.analysis import load_attempts

    path = tmp_path / "a.csv"
    path.write_text("task,arm,replicate,reward,notes\nt,real,0,1,fine\n")
    assert len(load_attempts(path).attempts) == 1


def test_a_huge_csv_cell_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     ) -> None:
    path = tmp_path / "a.csv"
    path.write_text(f'task,arm,replicate,reward\nt,real,0,"{"1" * 200_000}"\n')
    assert "not a readable CSV" in _analyze(capsys, str(path), "--plan", "default")


@pytest.mark.parametrize(("content", "says"), [
    (b"name: caf\xe9\n", "not UTF-8"), (f"name: p\nseed: {HUGE}\n".encode(), "thousands"),
])
def test_a_plan_python_cannot_read_is_one_line(
        run: Path, capsys: pytest.CaptureFixture[str], content: bytes, says: str) -> None:
    plan = run / "plan.yaml"
    plan.write_bytes(content)
    err = _analyze(capsys, str(run), "--plan", str(plan))
    assert str(plan) in err and says in err


@pytest.mark.parametrize(("content", "says"), [
    (b'{"format": "caf\xe9"}', "not UTF-8"), (DEEP.encode(), "nested too deeply"),
    (f'{{"format": {HUGE}}}'.encode(), "4,300 digits")])
def test_a_manifest_python_cannot_read_is_one_line(
        run: Path, capsys: pytest.CaptureFixture[str], content: bytes, says: str) -> None:
    (run / "prereg.json").write_bytes(content)
    err = _analyze(capsys, str(run))
    assert "prereg.json" in err and says in err


@pytest.mark.parametrize(("edit", "field"), [
    (lambda r: r["verifier_result"]["rewards"].update(reward="one"),
     "verifier_result.rewards.reward"),
    (lambda r: r["verifier_result"]["rewards"].update(reward=float("nan")),
     "verifier_result.rewards.reward"),
    (lambda r: r["verifier_result"]["rewards"].update(reward=True),
     "verifier_result.rewards.reward"),
    (lambda r: r["agent_result"].update(n_input_tokens="many"), "agent_result.n_input_tokens"),
    (lambda r: r["agent_result"].update(n_output_tokens=-5), "agent_result.n_output_tokens"),
    (lambda r: r["agent_result"].update(cost_usd=[1]), "agent_result.cost_usd"),
    # a fractional token count (once truncated: 1.5 tokens read as 1)
    (lambda r: r["agent_result"].update(n_input_tokens=1.5), "agent_result.n_input_tokens"),
])
def test_a_harbor_trial_with_values_that_are_not_numbers_is_named(
        tmp_path: Path, edit, field: str) -> None:  # type: ignore[no-untyped-def]
    folder = harbor_trial(tmp_path / "job", "a", 0, reward=1.0)
    result = json.loads((folder / "result.json").read_text())
    edit(result)
    (folder / "result.json").write_text(json.dumps(result))
    with pytest.raises(InputError) as err:
        import_harbor([tmp_path / "job"], ArmMapping(arm_from="job"))
    assert err.value.field == field and err.value.path == str(folder / "result.json")


@pytest.mark.parametrize(("content", "says"), [
    (b'{"task_name": "caf\xe9"}', "not UTF-8"), (DEEP.encode(), "nested too deeply")])
def test_a_harbor_result_python_cannot_read_is_named(tmp_path: Path, content: bytes,
                                                     says: str) -> None:
    folder = harbor_trial(tmp_path / "job", "a", 0, reward=1.0)
    (folder / "result.json").write_bytes(content)
    with pytest.raises(InputError, match=says) as err:
        import_harbor([tmp_path / "job"], ArmMapping(arm_from="job"))
    assert err.value.path == str(folder / "result.json")


def test_a_power_pilot_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    pilot = tmp_path / "pilot.csv"
    pilot.write_bytes(b"task,arm,replicate,reward\nt\xff,real,0,1\n")
    proc = run_cli("power", "panel=demo", f"pilot={pilot}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{pilot}: line 2: is not UTF-8 text" in proc.stderr


def test_a_simulation_script_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    from fire_exp.paths import SUITES_DIR
    from tests.conftest import run_cli

    suite = tmp_path / "suite"
    task = Path(shutil.copytree(SUITES_DIR / "fire-mini" / "dedupe-emails",
                                suite / "dedupe-emails"))
    script = task / "simulated.yaml"
    script.write_bytes(script.read_bytes() + b"# caf\xe9\n")
    proc = run_cli("freeze", "panel=demo", f"panel.suite={suite}",
                   "panel.eligible=[dedupe-emails]", "panel.silent=[]",
                   f"prereg={tmp_path / 'p.json'}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{script}: line " in proc.stderr and ": is not UTF-8 text" in proc.stderr


@pytest.mark.parametrize(("old", "new", "field", "meant"), [
    ('"reward":', '"rewrd":', "rewrd", "reward"),
    ('"agent_s":', '"agnt_s":', "timings.agnt_s", "agent_s"),
    ('"cohort":', '"Cohort":', "Cohort", "cohort"),
])
def test_a_misspelt_record_field_gets_a_did_you_mean(
        run: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str,
        meant: str) -> None:
    path = run / "attempts.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace(old, new, 1)
    path.write_text("".join(lines))
    err = _analyze(capsys, str(run))
    assert f"line 3, field '{field}'" in err and f"did you mean '{meant}'?" in err


@pytest.mark.parametrize(("edit", "field", "meant"), [
    (lambda p: p.update(primry=p.pop("primary")), "primry", "primary"),
    (lambda p: p.update(secondry=p.pop("secondary")), "secondry", "secondary"),
    (lambda p: p["bootstrap"].update(n_resampels=p["bootstrap"].pop("n_resamples")),
     "bootstrap.n_resampels", "n_resamples"),
    (lambda p: p["interaction"].update(cohort=p["interaction"].pop("cohorts")),
     "interaction.cohort", "cohorts"),
])
def test_a_misspelt_plan_key_gets_a_did_you_mean(tmp_path: Path, edit, field: str,  # type: ignore[no-untyped-def]
                                                 meant: str) -> None:
    import yaml

    from fire_exp.analysis.plan import load_plan
    from fire_exp.paths import ANALYSIS_DIR

    raw = yaml.safe_load((ANALYSIS_DIR / "default.yaml").read_text())
    edit(raw)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(InputError) as err:
        load_plan(path)
    assert err.value.field == field and f"did you mean '{meant}'?" in err.value.problem


def test_a_known_column_twice_is_refused(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "a.csv"
    path.write_text("task,arm,replicate,reward,task\nt,real,0,1,u\n")
    assert "column 'task' appears twice" in _analyze(capsys, str(path), "--plan", "default")


@pytest.mark.parametrize(("name", "content", "says"), [
    ("a.csv", "task;arm;replicate;reward\nt;real;0;1\n", "looks ';'-separated"),
    ("a.csv", "task\tarm\treplicate\treward\nt\treal\t0\t1\n", "looks '\\t'-separated"),
    ("a.tsv", "task\tarm\treplicate\treward\nt\treal\t0\t1\n", "only when its name ends in .csv"),
])
def test_a_table_in_another_shape_says_what_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str,
        says: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    assert says in _analyze(capsys, str(path), "--plan", "default")
