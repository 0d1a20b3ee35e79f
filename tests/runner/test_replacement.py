"""The frozen replacement rule: chains, lineage, seeds, counts, and what is never replaced."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from fire_exp.analysis.conformance import check_conformance
from fire_exp.analysis.load import load_attempts
from fire_exp.errors import InputError
from fire_exp.records import AttemptRecord, Cause, Lineage, read_records
from fire_exp.runner.build import build_panel
from fire_exp.runner.panel import run_panel
from fire_exp.runner.progress import PlainProgress
from fire_exp.runner.replacement import ReplacementRule, owed_attempts, replacement_seed
from fire_exp.runner.schedule import build_schedule
from tests.runner.runner_helpers import run_config

RULE = {"max_replacements": 2, "causes": ["environment_failed", "provider_failed",
                                          "harness_failed"]}
T = "csv-column-stats"


def _run(tmp: Path, **kw: object):  # type: ignore[no-untyped-def]
    panel = build_panel(run_config(tmp, replacement=RULE, **kw))  # type: ignore[arg-type]
    run_dir = tmp / "rt" / "t"
    result = run_panel(panel, run_dir, progress=PlainProgress(0, open("/dev/null", "w")))
    return panel, result, read_records(run_dir / "attempts.jsonl").finished


def test_chains_follow_the_rule(tmp_path: Path, script) -> None:  # type: ignore[no-untyped-def]
    script.env_fails |= {f"{T}/real/r0", f"{T}/real/r0#1"}  # fair on the 2nd replacement
    script.env_fails |= {f"{T}/sham/r0", f"{T}/sham/r0#1", f"{T}/sham/r0#2"}  # never fair
    script.provider_fails |= {f"{T}/always_verify/r0"}
    script.times_out |= {f"{T}/baseline/r0"}  # the agent's failure: never replaced
    panel, result, records = _run(tmp_path)
    by_id = {r.attempt_id: r for r in records}
    assert sorted(by_id) == sorted([
        f"{T}/real/r0", f"{T}/real/r0#1", f"{T}/real/r0#2", f"{T}/sham/r0", f"{T}/sham/r0#1",
        f"{T}/sham/r0#2", f"{T}/always_verify/r0", f"{T}/always_verify/r0#1",
        f"{T}/reconsider/r0", f"{T}/baseline/r0"])
    assert len(records) == len(by_id)
    assert by_id[f"{T}/real/r0"].lineage == Lineage(replaced_by=f"{T}/real/r0#1",
                                                    cause="environment_failed")
    assert by_id[f"{T}/real/r0#1"].lineage == Lineage(
        replaces=f"{T}/real/r0", replaced_by=f"{T}/real/r0#2", cause="environment_failed")
    assert by_id[f"{T}/real/r0#2"].lineage.replaces == f"{T}/real/r0#1"
    assert by_id[f"{T}/real/r0#2"].fair and by_id[f"{T}/real/r0#2"].reward is not None
    assert by_id[f"{T}/sham/r0#2"].cause is Cause.ENVIRONMENT_FAILED
    assert by_id[f"{T}/sham/r0#2"].lineage.replaced_by is None  # the budget is spent
    assert by_id[f"{T}/always_verify/r0"].cause is Cause.PROVIDER_FAILED
    assert by_id[f"{T}/always_verify/r0#1"].lineage.cause == "provider_failed"
    assert by_id[f"{T}/baseline/r0"].cause is Cause.AGENT_TIMEOUT
    assert by_id[f"{T}/baseline/r0"].lineage == Lineage()
    # a replacement keeps its cell and gets its own seed stream
    item = next(i for i in panel.schedule if i.arm == "real")
    seeds = [by_id[f"{T}/real/r0{s}"].seed for s in ("", "#1", "#2")]
    assert seeds == [item.seed, replacement_seed(0, item, 1), replacement_seed(0, item, 2)]
    assert len(set(seeds)) == 3
    assert {(r.task, r.arm, r.replicate) for r in records if "real" in r.attempt_id} == \
        {(T, "real", 0)}
    assert result.replacements == {"real": 2, "sham": 2, "always_verify": 1}
    assert (tmp_path / "rt" / "t" / "attempts" / f"{T}/real/r0#2" / "logs").is_dir()
    # the analysis keeps one row per cell: the first fair record of each chain, else the last
    loaded = load_attempts(tmp_path / "rt" / "t")
    rows = loaded.attempts.set_index("arm")
    assert len(rows) == 5 and loaded.n_superseded == 5
    assert not rows.loc["real", "no_fair_attempt"] and rows.loc["sham", "no_fair_attempt"]
    assert rows.loc["always_verify", "cause"] == "" and rows.loc["baseline", "cause"] == \
        "agent_timeout"
    # the run is complete: running it again owes nothing
    again = run_panel(panel, tmp_path / "rt" / "t",
                      progress=PlainProgress(0, open("/dev/null", "w")))
    assert again.ran == 0


def test_resume_runs_a_successor_named_before_the_crash(tmp_path: Path, script) -> None:  # type: ignore[no-untyped-def]
    script.env_fails |= {f"{T}/real/r0"}
    panel = build_panel(run_config(tmp_path, replacement=RULE, arms=("real", "baseline"),
                                   workers=1))
    run_dir = tmp_path / "rt" / "t"

    class StopAfterFirst:
        """Runs one attempt, then the driver dies (the successor is named, not started)."""

        name = "stop"

        def run(self, panel, queue, on_start, on_done):  # type: ignore[no-untyped-def]
            from fire_exp.runner.executors import execute

            while queue:
                job = queue.popleft()
                on_start(job)
                on_done(job, execute(job, panel))
                if job.item.arm == "real":
                    raise KeyboardInterrupt

    quiet = open("/dev/null", "w")
    order = [i.arm for i in panel.schedule]
    with pytest.raises(KeyboardInterrupt):
        run_panel(panel, run_dir, progress=PlainProgress(0, quiet), executor=StopAfterFirst())
    first = read_records(run_dir / "attempts.jsonl").finished
    assert first[-1].attempt_id == f"{T}/real/r0"
    assert first[-1].lineage.replaced_by == f"{T}/real/r0#1"
    owed = owed_attempts(panel.schedule, first)
    assert [(o.item.arm, o.number) for o in owed][0] == ("real", 1)
    result = run_panel(panel, run_dir, progress=PlainProgress(0, quiet))
    records = read_records(run_dir / "attempts.jsonl").finished
    assert sorted(r.attempt_id for r in records) == sorted(
        [f"{T}/real/r0", f"{T}/real/r0#1", f"{T}/baseline/r0"])
    assert result.ran == 2 - order.index("real")
    successor = next(r for r in records if r.attempt_id.endswith("#1"))
    assert successor.lineage.replaces == f"{T}/real/r0" and successor.fair


def test_owed_attempts_in_schedule_order() -> None:
    schedule = build_schedule([("a", "silent"), ("b", "silent")], ["real", "baseline"], 1, 3)

    def rec(item, number: int = 0, **kw: object) -> AttemptRecord:  # type: ignore[no-untyped-def]
        suffix = f"#{number}" if number else ""
        return AttemptRecord(run="r", panel="p", attempt_id=item.attempt_id + suffix,
                             task=item.task, task_digest="", cohort="silent", arm=item.arm,
                             replicate=0, order=item.order, seed=0, agent="x",
                             environment="local", reward=None, passed=False, **kw)

    s0, s1, s2, _ = schedule
    records = [rec(s2), rec(s0, cause=Cause.HARNESS_FAILED,
                            lineage=Lineage(replaced_by=s0.attempt_id + "#1"))]
    owed = owed_attempts(schedule, records)
    assert [(o.item.position, o.number) for o in owed] == [(0, 1), (1, 0), (3, 0)]
    assert owed[0].replaces == records[1]


@pytest.mark.parametrize("block", [
    {"max_replacements": 1, "causes": ["agent_timeout"]},
    {"max_replacements": 1, "causes": ["verifier_failed"]},
    {"max_replacements": 1, "causes": ["cancelled"]},
    {"max_replacements": 1, "causes": ["no_such_cause"]},
    {"max_replacements": -1, "causes": ["provider_failed"]},
    {"max_replacements": 1},
    {"max_replacements": 1, "causes": ["provider_failed"], "extra": 1},
    # a string, not a list: it was read letter by letter ("unknown cause 'e'")
    {"max_replacements": 1, "causes": "environment_failed"},
])
def test_rule_rejects_what_may_not_be_replaced(block: dict) -> None:
    with pytest.raises(InputError, match="replacement") as err:
        ReplacementRule.from_config(block)
    assert "unknown cause 'e'" not in err.value.problem


def test_rule_is_part_of_the_panel_config_hash(tmp_path: Path) -> None:
    with_rule = run_config(tmp_path, replacement=RULE)
    without = run_config(tmp_path)
    assert with_rule.config_hash() != without.config_hash()
    with pytest.raises(InputError, match="replacement.causes"):
        build_panel(run_config(tmp_path, replacement={"max_replacements": 1,
                                                      "causes": ["agent_error"]}))



def _manifest(panel) -> dict:  # type: ignore[no-untyped-def]
    """What the preregistration freezes of ``panel`` that its records are checked against."""
    return {"panel": panel.name, "seed": panel.seed, "hashes": {},
            "schedule": [asdict(s) for s in panel.schedule]}


def test_a_replacements_seed_is_checked_against_the_one_the_panel_seed_derives(
        tmp_path: Path, script) -> None:  # type: ignore[no-untyped-def]
    """The runner's replacements conform; one carrying another seed (its original's, as a
    hand-made replacement would) is refused by line and field, as an original's is."""
    script.env_fails |= {f"{T}/real/r0", f"{T}/real/r0#1"}
    config = run_config(tmp_path, replacement=RULE, arms=("real",), workers=1)
    panel = build_panel(replace(config, seed=11))  # not 0: the panel seed must count
    path = tmp_path / "rt" / "t" / "attempts.jsonl"
    run_panel(panel, path.parent, progress=PlainProgress(0, open("/dev/null", "w")))
    check_conformance(path, read_records(path), _manifest(panel))  # as the runner drew them
    lines = path.read_text().splitlines()
    number = next(n for n, line in enumerate(lines, 1)
                  if f'"attempt_id":"{T}/real/r0#2"' in line and '"kind":"finished"' in line)
    item = next(i for i in panel.schedule if i.arm == "real")
    lines[number - 1] = json.dumps(json.loads(lines[number - 1]) | {"seed": item.seed},
                                   separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        check_conformance(path, read_records(path), _manifest(panel))
    assert err.value.field == f"line {number}, field 'seed'"
    assert f"seed {item.seed} is not the seed {replacement_seed(11, item, 2)}" \
        in err.value.problem
