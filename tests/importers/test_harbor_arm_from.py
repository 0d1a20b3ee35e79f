"""`fire-exp import harbor --arm-from` takes a dotted path into result.json (issue 11, point 7):
real job folders often share the agent's name and differ only in its arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.importers import ArmMapping, import_harbor, load_mapping
from fire_exp.records import read_records
from tests.conftest import run_cli


def trial(job: Path, task: str, n: int, harness: str, reward: float) -> None:
    """A Harbor trial result.json whose agent is the same in every arm; only kwargs differ."""
    folder = job / f"{task}__{harness}{n}"
    folder.mkdir(parents=True)
    result = {"task_name": task, "trial_name": folder.name, "task_checksum": "abc",
              "started_at": f"2026-01-01T00:0{n}:00", "finished_at": f"2026-01-01T00:0{n}:30",
              "agent_info": {"name": "terminus-2", "model_info": {"name": "gpt-5"}},
              "config": {"agent": {"name": "terminus-2",
                                   "kwargs": {"harness": harness, "max_turns": 50}}},
              "agent_result": {"n_input_tokens": 10, "n_output_tokens": 5,
                               "metadata": {"harness": harness}},
              "verifier_result": {"rewards": {"reward": reward}}}
    (folder / "result.json").write_text(json.dumps(result))


@pytest.fixture
def job(tmp_path: Path) -> Path:
    job = tmp_path / "jobs" / "2026-mixed"
    for n, (harness, reward) in enumerate([("fire", 1.0), ("plain", 0.0), ("fire", 1.0)]):
        trial(job, "fix-git", n, harness, reward)
    return job


@pytest.mark.parametrize("path", ["config.agent.kwargs.harness", "agent_result.metadata.harness"])
def test_a_dotted_path_names_the_arm(job: Path, path: str) -> None:
    records, skipped = import_harbor([job], ArmMapping(arm_from=path))
    assert sorted(r.arm for r in records) == ["fire", "fire", "plain"] and not skipped
    assert sorted(r.replicate for r in records if r.arm == "fire") == [0, 1]
    # By agent name every trial would be one arm: the reason the path exists.
    assert {r.arm for r in import_harbor([job], ArmMapping(arm_from="agent"))[0]} == \
        {"terminus-2"}


def test_a_mapping_file_patterns_a_dotted_path(job: Path, tmp_path: Path) -> None:
    mapping = tmp_path / "map.yaml"
    mapping.write_text("arm_from: config.agent.kwargs.harness\narms:\n  fire: real\n"
                       "  plain: baseline\n")
    records, _ = import_harbor([job], load_mapping(mapping))
    assert sorted(r.arm for r in records) == ["baseline", "real", "real"]


def test_a_path_no_trial_has_is_refused_with_the_keys(job: Path) -> None:
    with pytest.raises(InputError, match=r"config\.agent\.kwarg\.harness: no trial has this "
                                         r"field.*top-level keys: agent_info"):
        import_harbor([job], ArmMapping(arm_from="config.agent.kwarg.harness"))


def test_the_cli_takes_a_dotted_path(job: Path, tmp_path: Path) -> None:
    out = tmp_path / "attempts.jsonl"
    proc = run_cli("import", "harbor", str(job), "--arm-from", "config.agent.kwargs.harness",
                   "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(r.arm for r in read_records(out).finished) == ["fire", "fire", "plain"]
    bad = run_cli("import", "harbor", str(job), "--arm-from", "not a path",
                  "--out", str(tmp_path / "x.jsonl"))
    assert bad.returncode == 2 and "dotted path into result.json" in bad.stderr
