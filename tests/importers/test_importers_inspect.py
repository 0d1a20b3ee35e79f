"""inspect_ai eval logs, written by inspect_ai itself, import as attempts that analyse as the
same data fed as a CSV (issue 39). The logs are generated once per module (mockllm, no
server): see tests/importers/inspect_panel.py for the panel and its table of scores."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fire_exp.analysis import analyze, load_attempts, load_plan
from fire_exp.errors import InputError
from fire_exp.importers import ArmMapping
from fire_exp.importers.inspect_eval import import_inspect
from fire_exp.importers.inspect_log import read_log
from fire_exp.records import Cause, read_records
from tests.ci import missing
from tests.conftest import run_cli
from tests.importers.helpers import REPO
from tests.importers.inspect_panel import EPOCHS, ERRORED, LIMITED, SAMPLES, TABLE

ARMS = {"base": "baseline", "real": "real"}
MAPPING = "arm_from: eval.task_args.arm\narms:\n  base: baseline\n  real: real\n"
# One worker writes the logs once for every test of the module.
pytestmark = pytest.mark.xdist_group("inspect-panel")
CONTRAST_COLUMNS = ["contrast", "cohort", "n_tasks", "estimate_pp", "ci_low_pp", "ci_high_pp",
                    "p_value", "improved", "regressed", "tied"]


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OUT/logs (the two-arm panel) and OUT/errored, written by inspect_ai."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        missing("inspect_ai is not installed (pip install 'fire-exp[inspect]')")
    out = tmp_path_factory.mktemp("inspect")
    env = os.environ | {"PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(out / "xdg"),
                        "XDG_CACHE_HOME": str(out / "xdg-cache"), "INSPECT_LOG_DIR": str(out)}
    proc = subprocess.run([sys.executable, "-m", "tests.importers.inspect_panel", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def logs(panel: Path, suffix: str) -> Path:
    (path,) = (panel / "logs").glob(f"*{suffix}")
    return path


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default plan, with the panel's one contrast and every task in cohort ``all``."""
    raw = yaml.safe_load((REPO / "analysis" / "default.yaml").read_text())
    raw |= {"name": "inspect", "primary": {"contrast": "real - baseline", "cohort": "all"},
            "secondary": [], "cohorts": ["all"], "interaction": None}
    raw["bootstrap"]["n_resamples"], raw["permutation"]["n_resamples"] = 2000, 5000
    path = tmp_path_factory.mktemp("plan") / "inspect.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def hand_count() -> dict[str, int]:
    """Passes per arm counted from the table: a C passes; the errored sample does not."""
    return {ARMS[arm]: sum(v == "C" for sample in SAMPLES for e, v in
                           enumerate(TABLE[(sample, arm)], 1) if (sample, e, arm) != ERRORED)
            for arm in ARMS}


def hand_csv(path: Path) -> Path:
    """The same panel as a plain CSV, written from the table."""
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["task", "arm", "replicate", "reward", "passed", "infrastructure_failure"])
        for (sample, arm), values in sorted(TABLE.items()):
            for epoch, value in enumerate(values, 1):
                errored = (sample, epoch, arm) == ERRORED
                reward = 0.0 if errored else {"C": 1.0, "P": 0.5, "I": 0.0}[value]
                out.writerow([sample, ARMS[arm], epoch - 1, reward,
                              str(value == "C" and not errored).lower(), str(errored).lower()])
    return path


