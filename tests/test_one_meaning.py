"""One meaning per input: a key written twice, a value of the wrong type, an empty cell, a
name with a control character are refused where they enter, naming the file, the line and
the field (docs/robustness.md, "One meaning per input")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fire_exp.analysis import load_attempts
from fire_exp.analysis.plan import load_plan
from fire_exp.environments.reward import parse_reward
from fire_exp.errors import InputError
from fire_exp.files import parse_json, parse_yaml
from fire_exp.importers import ArmMapping, import_harbor, load_mapping
from fire_exp.policies.hook_files import read_json
from fire_exp.records import Cause, record_to_line
from tests.analysis.analysis_helpers import REPO, make_record
from tests.conftest import run_cli
from tests.importers.helpers import harbor_trial


def _jsonl(tmp_path: Path, second: str) -> Path:
    """An attempts file: one good record, then ``second`` as line 2."""
    path = tmp_path / "attempts.jsonl"
    path.write_text(record_to_line(make_record("t1", "real")) + "\n" + second + "\n")
    return path


def _edited(**fields: object) -> str:
    """A record's JSON line with ``fields`` replaced as written."""
    line = json.loads(record_to_line(make_record("t1", "sham", passed=False)))
    return json.dumps(line | fields)


def test_a_record_with_a_key_twice_is_refused_by_line_and_key(tmp_path: Path) -> None:
    """``"reward"`` twice (0.0, then 1.0) once read as a pass: baseline 50.0 → 66.7 %."""
    line = _edited(reward=0.0).replace('"reward": 0.0', '"reward": 0.0, "reward": 1.0')
    with pytest.raises(InputError) as err:
        load_attempts(_jsonl(tmp_path, line))
    assert "line 2" in str(err.value) and "key 'reward' appears twice" in str(err.value)


@pytest.mark.parametrize(("fields", "field"), [
    ({"reward": "1", "passed": True}, "reward"),
    ({"reward": True, "passed": True}, "reward"),
    ({"passed": "true", "reward": 1.0}, "passed"),
    ({"replicate": True}, "replicate"),
    ({"replicate": 1.0}, "replicate"),
    ({"seed": "1"}, "seed"),
    ({"valid": 1}, "valid"),
])
def test_a_record_field_of_the_wrong_type_is_refused(tmp_path: Path, fields: dict[str, object],
                                                     field: str) -> None:
    """A reward ``"1"`` or ``true``, ``passed: "true"``, a replicate ``true`` were coerced."""
    with pytest.raises(InputError) as err:
        load_attempts(_jsonl(tmp_path, _edited(**fields)))
    assert f"line 2, field '{field}'" in str(err.value)


def test_a_no_verifier_cause_with_a_reward_is_refused(tmp_path: Path) -> None:
    line = _edited(cause=Cause.HARNESS_FAILED.value, reward=1.0, passed=True)
    with pytest.raises(InputError, match=r"line 2, field 'reward'.*'harness_failed' means no "
                                         "verifier ran"):
        load_attempts(_jsonl(tmp_path, line))
    ok = _edited(cause=Cause.HARNESS_FAILED.value, reward=None, passed=False)
    assert load_attempts(_jsonl(tmp_path, ok)).n_records == 2


@pytest.mark.parametrize("name", ["t1\x1b[2J", "t\n1", "t\t1"])
def test_a_name_with_a_control_character_is_refused(tmp_path: Path, name: str) -> None:
    """Such a task became a task of its own and broke the Markdown tables across lines."""
    with pytest.raises(InputError, match="line 2, field 'task'.*control character"):
        load_attempts(_jsonl(tmp_path, _edited(task=name)))
    csv = tmp_path / "a.csv"
    csv.write_text(f'task,arm,replicate,reward\nt1,real,0,1\n"{name}",sham,0,0\n')
    with pytest.raises(InputError, match=r"line \d, column 'task'.*control character"):
        load_attempts(csv)


def test_an_empty_passed_cell_is_refused_not_read_as_false(tmp_path: Path) -> None:
    """A CSV with only a ``passed`` column read an empty cell as a failure (50.0 → 16.7 %)."""
    csv = tmp_path / "a.csv"
    csv.write_text("task,arm,replicate,passed\nt1,real,0,true\nt1,sham,0,\n")
    with pytest.raises(InputError, match="line 3, column 'passed'.*is empty"):
        load_attempts(csv)
    csv.write_text("task,arm,replicate,passed\nt1,real,0,true\nt1,sham,0,false\n")
    assert len(load_attempts(csv).attempts) == 2


