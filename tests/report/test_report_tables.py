"""The report renders the analysis: every table and figure exists, FIRE's tables read as
published, and each table's CSV is the analysis' own table."""

from __future__ import annotations

import pandas as pd
import pytest

TABLES = ["contrasts", "funnel", "funnel_family", "near_miss", "suite", "transitions",
          "interaction", "tasks", "reliability", "accounting", "prereg"]
FIGURES = ["fig_pass_rates", "fig_funnel", "fig_pass_k", "fig_tasks"]
# The session's three reports (conftest.py) are built once, on the worker that runs these
# and test_report_latex.py's checks of them (docs/testing.md: a costly fixture made once).
pytestmark = pytest.mark.xdist_group("report-fixtures")
# paper table -> the AnalysisResult table its CSV is (rows may be reordered for reading)
SOURCES = {"contrasts": "contrasts", "near_miss": "near_miss", "suite": "suite",
           "transitions": "suite_transitions", "interaction": "interaction",
           "tasks": "tasks", "reliability": "reliability", "accounting": "accounting",
           "prereg": "prereg"}


@pytest.mark.parametrize("which", ["table3_report", "table4_report", "demo_report"])
def test_every_table_and_figure_exists(request, which):
    report = request.getfixturevalue(which)
    for name in TABLES:
        for ext in ("tex", "md", "csv"):
            path = report.out / f"{name}.{ext}"
            assert path.is_file() and path.stat().st_size > 0, path
    # the CSV fixture carries no funnel: no funnel figure of zeros
    expected = FIGURES if which != "table3_report" else [f for f in FIGURES if f != "fig_funnel"]
    for name in expected:
        for ext in ("png", "pdf"):
            assert (report.out / f"{name}.{ext}").stat().st_size > 1000
    assert (report.out / "fig_funnel.png").exists() == (which != "table3_report")
    assert (report.out / "report.md").read_text().count("\n# ") >= len(TABLES) - 1
    for name in report.result.tables():
        assert (report.out / "data" / f"{name}.csv").is_file(), name


@pytest.mark.parametrize("which", ["table3_report", "table4_report", "demo_report"])
def test_each_csv_is_the_analysis_table(request, which, tmp_path):
    report = request.getfixturevalue(which)
    for paper, name in SOURCES.items():
        expected = report.result.tables()[name]
        expected.to_csv(tmp_path / "x.csv", index=False, lineterminator="\n")
        assert (report.out / f"{paper}.csv").read_bytes() == (tmp_path / "x.csv").read_bytes(), \
            paper
    funnel = pd.read_csv(report.out / "funnel.csv")
    assert set(funnel["cohort"]) <= {report.result.main_cohort}


def test_contrasts_reproduce_table3(table3_report):
    md = (table3_report.out / "contrasts.md").read_text()
    # FIRE Table 3, eligible: real - sham 25.0 [7.1, 46.4]; real - baseline 21.4 [7.1, 35.7]
    assert "| real − sham† | 25.0 | [7.1, 46.4] |" in md
    assert "| real − baseline | 21.4 | [7.1, 35.7] |" in md
    tex = (table3_report.out / "contrasts.tex").read_text()
    assert r"real $-$ sham\dag{} & 25.0 & [7.1, 46.4]" in tex


def test_interaction_reproduces_fire(table3_report):
    row = pd.read_csv(table3_report.out / "interaction.csv").iloc[0]
    assert round(row["estimate_pp"], 2) == 18.75
    assert (round(row["ci_low_pp"], 1), round(row["ci_high_pp"], 1)) == (-4.9, 42.9)
    md = (table3_report.out / "interaction.md").read_text()
    assert "| real − sham | 25.0 [7.1, 46.4] | 6.3 [-6.3, 21.9] | 18.8 | [-4.9, 42.9] |" in md


def test_funnel_reproduces_table4(table4_report):
    md = (table4_report.out / "funnel.md").read_text()
    # FIRE Table 4 (state / fired / behavior of 24 coded / pass)
    assert "| real policy | 28 | 26 | 25 | 22 / 24 | 17 |" in md
    assert "| triggered sham | 28 | 26 | 26 | 13 / 24 | 10 |" in md
    assert "| baseline | 28 | 25 | 0 | 11 / 24 | 11 |" in md


