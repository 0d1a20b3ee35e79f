"""The reward contract at the parser: one number in reward.txt, or a JSON object of numbers
in reward.json (its "reward" key when it has several); reward.json wins; anything else is a
verifier failure that quotes what the verifier wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.base import OracleAgent
from fire_exp.environments import LocalEnvironment, parse_reward, read_reward_dir
from fire_exp.records import Cause
from fire_exp.tasks import load_task


@pytest.mark.parametrize(("txt", "reward"), [
    ("1", 1.0), ("0", 0.0), ("0.25\n", 0.25), ("  .5  ", 0.5), ("1e-1", 0.1), ("+1", 1.0),
    ("1.", 1.0), ("-0", 0.0), ("1.0\r\n", 1.0),
])
def test_one_number_in_reward_txt_is_the_reward(txt: str, reward: float) -> None:
    got, rewards, cause, _ = parse_reward(None, txt)
    assert (got, rewards, cause) == (reward, {"reward": reward}, None)


@pytest.mark.parametrize("txt", [
    "1 of 5 checks passed", "1 0", "1\n1", "0.5 reward", "passed: 1", "true", "True", "yes",
    "nan", "NaN", "inf", "-inf", "Infinity", "1e999", "1_0", "0x1", "1,0", "½", "[1]", "one",
])
def test_anything_but_one_finite_number_in_reward_txt_is_a_verifier_failure(txt: str) -> None:
    reward, rewards, cause, message = parse_reward(None, txt)
    assert (reward, rewards, cause) == (None, {}, Cause.VERIFIER_FAILED)
    assert repr(txt.strip()) in message  # the record quotes what the verifier wrote


@pytest.mark.parametrize("txt", ["", "   ", "\n\n"])
def test_an_empty_reward_txt_is_a_verifier_failure(txt: str) -> None:
    assert parse_reward(None, txt) == (None, {}, Cause.VERIFIER_FAILED, "reward.txt is empty")


def test_no_reward_file_is_a_verifier_failure_not_a_zero() -> None:
    assert parse_reward(None, None) == (None, {}, Cause.VERIFIER_FAILED,
                                        "the verifier wrote no reward.json or reward.txt")


@pytest.mark.parametrize(("js", "reward"), [
    ('{"reward": 0, "tests": 1, "lint": 1}', 0.0),   # several keys: "reward", not the first
    ('{"tests": 1, "reward": 0.5}', 0.5),
    ('{"reward": 1}', 1.0),
    ('{"score": 0.25}', 0.25),                        # one key: its value
    ('{"reward": 1, "tokens": 12345}', 1.0),          # other keys may lie outside [0, 1]
])
def test_reward_json_takes_its_reward_key(js: str, reward: float) -> None:
    got, rewards, cause, message = parse_reward(js, None)
    assert (got, cause, message) == (reward, None, "reward.json")
    assert rewards["reward" if "reward" in js else "score"] == reward
    assert len(rewards) == js.count(":")  # every key kept


def test_reward_json_with_several_keys_and_no_reward_key_is_a_verifier_failure() -> None:
    reward, rewards, cause, message = parse_reward('{"tests": 1, "lint": 0}', None)
    assert (reward, rewards, cause) == (None, {}, Cause.VERIFIER_FAILED)
    assert "several keys (lint, tests)" in message and '"tests": 1' in message


@pytest.mark.parametrize("js", [
    '{"reward": true}', '{"reward": false}', '{"reward": "1"}', '{"reward": null}',
    '{"reward": [1]}', '{"reward": {"value": 1}}', '{"reward": NaN}', '{"reward": Infinity}',
    '{"reward": -Infinity}', '{"reward": 1, "tests": true}', '{"reward": 1, "note": "ok"}',
    '{"reward": 1' + "0" * 400 + "}",                  # an integer past a float's range
])
def test_reward_json_values_that_are_not_finite_numbers_are_a_verifier_failure(
        js: str) -> None:
    reward, rewards, cause, message = parse_reward(js, "1")
    assert (reward, rewards, cause) == (None, {}, Cause.VERIFIER_FAILED)
    assert "not a finite number" in message


@pytest.mark.parametrize(("js", "quoted"), [
    ('{"reward": true}', "'true'"), ('{"reward": "1"}', """'"1"'"""),
    ('{"reward": NaN}', "'NaN'"), ('{"reward": 1, "tests": [1, 2]}', "'[1, 2]'"),
])
def test_a_value_that_is_not_a_number_is_quoted(js: str, quoted: str) -> None:
    message = parse_reward(js, None)[3]
    key = "tests" if "tests" in js else "reward"
    assert message == f"reward.json: {key!r} is {quoted}, not a finite number"


@pytest.mark.parametrize(("js", "reason"), [
    ('{"reward": 1', "Expecting ',' delimiter"), ("[" * 100_000 + "]" * 100_000, "unreadable"),
])
def test_json_that_cannot_be_read_says_why(js: str, reason: str) -> None:
    assert parse_reward(js, None)[3].startswith(f"reward.json is not JSON ({reason})")


@pytest.mark.parametrize("js", [
    "1", "[1]", '"1"', "true", "null", "{}", "", "{reward: 1}", "1 of 5", '{"reward": 1',
    "[" * 100_000 + "]" * 100_000,                     # nested past the parser's depth
    '{"reward": ' + "1" * 5000 + "}",                  # past Python's integer digit limit
])
def test_reward_json_that_is_not_an_object_of_numbers_is_a_verifier_failure(js: str) -> None:
    reward, rewards, cause, message = parse_reward(js, "1")  # a valid reward.txt loses
    assert (reward, rewards, cause) == (None, {}, Cause.VERIFIER_FAILED)
    assert message.startswith("reward.json")


def test_reward_json_wins_over_reward_txt() -> None:
    assert parse_reward('{"reward": 0}', "1")[0] == 0.0
    assert parse_reward('{"reward": 1}', "0")[0] == 1.0
    assert parse_reward('{"reward": 1}', "1 of 5 checks passed")[0] == 1.0


def test_the_quote_of_a_long_text_is_cut() -> None:
    message = parse_reward(None, "x" * 500)[3]
    assert "x" * 60 + "…" in message and "x" * 61 not in message
    assert parse_reward(None, "x" * 60)[3].endswith("'" + "x" * 60 + "'")  # 60 fit whole


def test_read_reward_dir_reads_both_files_and_prefers_json(tmp_path: Path) -> None:
    assert read_reward_dir(tmp_path)[2] is Cause.VERIFIER_FAILED
    (tmp_path / "reward.txt").write_text("1\n")
    assert read_reward_dir(tmp_path)[:3] == (1.0, {"reward": 1.0}, None)
    (tmp_path / "reward.json").write_text('{"reward": 0, "tests": 3}')
    assert read_reward_dir(tmp_path)[:3] == (0.0, {"reward": 0.0, "tests": 3.0}, None)
    (tmp_path / "reward.json").write_bytes(b"\xff\xfe1")  # not UTF-8: a failure, no traceback
    assert read_reward_dir(tmp_path)[2] is Cause.VERIFIER_FAILED


def test_a_verifier_writing_words_records_a_failure_that_quotes_them(
        tmp_path: Path, attempt: Any) -> None:
    task_dir = tmp_path / "task"
    for sub in ("environment", "tests", "solution"):
        (task_dir / sub).mkdir(parents=True)
    (task_dir / "task.toml").write_text('schema_version = "1.1"\n[verifier]\ntimeout_sec = 10\n')
    (task_dir / "instruction.md").write_text("Do the thing.\n")
    (task_dir / "environment" / "Dockerfile").write_text("FROM fire-exp/base:bookworm\n")
    (task_dir / "environment" / "setup.sh").write_text("mkdir -p $FIRE_WORKDIR\n")
    (task_dir / "tests" / "test.sh").write_text(
        "#!/bin/bash\necho '1 of 5 checks passed' > $FIRE_LOGS/verifier/reward.txt\n")
    (task_dir / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    record = attempt(load_task(task_dir), lambda t, d, i: LocalEnvironment(t, d, i),
                     OracleAgent())
    assert record.cause is Cause.VERIFIER_FAILED and record.reward is None
    assert not record.passed and "'1 of 5 checks passed'" in (record.error or "")
