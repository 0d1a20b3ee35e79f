"""Every bundled panel reads right, in the report and in the explorer (a real Chromium).

One small run per panel (the simulated agent, one attempt, a few tasks of each cohort; the
demo's is the explorer tests' ``demo_run``), its report and its site built once for the
module. Checked on each: a number shown in two places is one string; the pages name the
panel's own arms, cohorts and primary, and speak of policies only where an arm runs them;
the primary contrast comes first; every arm says what it changes with its frozen hashes; a
sequential panel shows its looks and why it stopped; no folder of this machine shows; the
pages fit 1,280 and 1,920 pixel windows (and the attempt list 1,400, its families shown).

``FIRE_VIEW_SCREENSHOTS=DIR`` saves each page as a PNG in DIR (the pictures in docs/).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fire_exp.analysis import parse_contrast
from fire_exp.report import build as report_build
from fire_exp.report.figures import figure_cohorts, pass_rate_title
from fire_exp.report.rounding import fixed, p_text
from fire_exp.view.collect import collect, secret_redactor
from fire_exp.view.site import write_site
from tests.conftest import run_cli

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("view-panels")]

# Four tasks of each panel (two per cohort): small, and every cohort has an interval.
_TASKS = ("panel.eligible=[recover-wal-orders,replace-terms-exact]",
          "panel.silent=[csv-column-stats,word-frequency]")
PANELS = {"demo": (), "fire-mini": _TASKS, "agents-md": _TASKS,
          # a cap of 14 attempts stops the 20 scheduled: the run writes stopped.json
          "fire-mini-sequential": (*_TASKS, "panel.budget_attempts=14")}
# (not "deploy-git-hook", a task's name)
POLICY_WORDS = re.compile(r"(?<![\w-])(fired|near-miss|near_miss|funnel|hooks?)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Built:
    """One panel's run, its analysis, its report and its site."""

    panel: str
    run: Path
    results: Path
    data: Any  # RunData
    report: Any  # Report
    site: Path

    @property
    def index(self) -> dict[str, Any]:
        text = (self.site / "data" / "index.js").read_text(encoding="utf-8")
        parsed: dict[str, Any] = json.loads(text.removeprefix("FIRE_INDEX=").rstrip(";\n"))
        return parsed

    def url(self, route: str = "") -> str:
        return (self.site / "index.html").as_uri() + (f"#{route}" if route else "")


@pytest.fixture(scope="module", params=list(PANELS))
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    panel = request.param
    if panel == "demo":
        run = request.getfixturevalue("demo_run")
        results = run.parent.parent
    else:
        results = tmp_path_factory.mktemp(f"panel-{panel}")
        proc = run_cli("run", f"panel={panel}", "panel.attempts=1", *PANELS[panel],
                       f"results_dir={results}", "run=r")
        assert proc.returncode == 0, proc.stderr
        run = results / panel / "r"
        _verifier_names_the_box(run)
    data = collect(run)
    out = tmp_path_factory.mktemp(f"site-{panel}")
    write_site(data, out, secret_redactor())
    report = report_build.render_report(data.result, tmp_path_factory.mktemp(f"rep-{panel}"))
    return Built(panel, run, results, data, report, out)


def _verifier_names_the_box(run: Path) -> None:
    """Make the first attempt's verifier print a missing file by its path on this machine,
    as a local-environment verifier does (``No such file or directory: '/…/box/work/…'``)."""
    out = sorted(run.glob("attempts/*/*/r0/logs/verifier/test-stdout.txt"))[0]
    box = out.parents[2].resolve() / "box" / "work"
    with out.open("a", encoding="utf-8") as f:
        f.write(f"No such file or directory: '{box}/missing-output.txt'\n")


def _open(browser: Any, url: str, ready: str, width: int = 1280) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.set_window_size(width, 1000)
    browser.get("about:blank")  # a new document: the hash route renders from scratch
    browser.get(url)
    WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.CSS_SELECTOR, ready))


