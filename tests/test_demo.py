"""The demo panel end to end, as a user runs it: every attempt once, reruns identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fire_exp.records import read_records
from tests.conftest import pids_working_under, run_cli

OVERRIDES = ["panel=demo", "panel.attempts=1", "executor.workers=2"]
# The tests that read the two runs: on one worker, so the runs are made once.
TWO_RUNS = pytest.mark.xdist_group("demo-two-runs")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path, str]:
    results = tmp_path_factory.mktemp("results")
    outputs = []
    for name in ("first", "second"):
        proc = run_cli("run", *OVERRIDES, f"results_dir={results}", f"run={name}")
        assert proc.returncode == 0, proc.stderr[-3000:]
        outputs.append(proc.stdout)
    return results / "demo" / "first", results / "demo" / "second", outputs[0]


@TWO_RUNS
def test_every_scheduled_attempt_exactly_once(two_runs) -> None:
    run_dir = two_runs[0]
    schedule = json.loads((run_dir / "prereg.json").read_text())["schedule"]
    finished = read_records(run_dir / "attempts.jsonl").finished
    expected = sorted(f"{s['task']}/{s['arm']}/r{s['replicate']}" for s in schedule)
    assert sorted(r.attempt_id for r in finished) == expected
    assert len(expected) == 6 * 5
    for record in finished:
        assert (run_dir / record.log_dir / "logs" / "agent" / "commands.jsonl").is_file()
        assert record.schema_version == 1 and record.versions["fire-exp"]


@TWO_RUNS
def test_rerun_with_the_same_seed_is_identical(two_runs) -> None:
    first, second, _ = two_runs
    rewards = [{r.attempt_id: (r.reward, r.funnel) for r in read_records(d / "attempts.jsonl")
                .finished} for d in (first, second)]
    assert rewards[0] == rewards[1]
    # cost, suite and tasks hold wall-clock agent time; every other table must match.
    timed = {"cost.csv", "suite.csv", "tasks.csv"}
    data = Path("report") / "data"
    tables = sorted(p.name for p in (first / data).glob("*.csv") if p.name not in timed)
    assert "contrasts.csv" in tables
    for name in tables:
        assert (first / data / name).read_bytes() == (second / data / name).read_bytes(), name


@TWO_RUNS
def test_the_demo_shows_where_things_landed_and_a_table(two_runs) -> None:
    out = two_runs[2]
    assert "attempts.jsonl" in out and "| arm |" in out


@TWO_RUNS
def test_the_demo_leaves_no_process_behind(two_runs) -> None:
    assert pids_working_under(two_runs[0].parent) == []


def test_a_changed_seed_changes_the_schedule(tmp_path: Path) -> None:
    proc = run_cli("freeze", *OVERRIDES, "seed=7", f"prereg={tmp_path / 'p.json'}")
    assert proc.returncode == 0, proc.stderr
    other = run_cli("freeze", *OVERRIDES, "seed=8", f"prereg={tmp_path / 'q.json'}")
    hashes = [json.loads((tmp_path / f).read_text())["hashes"]["schedule"]["sha256"]
              for f in ("p.json", "q.json")]
    assert other.returncode == 0 and hashes[0] != hashes[1]


def test_run_refuses_when_a_frozen_item_changed(tmp_path: Path) -> None:
    prereg = tmp_path / "demo.prereg.json"
    assert run_cli("freeze", *OVERRIDES, f"prereg={prereg}").returncode == 0
    proc = run_cli("run", *OVERRIDES, "seed=99", f"prereg={prereg}",
                   f"results_dir={tmp_path / 'r'}")
    assert proc.returncode == 2
    assert "changed since freezing" in proc.stderr and "schedule" in proc.stderr
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").rglob("attempts.jsonl"))


@pytest.mark.slow
def test_multirun_over_agent_tiers(tmp_path: Path) -> None:
    """Slow: two runs of the demo panel (one per tier, Hydra's multirun)."""
    proc = run_cli("run", "-m", "panel=demo", "agent.tier=weak,strong", "panel.attempts=1",
                   "panel.arms=[real,baseline]", f"results_dir={tmp_path}", "analyze=false",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = sorted(p.name for p in (tmp_path / "demo").iterdir())
    assert len(runs) == 2 and "weak" in runs[0] + runs[1] and "strong" in runs[0] + runs[1]
    tiers = {read_records(tmp_path / "demo" / r / "attempts.jsonl").finished[0].tier
             for r in runs}
    assert tiers == {"weak", "strong"}
    assert not (tmp_path / "multirun.yaml").exists()  # Hydra's record stays out of the cwd
