"""The .tex tables: escaped, well-formed (syntax check, always) and compiling (with pdflatex)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from fire_exp.report.latex import check_tex, tabular, tex_escape
from tests.ci import missing

# With test_report_tables.py: the session's reports are built once (its comment).
pytestmark = pytest.mark.xdist_group("report-fixtures")
GOOD = tabular(["arm", "pass^2 %"], [["always_verify", "50%"], ["a&b #1", "-3.5"]], "lr")


def test_escape_specials_and_symbols():
    assert tex_escape("a_b%c&d#e$f{g}") == r"a\_b\%c\&d\#e\$f\{g\}"
    assert tex_escape("real − sham†") == r"real $-$ sham\dag{}"
    assert tex_escape("Δ vs baseline") == r"$\Delta$ vs baseline"
    assert tex_escape("pass^2/pass^1") == "pass$^{2}$/pass$^{1}$"
    assert tex_escape("x\\y") == r"x\textbackslash{}y"
    assert tex_escape("-6.3 [-6.3, 21.9]") == "$-$6.3 [$-$6.3, 21.9]"
    assert tex_escape("task-12") == "task-12"


def test_syntax_check_accepts_escaped_table():
    assert check_tex(GOOD) == []


@pytest.mark.parametrize("broken, problem", [
    (GOOD.replace(r"always\_verify", "always_verify"), "unescaped '_'"),
    (GOOD.replace(r"a\&b", "a&b"), "3 cells, the tabular has 2"),
    (GOOD.replace(r"50\%", "50%"), r"does not end with \\"),
    (GOOD.replace(r"\#1", "#1"), "unescaped '#'"),
    (GOOD.replace("\\bottomrule\n", ""), "expected begin, toprule, bottomrule, end"),
    (GOOD.replace("\\midrule\n", ""), "no \\midrule"),
    (GOOD.replace("pass$^{2}$", "pass$^{2}"), "unbalanced"),
])
def test_syntax_check_finds_what_breaks_latex(broken, problem):
    found = check_tex(broken)
    assert any(problem in p.problem for p in found), found


def test_every_report_table_passes_the_syntax_check(table3_report, table4_report,
                                                    demo_report):
    for report in (table3_report, table4_report, demo_report):
        texs = sorted(report.out.glob("*.tex"))
        assert len(texs) == 12  # arm_design among them
        for tex in texs:
            assert check_tex(tex.read_text()) == [], tex


DOCUMENT = r"""\documentclass{article}
\usepackage[T1]{fontenc}
\usepackage{booktabs}
\begin{document}
%s
\end{document}
"""


def test_every_report_table_compiles(tmp_path, table4_report, demo_report):
    if shutil.which("pdflatex") is None:  # scripts/test installs it
        missing("pdflatex is not installed (apt-get install texlive-latex-base "
                "texlive-latex-recommended, or run scripts/test)")
    inputs = [p for r in (table4_report, demo_report) for p in sorted(r.out.glob("*.tex"))]
    body = "\n".join(f"\\begin{{table}}\\resizebox{{\\textwidth}}{{!}}{{\\input{{{p}}}}}"
                     "\\end{table}\\clearpage" for p in inputs)
    (tmp_path / "doc.tex").write_text(DOCUMENT.replace("%s", body).replace(
        r"\usepackage{booktabs}", "\\usepackage{booktabs}\n\\usepackage{graphicx}"))
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 1000
    assert "Missing character" not in (tmp_path / "doc.log").read_text(errors="replace")