def _plan(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text((REPO / "analysis" / "default.yaml").read_text() + text)
    return path


def test_a_plan_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    """``primary:`` twice analysed the second contrast; a reader of the frozen file saw the
    first."""
    plan = _plan(tmp_path, "primary:\n  contrast: sham - real\n")
    with pytest.raises(InputError, match=r"line \d+: key 'primary' appears twice"):
        load_plan(plan)


@pytest.mark.parametrize(("text", "message"), [
    ("bootstrap: {n_resamples: true}\n", "bootstrap.n_resamples: Input should be a valid "
                                         "integer, got True"),
    ("bootstrap: {n_resamples: 1}\n", "bootstrap.n_resamples: 1 resamples leave fewer than 5"),
    ("bootstrap: {n_resamples: '2000'}\n", "got '2000'"),
    ("permutation: {n_resamples: 10}\n", "permutation.n_resamples"),
    ("reward_scale: [0, true]\n", "reward_scale.1"),
    ("ceilings: 'no'\n", "ceilings"),
])
def test_a_plan_value_of_the_wrong_type_or_too_small_is_refused(tmp_path: Path, text: str,
                                                               message: str) -> None:
    """``n_resamples: true`` was one resample: an interval [33.3, 33.3] around 0."""
    base = yaml.safe_load((REPO / "analysis" / "default.yaml").read_text())
    base.update(yaml.safe_load(text))
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(base))
    with pytest.raises(InputError, match=message.replace("[", r"\[")):
        load_plan(path)


def test_the_smallest_bootstrap_a_plan_may_ask_is_accepted(tmp_path: Path) -> None:
    base = yaml.safe_load((REPO / "analysis" / "default.yaml").read_text())
    base["bootstrap"] = {"n_resamples": 200, "confidence_level": 0.95}
    base["permutation"]["n_resamples"] = 100
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(base))
    assert load_plan(path).bootstrap.n_resamples == 200


def test_the_users_other_files_refuse_a_key_twice(tmp_path: Path) -> None:
    """A Harbor mapping, a Harbor trial's result.json, a settings.json, a hook payload and
    a verifier's reward.json: each refuses a key written twice."""
    mapping = tmp_path / "map.yaml"
    mapping.write_text("arm_from: job\narm_from: agent\n")
    with pytest.raises(InputError, match="line 2: key 'arm_from' appears twice"):
        load_mapping(mapping)
    folder = harbor_trial(tmp_path / "job", "a", 0, reward=0.0)
    result = folder / "result.json"
    result.write_text(result.read_text().replace('"reward": 0.0', '"reward": 0.0, "reward": 1'))
    with pytest.raises(InputError, match="result.json: line .*key 'reward' appears twice"):
        import_harbor([tmp_path / "job"], ArmMapping())
    settings = tmp_path / "settings.json"
    settings.write_text('{"hooks": {},\n "hooks": {"Stop": []}}')
    with pytest.raises(InputError, match="line 2: key 'hooks' appears twice"):
        read_json(settings)
    reward, _, cause, message = parse_reward('{"reward": 0, "reward": 1}', None)
    assert (reward, cause) == (None, Cause.VERIFIER_FAILED) and "appears twice" in message
    with pytest.raises(InputError, match="'a' appears twice"):
        parse_json('{"a": 1, "a": 2}', "x.json")
    with pytest.raises(InputError, match="line 3: key 'b' appears twice"):
        parse_yaml("a:\n  b: 1\n  b: 2\n", "x.yaml")


def test_a_harbor_trial_without_a_result_is_counted_and_reported(tmp_path: Path) -> None:
    """It was dropped without a word ("4 attempts (2 tasks)")."""
    job = tmp_path / "job"
    harbor_trial(job, "a", 0, reward=1.0)
    harbor_trial(job, "b", 0, reward=0.0)
    (job / "c__job0000").mkdir()  # ended without writing result.json
    proc = run_cli("import", "harbor", str(job), "--arm-from", "job",
                   "--out", str(tmp_path / "out.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert "1 trial folder(s) hold no result.json, e.g. " in proc.stdout
    assert "c__job0000" in proc.stdout


@pytest.mark.parametrize("name", ["a\x1b", "", 7])
def test_a_harbor_task_name_that_is_not_a_name_is_refused(tmp_path: Path, name: object) -> None:
    folder = harbor_trial(tmp_path / "job", "a", 0, reward=1.0)
    result = json.loads((folder / "result.json").read_text())
    (folder / "result.json").write_text(json.dumps(result | {"task_name": name}))
    with pytest.raises(InputError, match="result.json: task_name"):
        import_harbor([tmp_path / "job"], ArmMapping())


def test_a_stop_record_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    """``stopped.json`` says why a run stopped: ``reason`` twice has no one meaning."""
    from fire_exp.analysis.sequential import read_stop

    (tmp_path / "stopped.json").write_text('{"reason": "budget_usd", "reason": "efficacy"}')
    with pytest.raises(InputError, match="key 'reason' appears twice"):
        read_stop(tmp_path)


def test_a_task_toml_with_a_key_twice_is_refused_naming_the_file(tmp_path: Path) -> None:
    """TOML itself forbids a key written twice (tomllib refuses it): a task's task.toml with
    one names the file and the line, like the JSON and YAML readers."""
    import shutil

    from fire_exp.paths import SUITES_DIR
    from fire_exp.tasks.loader import load_task

    task = tmp_path / "recover-wal-orders"
    shutil.copytree(SUITES_DIR / "fire-mini" / "recover-wal-orders", task)
    toml = task / "task.toml"
    text = toml.read_text()
    assert 'network_mode = "no-network"' in text
    toml.write_text(text.replace('network_mode = "no-network"',
                                 'network_mode = "no-network"\nnetwork_mode = "public"'))
    line = text.splitlines().index('network_mode = "no-network"') + 2
    with pytest.raises(InputError, match=rf"task\.toml: line {line}: key 'network_mode' "
                       "appears twice"):
        load_task(task)