def _text(browser: Any, selector: str = "#main") -> str:
    return str(browser.execute_script(
        "return document.querySelector(arguments[0]).innerText", selector))


def _report_cells(b: Built) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(contrast, cohort) -> the report's (Δ, CI, p) strings, read off its printed rows."""
    table = b.report.table("contrasts")
    cohorts = [h.split(" (")[0] for h in table.header[1::3]]
    cells = {}
    for row in table.rows:
        a, b_ = row[0].rstrip("†").split(" − ")
        for k, cohort in enumerate(cohorts):
            est, ci, p = row[1 + 3 * k: 4 + 3 * k]
            if est != "–":
                cells[(f"{a} - {b_}", cohort)] = (est, ci, p)
    return cells


def test_a_number_is_one_string_in_the_report_the_tables_and_the_pages(browser, built):
    """Δ, CI and p of every contrast: the report's row, the explorer's data and its page."""
    index = built.index
    t = next(x for x in index["tables"] if x["name"] == "contrasts")
    col = {c: i for i, c in enumerate(t["columns"])}
    report = _report_cells(built)
    assert report
    for row in t["rows"]:
        key = (row[col["contrast"]], row[col["cohort"]])
        if key not in report:
            continue
        est, ci, p = report.pop(key)
        assert row[col["estimate_pp"]] == est
        assert f"[{row[col['ci_low_pp']]}, {row[col['ci_high_pp']]}]" == ci
        holm = row[col["p_holm"]]
        assert row[col["p_value"]] + (f" ({holm})" if row[col["role"]] == "secondary"
                                      and holm is not None else "") == p
    assert report == {}  # every printed cell was found in the explorer's table
    # The page prints the primary as the report does (with a sign).
    primary = built.data.result.plan.primary
    est, ci, p = _report_cells(built)[(primary.contrast, built.data.result.main_cohort)]
    _open(browser, built.url(), "#headline")
    sign = "+" if float(est) > 0 else ""
    assert f"{sign}{est} points, 95 % CI {ci}, p = {p}" in _text(browser, "#headline")
    # The pass rates: the report's summary and the page's table, one string per cell.
    summary = built.report.summary()
    page = _text(browser)
    for r in built.data.result.pass_rates.itertuples():
        cell = f"{fixed(r.pass_rate_pct)} [{fixed(r.ci_low_pct)}, {fixed(r.ci_high_pct)}]"
        assert cell in page
        assert f"| {fixed(r.pass_rate_pct)} " in summary or f"| {fixed(r.pass_rate_pct)} |" \
            in summary


VALUES = [6.25, -6.25, 56.25, 0.05, -0.05, 1.005, 2.675, 99.95, 0.0625, 1e-7, -0.04,
          1234.5678, 0.0, 100.0, 12.345, -12.345, 33.33333333333333, 2.5e-5]


@pytest.mark.parametrize("built", ["demo"], indirect=True)  # the rule is the page's code
def test_the_page_rounds_as_the_report(browser, built):
    _open(browser, built.url(), "#headline")
    for digits in (1, 3, 4):
        page = browser.execute_script(
            "return arguments[0].map((v) => window.FIRE_FIXED(v, arguments[1]))", VALUES, digits)
        assert page == [fixed(v, digits) for v in VALUES], digits
    assert [fixed(6.25), p_text(0.0625)] == ["6.3", "0.063"]


