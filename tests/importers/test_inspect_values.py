"""How inspect_ai's values become rewards and causes, and the file-format reader on logs laid
out as inspect_ai 0.3.285 writes them (these tests need no inspect_ai)."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fire_exp.errors import InputError
from fire_exp.importers import ArmMapping
from fire_exp.importers.inspect_eval import import_inspect
from fire_exp.importers.inspect_log import read_log
from fire_exp.importers.inspect_sample import (
    LIMIT_CAUSES,
    SampleRef,
    Scorer,
    cause_of,
    score_value,
)
from fire_exp.records import Cause
from tests.ci import missing

REF = SampleRef(Path("x.eval"), "s1", 2)
# Written by inspect_ai 0.3.285 (tests/importers/inspect_panel.py --fixture): samples a and c
# of the real arm, 2 epochs, every score C, c under a token limit; zstd-compressed members.
FIXTURE = Path(__file__).parent / "data" / "inspect-0.3.285-mockllm.eval"


@pytest.mark.parametrize("value, reward", [
    ("C", 1.0), ("P", 0.5), ("I", 0.0), ("N", 0.0), ("yes", 1.0), ("True", 1.0),
    ("no", 0.0), ("false", 0.0), (" 0.75 ", 0.75), ("2", 2.0), (1, 1.0), (0.25, 0.25),
    (True, 1.0), (False, 0.0)])
def test_values_map_as_value_to_float_documents(value: Any, reward: float) -> None:
    assert score_value(value, REF, Scorer("s")) == reward


@pytest.mark.parametrize("value", ["maybe", "c", "nan", "inf", [1, 0], float("nan"), None])
def test_a_value_inspect_would_turn_into_zero_is_refused(value: Any) -> None:
    with pytest.raises(InputError, match=r"x.eval: sample 's1' epoch 2: scores.s: value .* "
                                         "cannot be mapped to a reward"):
        score_value(value, REF, Scorer("s"))


def test_a_dict_score_needs_its_key() -> None:
    with pytest.raises(InputError, match=r"--scorer s.KEY \(keys: a, b\)"):
        score_value({"a": "C", "b": "I"}, REF, Scorer("s"))
    assert score_value({"a": "C", "b": "I"}, REF, Scorer("s", "b")) == 0.0
    with pytest.raises(InputError, match=r"has no key 'z' \(keys: a, b\)"):
        score_value({"a": "C", "b": "I"}, REF, Scorer("s", "z"))


@pytest.mark.parametrize("kind, cause", [
    ("time", Cause.AGENT_TIMEOUT), ("working", Cause.AGENT_TIMEOUT),
    ("token", Cause.AGENT_STEP_LIMIT), ("message", Cause.AGENT_STEP_LIMIT),
    ("context", Cause.AGENT_CONTEXT_EXCEEDED), ("operator", Cause.CANCELLED)])
def test_limits_are_causes(kind: str, cause: Cause) -> None:
    assert cause_of({"limit": {"type": kind, "limit": 1}}, REF) is cause
    assert set(LIMIT_CAUSES) >= {"time", "working", "token", "message", "context"}


def test_errors_are_classified_by_their_exception_type() -> None:
    def error(message: str) -> Cause | None:
        return cause_of({"error": {"message": message}, "limit": {"type": "time"}}, REF)
    assert error("RuntimeError('tool crashed')") is Cause.HARNESS_FAILED  # before the limit
    assert error("openai.RateLimitError: slow down") is Cause.PROVIDER_FAILED
    assert error("DockerException('no daemon')") is Cause.ENVIRONMENT_FAILED
    assert error("CancelledError: stopped") is Cause.CANCELLED
    with pytest.raises(InputError, match=r"limit.type: unknown limit 'gpu'"):
        cause_of({"limit": {"type": "gpu", "limit": 1}}, REF)


def eval_spec(arm: str) -> dict[str, Any]:
    return {"task": "toy", "task_args": {"arm": arm}, "model": "mockllm/model",
            "dataset": {"samples": 2, "sample_ids": ["a", "b"]}, "config": {"epochs": 2},
            "scorers": [{"name": "match"}], "packages": {"inspect_ai": "0.3.285"}}


def sample(sid: str, epoch: int, value: str) -> dict[str, Any]:
    return {"id": sid, "epoch": epoch, "input": "q", "target": "t", "uuid": f"{sid}{epoch}",
            "scores": {"match": {"value": value}}, "total_time": 2.0, "working_time": 1.5,
            "model_usage": {"m": {"input_tokens": 5, "output_tokens": 2,
                                  "input_tokens_cache_read": 1, "total_cost": 0.01}}}


def write_eval(path: Path, header: dict[str, Any] | None, start: dict[str, Any],
               samples: list[dict[str, Any]]) -> Path:
    """A deflated .eval, as inspect_ai wrote them before it moved to zstd."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("_journal/start.json", json.dumps(start))
        for s in samples:
            zf.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        if header is not None:
            zf.writestr("header.json", json.dumps(header))
    return path


