"""The analysis as a pipeline of registered tables (load -> validate -> conform -> resample
-> tables), and its output pinned byte for byte.

``data/golden_sim24_sha256.json`` holds the sha256 of every file ``write_tables`` writes
(but ``metadata.json``, which names library versions) for a seeded simulated panel of 24
tasks, as the analysis made them before it became a pipeline. A change that moves any
number, column or row of any table fails ``test_the_tables_are_pinned_byte_for_byte``. If a
change is meant to move them, say so in its commit and regenerate the file: run
``write_tables(analyze(sim24_panel(), fast_plan), DIR)`` and hash DIR's ``.csv`` and ``.md``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fire_exp.analysis import AnalysisPlan, analyze
from fire_exp.analysis.pipeline import conform, load, resample, validate
from fire_exp.analysis.simulate import simulate_panel
from fire_exp.analysis.table_spec import (
    AnalysisInputs,
    Builder,
    Built,
    ResampleRequest,
    Table,
)
from fire_exp.analysis.tables import TABLES
from fire_exp.report.render import write_tables
from tests.analysis.analysis_helpers import DATA

GOLDEN = DATA / "golden_sim24_sha256.json"


def sim24_panel() -> pd.DataFrame:
    return simulate_panel(24, rng=np.random.default_rng(3), effects={"real": 0.2},
                          infra_rate=0.05)


def test_the_tables_are_pinned_byte_for_byte(fast_plan: AnalysisPlan, tmp_path: Path) -> None:
    write_tables(analyze(sim24_panel(), fast_plan), tmp_path)
    got = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
           for p in sorted(tmp_path.iterdir()) if p.suffix in (".csv", ".md")}
    expected = json.loads(GOLDEN.read_text())
    assert [name for name in expected if got.get(name) != expected[name]] == []
    assert sorted(got) == sorted(expected)


def _real_on_all(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    """A table added by a test: the real arm's pass rate on ``all``, asked for under its own
    scope, and the number of tasks of the pass@k table built before it."""
    (c,) = [c for c in run.primary if c.name == "all"]
    resamples.add("test:real", "all", {"real": c.arm_columns()["arm:real"]})

    def build(done: Built) -> pd.DataFrame:
        iv = done.results.scope("test:real")["real"]
        n_tasks = done.frame("pass_k").query("cohort == 'all' and arm == 'real'").n_tasks
        return pd.DataFrame([{"estimate": iv.estimate, "ci_low": iv.ci_low,
                              "ci_high": iv.ci_high, "n_tasks": int(n_tasks.iloc[0])}])

    return build


def test_a_table_registered_in_one_place_is_built_and_written(fast_plan: AnalysisPlan,
                                                              tmp_path: Path) -> None:
    panel = sim24_panel()
    result = analyze(panel, fast_plan, tables=(*TABLES, Table("real_all", _real_on_all)))
    mine = result.tables()["real_all"]
    assert list(result.tables())[-1] == "real_all" and result.extra["real_all"] is mine
    # The same column on the same cohort's one set of resamples: the same interval.
    row = result.pass_rates.query("cohort == 'all' and arm == 'real'").iloc[0]
    assert (100 * mine.estimate[0], 100 * mine.ci_low[0], 100 * mine.ci_high[0]) == \
        (row.pass_rate_pct, row.ci_low_pct, row.ci_high_pct)
    assert mine.n_tasks[0] == row.n_tasks == panel.task.nunique()
    write_tables(result, tmp_path)
    assert pd.read_csv(tmp_path / "real_all.csv").n_tasks.tolist() == [row.n_tasks]


def _reads_suite(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    return lambda done: done.frame("suite")


def test_a_table_reads_only_the_tables_before_it(fast_plan: AnalysisPlan) -> None:
    first = Table("reads_suite", _reads_suite)
    with pytest.raises(KeyError, match="'suite' is not built yet"):
        analyze(sim24_panel(), fast_plan, tables=(first, *TABLES))
    result = analyze(sim24_panel(), fast_plan, tables=(*TABLES, first))
    pd.testing.assert_frame_equal(result.extra["reads_suite"], result.suite)


def test_a_column_asked_for_after_the_draw_is_refused(fast_plan: AnalysisPlan) -> None:
    def late(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
        def build(done: Built) -> pd.DataFrame:
            resamples.add("late", "all", {"x": pd.Series([1.0], index=["t"])})
            return pd.DataFrame()
        return build

    with pytest.raises(RuntimeError, match="asked for after the resamples were drawn"):
        analyze(sim24_panel(), fast_plan, tables=(*TABLES, Table("late", late)))


@pytest.mark.parametrize(("tables", "message"), [
    ((*TABLES, TABLES[0]), r"registered twice: \['contrasts'\]"),
    (TABLES[1:], r"not registered: \['contrasts'\]"),
])
def test_a_table_twice_or_a_result_table_missing_is_refused(
        fast_plan: AnalysisPlan, tables: tuple[Table, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        analyze(sim24_panel(), fast_plan, tables=tables)


def test_the_stages_compose_to_analyze(fast_plan: AnalysisPlan) -> None:
    staged = resample(conform(validate(load(sim24_panel(), fast_plan))))
    assert sorted(staged.names) == sorted(t.name for t in TABLES)
    assert [name for name, _ in staged.from_run] == [t.name for t in TABLES
                                                     if not t.reads_resamples]
    whole = analyze(sim24_panel(), fast_plan)
    assert staged.inputs.notes == list(whole.notes)


def test_a_table_needing_no_resample_is_built_from_the_run(fast_plan: AnalysisPlan) -> None:
    count = Table.of_run("n_attempts", lambda run: pd.DataFrame([{"n": len(run.attempts)}]))
    result = analyze(sim24_panel(), fast_plan, tables=(*TABLES, count))
    assert result.extra["n_attempts"].n.tolist() == [int(result.pass_rates.query(
        "cohort == 'all'").attempts.sum())]