def test_the_pages_speak_of_the_panels_own_arms(browser, built):
    result, index = built.data.result, built.index
    policy = bool(index["policyArms"])
    assert policy == (built.panel != "agents-md")
    assert [d["arm"] for d in index["design"]] == list(result.arms)
    # Figure 1: the primary's cohort first; a dashed arm only when the panel has it.
    assert figure_cohorts(list(result.pass_rates["cohort"].unique()),
                          result.main_cohort)[0] == result.main_cohort
    title = pass_rate_title(list(result.arms), result.reference)
    assert ("baseline" in title) == ("baseline" in result.arms)
    assert result.reference in title
    names = {t.name for t in built.report.tables}
    assert {"funnel", "near_miss", "funnel_family"} <= names if policy else \
        not names & {"funnel", "near_miss", "funnel_family"}
    if not policy:
        assert "fired" not in json.dumps(index["tables"])
    report_md = (built.report.out / "report.md").read_text(encoding="utf-8")
    assert bool(POLICY_WORDS.search(report_md)) == policy
    if policy:  # a small denominator is shown
        for row in built.report.table("near_miss").rows:
            if row[-1] != "–" and int(row[2]) < 20:
                assert row[-1].endswith(f" of {row[2]})"), row
    for route, ready in [("", "#arms"), ("attempts", "#attempt-list tbody tr"),
                         ("attempt/0", "ol.timeline"), ("compare", "#aligned")]:
        _open(browser, built.url(route), ready)
        found = POLICY_WORDS.findall(_text(browser))
        if not policy:
            assert found == [], route
        elif route == "attempts":  # the list's funnel columns
            assert {"fired", "near-miss"} <= {w.lower() for w in found}
    _open(browser, built.url(), "#arms")
    arms_text = _text(browser, "#arms")
    for d in index["design"]:
        assert d["arm"] in arms_text
        for item, sha in d["items"]:
            assert sha in arms_text and len(sha) == 12
            full = built.data.inputs.prereg["hashes"][item]["sha256"]
            assert full.startswith(sha)
    if built.panel == "agents-md":
        assert "file AGENTS.md from arms/agents-md/AGENTS.md" in arms_text
        assert "no instruction file" in arms_text


def test_the_primary_comes_first(browser, built):
    from selenium.webdriver.support.ui import Select

    primary = built.data.result.plan.primary
    a, b = parse_contrast(primary.contrast)
    cohort = built.data.result.main_cohort
    _open(browser, built.url("grid"), "#grid a.cell")
    value = lambda name: Select(browser.find_element(  # noqa: E731
        "css selector", f'select[name="{name}"]')).first_selected_option.get_attribute("value")
    assert value("contrast") == primary.contrast and value("cohort") == cohort
    shown = {tr.get_attribute("data-task-row") for tr in browser.find_elements(
        "css selector", "#grid tr[data-task-row]")}
    att = built.data.inputs.loaded.attempts
    expected = set(att["task"] if cohort == "all" else att[att["cohort"] == cohort]["task"])
    assert shown == expected
    _open(browser, built.url("compare"), "#aligned")
    assert (value("a"), value("b")) == (a, b)
    task = value("task")
    assert cohort == "all" or att[att["task"] == task]["cohort"].iloc[0] == cohort
    _open(browser, built.url(), "#headline")
    head = browser.find_element("css selector", "#pass-rates th:nth-child(2)")
    assert head.text.startswith(cohort)