def test_import_counts_and_analyses_as_the_csv(panel: Path, plan_file: Path,
                                                tmp_path: Path) -> None:
    (tmp_path / "map.yaml").write_text(MAPPING)
    out = tmp_path / "attempts.jsonl"
    proc = run_cli("import", "inspect", str(panel / "logs"), "--map", str(tmp_path / "map.yaml"),
                   "--out", str(out), cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "24 attempts (4 tasks; arms baseline, real)" in proc.stdout
    records = {(r.task, r.arm, r.replicate): r for r in read_records(out).finished}
    assert len(records) == len(SAMPLES) * EPOCHS * 2
    crashed = records[(ERRORED[0], "baseline", ERRORED[1] - 1)]
    assert crashed.reward is None and crashed.cause is Cause.HARNESS_FAILED
    assert crashed.error == "RuntimeError('tool crashed')" and not crashed.fair
    limited = [records[(LIMITED[0], "real", e)] for e in range(EPOCHS)]
    assert {r.cause for r in limited} == {Cause.AGENT_STEP_LIMIT}
    assert all(r.reward == 1.0 and r.passed for r in limited)  # scored although limited
    assert records[("b", "real", 1)].reward == 0.5 and not records[("b", "real", 1)].passed
    ok = records[("a", "real", 0)]
    assert (ok.usage.input_tokens, ok.usage.output_tokens, ok.usage.model) == \
        (7, 3, "mockllm/model")
    assert ok.timings.total_s > 0 and ok.started_at and ok.agent == "act"

    plan = load_plan(plan_file)
    imported = analyze(load_attempts(out), plan)
    passes = imported.pass_rates.set_index("arm")["successes"].to_dict()
    assert passes == hand_count() == {"baseline": 5, "real": 9}
    from_csv = analyze(load_attempts(hand_csv(tmp_path / "hand.csv")), plan)
    pd.testing.assert_frame_equal(imported.contrasts[CONTRAST_COLUMNS],
                                  from_csv.contrasts[CONTRAST_COLUMNS])
    assert imported.contrasts.iloc[0]["estimate_pp"] == pytest.approx(100 * (9 - 5) / 12)

    site = run_cli("view", str(out), "--plan", str(plan_file), "--out", str(tmp_path / "site"),
                   cwd=REPO)
    assert site.returncode == 0, site.stderr
    assert "run explorer of 24 attempts" in site.stdout
    assert (tmp_path / "site" / "index.html").is_file()


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_the_file_format_reads_as_inspect_ai_does(panel: Path, suffix: str) -> None:
    """Without inspect_ai the format reader gives the same records (.eval: zstd members)."""
    path = logs(panel, suffix)
    mapping = ArmMapping(arm_from="eval.task_args.arm")
    by_inspect = import_inspect([path], mapping, reader="inspect_ai").records
    by_format = import_inspect([path], mapping, reader="format").records
    assert read_log(path, "format").reader == "file format"
    assert [r.model_dump() for r in by_format] == [r.model_dump() for r in by_inspect]
    assert len(by_inspect) == len(SAMPLES) * EPOCHS


@pytest.mark.parametrize("arm_from", ["eval.task_args.arm", "sample.metadata.arm", "log"])
def test_the_arm_comes_from_any_field(panel: Path, arm_from: str) -> None:
    records = import_inspect([panel / "logs"], ArmMapping(arm_from=arm_from)).records
    assert len({r.arm for r in records}) == 2 and len(records) == 2 * len(SAMPLES) * EPOCHS


@pytest.mark.parametrize("arm_from", ["model", "eval.task"])
def test_one_arm_for_both_logs_is_refused(panel: Path, arm_from: str) -> None:
    """Both logs have one model and one task: each sample and epoch twice under one arm."""
    with pytest.raises(InputError, match="already has this sample and epoch from another run"):
        import_inspect([panel / "logs"], ArmMapping(arm_from=arm_from))


def test_an_errored_eval_is_refused_unless_partial(panel: Path) -> None:
    mapping = ArmMapping(arm_from="eval.task_args.arm")
    with pytest.raises(InputError, match=r"status: the eval is 'error' \(RuntimeError\('the "
                                         r"solver crashed'\)\).*--partial"):
        import_inspect([panel / "errored"], mapping)
    imported = import_inspect([panel / "errored"], mapping, partial=True)
    assert sorted(r.task for r in imported.records) == list(SAMPLES)  # every sample counted
    causes = {r.task: r.cause for r in imported.records}
    assert causes["a"] is None and causes["b"] is Cause.HARNESS_FAILED
    assert all(not r.fair for r in imported.records if r.task in ("c", "d"))
    assert "never ran written as failed attempts" in imported.notes[0]


def edited(panel: Path, tmp_path: Path, edit: object, name: str = "edited.json") -> Path:
    """A copy of the real arm's JSON log with ``edit(log)`` applied."""
    raw = json.loads(logs(panel, ".json").read_text())
    edit(raw)  # type: ignore[operator]
    path = tmp_path / name
    path.write_text(json.dumps(raw))
    return path


def test_scorers_are_named_or_refused(panel: Path, tmp_path: Path) -> None:
    mapping = ArmMapping(arm_from="eval.task_args.arm")
    with pytest.raises(InputError, match=r"unknown scorer 'accuracy'.*the logs have: keyed"):
        import_inspect([panel / "logs"], mapping, scorer="accuracy")

    def maybe(raw: dict) -> None:  # type: ignore[type-arg]
        raw["samples"][0]["scores"]["keyed"]["value"] = "maybe"
    with pytest.raises(InputError, match=r"sample 'a' epoch 1: scores.keyed: value 'maybe' "
                                         "cannot be mapped to a reward"):
        import_inspect([edited(panel, tmp_path, maybe)], mapping)

    def two_values(raw: dict) -> None:  # type: ignore[type-arg]
        for s in raw["samples"]:
            s["scores"]["keyed"]["value"] = {"strict": s["scores"]["keyed"]["value"],
                                             "lenient": "C"}
    path = edited(panel, tmp_path, two_values, "dict.json")
    with pytest.raises(InputError, match=r"--scorer keyed.KEY \(keys: lenient, strict\)"):
        import_inspect([path], mapping)
    lenient = import_inspect([path], mapping, scorer="keyed.lenient").records
    strict = import_inspect([path], mapping, scorer="keyed.strict").records
    assert all(r.passed for r in lenient) and sum(r.passed for r in strict) == 9


def test_a_sample_without_a_score_is_counted(panel: Path, tmp_path: Path) -> None:
    def unscored(raw: dict) -> None:  # type: ignore[type-arg]
        raw["samples"][0]["scores"] = {}
    records = import_inspect([edited(panel, tmp_path, unscored)],
                             ArmMapping(arm_from="eval.task_args.arm")).records
    (record,) = [r for r in records if r.reward is None]
    assert record.cause is Cause.VERIFIER_FAILED and not record.passed


def test_two_logs_of_one_arm_agree_or_are_refused(panel: Path, tmp_path: Path) -> None:
    mapping = ArmMapping(arm_from="eval.task_args.arm")
    same = edited(panel, tmp_path, lambda raw: None, "same.json")
    imported = import_inspect([logs(panel, ".json"), same], mapping)
    assert len(imported.records) == len(SAMPLES) * EPOCHS
    assert len(imported.notes) == len(SAMPLES) * EPOCHS and "counted once" in imported.notes[0]

    def rerun(raw: dict) -> None:  # type: ignore[type-arg]
        raw["samples"][0]["uuid"] = "another-run"
    with pytest.raises(InputError, match=r"rerun.json: sample '\w' epoch \d: id: arm 'real' "
                                         "already has this sample and epoch from another run"):
        import_inspect([logs(panel, ".json"), edited(panel, tmp_path, rerun, "rerun.json")],
                       mapping)


def test_several_tasks_under_one_arm_name_the_task(panel: Path, tmp_path: Path) -> None:
    def other_task(raw: dict) -> None:  # type: ignore[type-arg]
        raw["eval"]["task"] = "other"
    records = import_inspect([logs(panel, ".json"), edited(panel, tmp_path, other_task)],
                             ArmMapping(arm_from="eval.task_args.arm")).records
    assert {r.task for r in records} == {f"{t}/{s}" for t in ("toy", "other") for s in SAMPLES}