def test_the_format_reader_reads_a_deflated_eval(tmp_path: Path) -> None:
    spec = eval_spec("real")
    samples = [sample("a", 1, "C"), sample("a", 2, "I"), sample("b", 1, "P"),
               sample("b", 2, "C")]
    path = write_eval(tmp_path / "real.eval", {"version": 2, "status": "success", "eval": spec},
                      {"version": 2, "eval": spec}, samples)
    log = read_log(path, "format")
    assert log.header["status"] == "success" and len(log.samples) == 4
    records = import_inspect([path], ArmMapping(arm_from="eval.task_args.arm"),
                             reader="format").records
    by = {(r.task, r.replicate): r for r in records}
    assert [by[("a", 0)].reward, by[("a", 1)].reward, by[("b", 0)].reward] == [1.0, 0.0, 0.5]
    usage = by[("a", 0)].usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens,
            usage.cost_usd) == (5, 2, 1, 0.01)
    assert (by[("a", 0)].timings.total_s, by[("a", 0)].timings.agent_s) == (2.0, 1.5)


def test_a_log_that_never_finished_is_refused_or_counted(tmp_path: Path) -> None:
    spec = eval_spec("real")
    path = write_eval(tmp_path / "running.eval", None, {"version": 2, "eval": spec},
                      [sample("a", 1, "C")])
    mapping = ArmMapping(arm_from="eval.task_args.arm")
    with pytest.raises(InputError, match="status: the eval is 'started'"):
        import_inspect([path], mapping, reader="format")
    imported = import_inspect([path], mapping, reader="format", partial=True)
    causes = sorted((r.task, r.replicate, r.cause) for r in imported.records)
    assert causes == [("a", 0, None), ("a", 1, Cause.CANCELLED), ("b", 0, Cause.CANCELLED),
                      ("b", 1, Cause.CANCELLED)]
    assert "3 sample-epoch(s) it never ran" in imported.notes[0]


def test_not_a_log_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "x.eval").write_text("not a zip")
    with pytest.raises(InputError, match=r"x.eval: <file>: not a .eval log"):
        read_log(tmp_path / "x.eval", "format")
    (tmp_path / "x.json").write_text('{"samples": []}')
    with pytest.raises(InputError, match=r"x.json: eval: missing: not an inspect_ai eval log"):
        read_log(tmp_path / "x.json", "format")
    with pytest.raises(InputError, match="ends in .eval or .json"):
        (tmp_path / "x.txt").write_text("")
        read_log(tmp_path / "x.txt", "format")


def test_a_log_inspect_ai_wrote_reads_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        import zstandard  # noqa: F401
    except ImportError:
        missing("zstandard is not installed (pip install 'fire-exp[inspect]')")
    records = import_inspect([FIXTURE], ArmMapping(arm_from="eval.task_args.arm"),
                             reader="format").records
    by = {(r.task, r.replicate): r for r in records}
    assert set(by) == {("a", 0), ("a", 1), ("c", 0), ("c", 1)}
    assert all(r.arm == "real" and r.reward == 1.0 and r.passed for r in records)
    assert by[("c", 0)].cause is Cause.AGENT_STEP_LIMIT and by[("a", 0)].cause is None
    assert by[("a", 1)].versions == {"inspect_ai": "0.3.285"}
    assert (by[("a", 0)].usage.input_tokens, by[("a", 0)].usage.output_tokens) == (7, 3)
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as where it is not installed
    with pytest.raises(InputError, match="zstd-compressed, and the zstandard package is not "
                                         "installed"):
        read_log(FIXTURE, "format")


@pytest.mark.parametrize("sid", ["a\u200b", "a\tb"])
def test_a_sample_id_that_is_not_a_name_is_refused(tmp_path: Path, sid: str) -> None:
    """The id is the task: ``a`` + zero-width space was a task of its own beside ``a``
    (as a Harbor ``task_name`` is refused)."""
    spec = eval_spec("real")
    path = write_eval(tmp_path / "real.eval", {"version": 2, "status": "success", "eval": spec},
                      {"version": 2, "eval": spec}, [sample("a", 1, "C"), sample(sid, 1, "I")])
    with pytest.raises(InputError, match=r"samples: id: .* character") as err:
        import_inspect([path], ArmMapping(arm_from="eval.task_args.arm"), reader="format")
    assert err.value.path.endswith("real.eval")