@pytest.mark.parametrize("built", ["fire-mini"], indirect=True)  # one panel suffices
def test_search_finds_the_phrase_typed(browser, built):
    records = built.data.records
    # A command one attempt ran that is not the whole of another's.
    commands = {}
    for i, r in enumerate(records):
        log = built.run / r.log_dir / "logs" / "agent" / "commands.jsonl"
        for line in log.read_text().splitlines():
            c = json.loads(line)
            if c.get("kind") == "command" and len(c["command"]) > 25 and "\n" not in c["command"]:
                commands.setdefault(c["command"], set()).add(i)
    phrase, owners = min(commands.items(), key=lambda kv: (len(kv[1]), -len(kv[0])))
    _open(browser, built.url(f"attempts?q=%22{_quote(phrase)}%22"), "#attempt-list tbody tr")
    rows = browser.find_elements("css selector", "#attempt-list tbody tr")
    assert {int(r.get_attribute("data-index")) for r in rows} == owners
    # The snippet quotes one step: its text (without the ellipses) is inside one command.
    snippet = rows[0].find_element("css selector", ".snippet").text.strip("…")
    assert snippet and snippet in phrase.lower()
    # The same words unquoted: the attempts that ran the command come first.
    _open(browser, built.url(f"attempts?q={_quote(phrase)}"), "#attempt-list tbody tr")
    rows = browser.find_elements("css selector", "#attempt-list tbody tr")
    first = {int(r.get_attribute("data-index")) for r in rows[:len(owners)]}
    assert first == owners and len(rows) >= len(owners)


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def test_a_sequential_panel_shows_its_looks_and_why_it_stopped(browser, built):
    seq = built.index["sequential"]
    names = {t.name for t in built.report.tables}
    if built.panel != "fire-mini-sequential":
        assert seq is None and "sequential_looks" not in names
        return
    looks_table = built.report.table("sequential_looks")
    assert [row[1] for row in looks_table.rows] == [x["task"] for x in seq["path"]]
    stop = json.loads((built.run / "stopped.json").read_text())
    assert stop["reason"] == "budget_attempts"
    _open(browser, built.url(), "#sequential")
    text = _text(browser, "#sequential")
    assert stop["line"] in text and seq["line"] in text
    assert any(stop["line"] in n for n in looks_table.notes)
    looks = browser.find_elements("css selector", "#sequential table.looks tbody tr")
    assert len(looks) == len(seq["path"]) > 0
    assert [r.find_elements("css selector", "td")[1].text for r in looks] == \
        [x["task"] for x in seq["path"]]


def test_no_folder_of_this_machine_shows(built):
    folders = {str(built.results), str(built.results.resolve())}
    for path in built.site.rglob("*"):
        if path.suffix in (".js", ".html", ".css"):
            text = path.read_text(encoding="utf-8")
            assert not [f for f in folders if f in text], path
            assert "/box/work" not in text, path
    md = (built.report.out / "report.md").read_text(encoding="utf-8")
    assert not [f for f in folders if f in md]


@pytest.mark.parametrize("built", [p for p in PANELS if p != "demo"], indirect=True)
def test_the_box_names_its_folders(built):
    """A verifier that printed the working folder's path shows it as the box names it (every
    run but the demo's: its fixture makes one verifier print it)."""
    from fire_exp.view.box_paths import task_workdir

    site = "".join(p.read_text(encoding="utf-8") for p in (built.site / "data").rglob("*.js"))
    leaked = 0
    for out in built.run.glob("attempts/*/*/r*/logs/verifier/test-stdout.txt"):
        task = out.parents[4].name
        for rest in re.findall(r"/box/work/([\w./-]+)", out.read_text(errors="replace")):
            assert f"{task_workdir(built.data.task_dir(task))}/{rest}" in site
            leaked += 1
    assert leaked  # the fixture made one verifier print it


PAGES = [("overview", "", "#headline"), ("grid", "grid", "#grid a.cell"),
         ("attempts", "attempts", "#attempt-list tbody tr"),
         ("attempt", "attempt/0", "ol.timeline"), ("compare", "compare", "#aligned")]


@pytest.mark.parametrize("width", [1280, 1920])
def test_every_page_fits_the_window(browser, built, width):
    shots = os.environ.get("FIRE_VIEW_SCREENSHOTS")
    browser.get_log("browser")
    for name, route, ready in PAGES:
        _open(browser, built.url(route), ready, width)
        assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == [], name
        over = browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth")
        assert over <= 0, (name, width)
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(Path(shots) / f"{built.panel}-{name}-{width}.png"))
    _open(browser, built.url("attempts"), "#attempt-list tbody tr", 1400)
    right = browser.execute_script(
        "const h = [...document.querySelectorAll('#attempt-list th')].pop();"
        "return [h.getBoundingClientRect().right, document.documentElement.clientWidth]")
    assert right[0] <= right[1]
