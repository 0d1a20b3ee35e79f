"""What losing Ray nodes cost is said in the report's accounting and in the run summary:
one line per node, with its causes and what the frozen replacement rule made of them."""

from __future__ import annotations

from fire_exp.analysis.accounting import node_losses
from fire_exp.attempt_seeds import replacement_seed
from fire_exp.records import Cause, Lineage, append_records
from fire_exp.report.build import build_report
from tests.report.helpers import panel_records, write_prereg


def _lost_run(tmp_path):
    """A panel run on nodes a and b: on b, two attempts lost with the worker (one replaced,
    one standing) and one to a stopped engine (replaced); a's only failure is the agent's."""
    records = [r.model_copy(update={"node": "a" if i % 2 else "b"})
               for i, r in enumerate(panel_records())]
    scheduled = list(records)
    lost = {0: (Cause.HARNESS_FAILED, True), 2: (Cause.HARNESS_FAILED, False),
            4: (Cause.ENVIRONMENT_FAILED, True)}
    successors = []
    for i, (cause, replaced) in lost.items():
        r = records[i]
        successor = f"{r.attempt_id}#1" if replaced else None
        records[i] = r.model_copy(update={
            "cause": cause, "reward": None, "passed": False, "error": "the Ray worker was lost",
            "lineage": Lineage(replaced_by=successor, cause=cause.value if replaced else None)})
        if successor:
            successors.append(r.model_copy(update={
                "attempt_id": successor, "node": "a",  # its seed as the runner draws it
                "seed": replacement_seed(0, r.task, r.arm, r.replicate, 1),
                "lineage": Lineage(replaces=r.attempt_id, cause=cause.value)}))
    records[1] = records[1].model_copy(update={"cause": Cause.AGENT_ERROR, "passed": False,
                                               "reward": 0.0})
    run = tmp_path / "run"
    run.mkdir()
    write_prereg(run, scheduled)
    append_records(run / "attempts.jsonl", [*records, *successors])
    return run, [*records, *successors]


def test_each_lost_node_is_one_line_of_the_accounting(tmp_path, fast_plan):
    run, records = _lost_run(tmp_path)
    line = ("lost on node b: 3 attempts (environment_failed 1, harness_failed 2); 2 replaced "
            "under the frozen replacement rule, 1 stand as failures")
    assert node_losses(records) == [line]  # node a lost nothing: an agent error is no loss
    report = build_report(run, fast_plan)
    assert report.result.metadata["node_losses"] == [line]
    assert f"- {line}" in (report.out / "accounting.md").read_text()
    assert line.replace("_", "\\_") in (report.out / "accounting.tex").read_text()


def test_a_one_machine_run_has_no_loss_line(tmp_path, fast_plan):
    records = [r.model_copy(update={"cause": Cause.HARNESS_FAILED, "reward": None,
                                    "passed": False}) if i == 0 else r
               for i, r in enumerate(panel_records())]
    assert node_losses(records) == []  # no record names a node
    run = tmp_path / "run"
    run.mkdir()
    write_prereg(run, records)
    append_records(run / "attempts.jsonl", records)
    report = build_report(run, fast_plan)
    assert "lost on node" not in (report.out / "accounting.md").read_text()