def test_suite_marks_exploratory_deltas(demo_report):
    md = (demo_report.out / "suite.md").read_text()
    suite = demo_report.result.suite.set_index("arm")
    assert not suite.loc["always_verify", "delta_planned"]
    assert "* not in the analysis plan: exploratory" in md
    line = next(x for x in md.splitlines() if x.startswith("| always verify |"))
    assert "*" in line.split("|")[3]
    real = next(x for x in md.splitlines() if x.startswith("| real policy |"))
    assert "*" not in real.split("|")[3] and suite.loc["real", "delta_planned"]


def test_transitions_and_reliability_use_one_k(demo_report):
    k = demo_report.result.k
    assert k == 2
    md = (demo_report.out / "transitions.md").read_text()
    assert "| to 0/2 | to 1/2 | to 2/2 |" in md
    rel = (demo_report.out / "reliability.md").read_text()
    assert "pass^2/pass^1" in rel and "Δpass^2 pp" in rel


def test_accounting_and_prereg_of_demo_run(demo_report):
    acc = pd.read_csv(demo_report.out / "accounting.csv").set_index("arm")
    assert acc.loc["total", "scheduled"] == 60
    assert acc.loc["total", "finished_records"] == 60
    assert acc.loc["real", "scored"] == 12
    assert not demo_report.status.partial
    pre = pd.read_csv(demo_report.out / "prereg.csv")
    assert "schedule" in set(pre["item"]) and pre["sha256"].str.len().eq(64).all()


def test_tasks_table_lists_every_task_and_arm(demo_report):
    tasks = pd.read_csv(demo_report.out / "tasks.csv")
    assert len(tasks) == 6 * 5 and tasks["attempts"].eq(2).all()
    md = (demo_report.out / "tasks.md").read_text()
    assert md.count("\n| ") == 1 + 1 + 6  # header, rule, six tasks



def test_markdown_cells_of_a_float_column_read_as_each_value_formatted_alone():
    import numpy as np

    from fire_exp.report.render import _fmt, markdown_table

    gen = np.random.default_rng(0)
    values = gen.standard_normal(5000) * np.exp(gen.uniform(-12, 5, 5000))
    values = np.concatenate([values, [1e-3, -1e-3, 0.0, -0.0, 0.00099999, 1.0, np.inf,
                                      -np.inf, np.nan]])
    frame = pd.DataFrame({"x": values, "task": pd.Categorical(["a|b", "c"] * 2504 + ["c"])})
    lines = markdown_table(frame).splitlines()[2:]
    cells = [line[2:-2].split(" | ") for line in lines]
    assert [c[0] for c in cells] == [_fmt(float(v)) for v in values]
    assert {c[1] for c in cells} == {"a\\|b", "c"}
    assert _fmt(-0.0) == "0"


def test_markdown_of_a_short_table_equals_the_long_tables_path(monkeypatch):
    """Up to _FEW_ROWS rows cells are formatted one by one, beyond it once per distinct
    value: both give the same cells, whatever the column's type."""
    import numpy as np

    from fire_exp.report import render

    gen = np.random.default_rng(1)
    n = 300
    frame = pd.DataFrame({
        "f": np.where(gen.random(n) < 0.1, np.nan,
                      gen.standard_normal(n) * 10.0 ** gen.integers(-6, 4, n)),
        "z": gen.choice([-0.0, 0.0, 1.5], n), "i": gen.integers(-3, 3, n),
        "b": gen.random(n) < 0.5, "c": pd.Categorical(gen.choice(["real", "a|b"], n)),
        "s": pd.array(gen.choice(["x", "y|z", None], n), dtype="string"),
        "o": pd.Series(gen.choice([1, 1.0, True, "t", np.nan], n), dtype=object)})
    short = render.markdown_table(frame)
    assert len(frame) <= render._FEW_ROWS  # noqa: SLF001 (the threshold under test)
    monkeypatch.setattr(render, "_FEW_ROWS", 0)
    assert render.markdown_table(frame) == short
    assert "| 0 |" in short and "-0 |" not in short
