"""The explorer's answers, in headless Chromium: exact numbers, the conversation in order for
every agent, the headline and the tasks behind it, search and sort, aligned side by side."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fire_exp.analysis import analyze, parse_contrast
from fire_exp.records import read_records
from tests.conftest import REPO
from tests.view.conftest import LONG, SAID, SECRET
from tests.view.test_view_browser import _attempt, _css, _css_in, _errors, _open

pytestmark = pytest.mark.browser
DATA = REPO / "tests" / "analysis" / "data"


def _url(site: Path, route: str = "") -> str:
    return (site / "index.html").as_uri() + route


def _timeline(browser: Any) -> list[tuple[str, str]]:
    """The attempt page's timeline as (kind, text): messages by role, steps by kind."""
    items = []
    for li in _css(browser, "ol.timeline > li"):
        classes = li.get_attribute("class").split()
        if "message" in classes:
            items.append((f"message:{li.get_attribute('data-role')}",
                          li.get_attribute("textContent")))
        else:
            cmd = _css_in(li, "pre.cmd")
            items.append((classes[-1], cmd[0].get_attribute("textContent") if cmd else ""))
    return items


def test_seeds_beyond_2_53_are_shown_exactly(browser, site, records):
    big = [(i, r) for i, r in enumerate(records) if r.seed > 2**53]
    assert big, "the demo run's seeds should exceed 2^53"
    for i, r in big[:3]:
        _open(browser, _url(site, f"#attempt/{i}"), "#seed")
        assert _css(browser, "#seed")[0].text == str(r.seed)
    # In the data, a seed is a string; no integer a browser would round is left as a number.
    for path in (site / "data").rglob("*.js"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r'"seed":\d', text), path
        assert not re.search(r"[:,\[]-?\d{17,}[,\]}]", text), path  # a bare JSON number


@pytest.mark.parametrize("agent", ["simulated", "openai", "claude-code", "codex"])
def test_the_conversation_interleaves_with_commands_in_order(browser, agent_sites, agent_runs,
                                                             demo_run, agent):
    run = demo_run if agent == "simulated" else agent_runs[agent]
    recs = read_records(run / "attempts.jsonl").finished
    index = _attempt(recs, "recover-wal-orders/real/r0")
    _open(browser, _url(agent_sites[agent], f"#attempt/{index}"), "ol.timeline li.message")
    assert _errors(browser) == []
    items = _timeline(browser)
    log = run / "attempts" / "recover-wal-orders" / "real" / "r0" / "logs" / "agent"
    logged = [json.loads(x) for x in (log / "commands.jsonl").read_text().splitlines()]
    # Every logged command is on the page, in the log's order.
    assert [t for k, t in items if k == "command"] == \
        [c["command"] for c in logged if c["kind"] == "command"]
    kinds = [k for k, _ in items]
    assert kinds[0] == "start" and "message:assistant" in kinds
    # In the data: each command comes after the agent message that asked for it.
    timeline = _attempt_data(agent_sites[agent], index)["timeline"]
    asked = None
    for item in timeline:
        if item["kind"] == "message" and item["role"] == "assistant" and item["actions"]:
            asked = list(item["commands"])
        elif item["kind"] == "command":
            assert asked and asked.pop(0) == item["command"], item
    if agent in ("claude-code", "codex"):  # what the agent said comes before its first command
        said = next(j for j, (k, t) in enumerate(items) if SAID[agent] in t)
        assert kinds[said] == "message:assistant" and said < kinds.index("command")
    else:  # the agent's words are on the page, and its stop follows what it said last
        assert any(k == "message:assistant" and t.strip() for k, t in items)
        stop = kinds.index("stop")
        assert kinds[stop - 1] == "message:assistant"


def _attempt_data(site: Path, index: int) -> dict[str, Any]:
    text = next((site / "data" / "a").rglob(f"{index}.js")).read_text(encoding="utf-8")
    return json.loads(text[text.index(",") + 1:-3])


def test_a_long_message_folds_and_is_redacted(browser, agent_sites, agent_runs):
    recs = read_records(agent_runs["openai"] / "attempts.jsonl").finished
    index = _attempt(recs, "recover-wal-orders/baseline/r0")
    _open(browser, _url(agent_sites["openai"], f"#attempt/{index}"), "li.message.assistant")
    first = _css(browser, "li.message.assistant")[0]
    head = _css_in(first, "pre.message-text.head")[0]
    assert len(head.text) < len(LONG) and head.is_displayed()
    full = _css_in(first, "details pre.message-text.full")[0]
    assert not full.is_displayed()
    _css_in(first, "details summary")[0].click()
    assert full.is_displayed() and LONG.strip() in full.text
    assert "key ***" in full.text and SECRET not in browser.page_source
    # The malformed tool call is shown with the tool error the model got back.
    assert "malformed tool call" in first.text
    assert "tool error" in _css(browser, "li.message.tool")[0].text


def _contrast_rows(demo_run: Path) -> Any:
    result = analyze(demo_run, REPO / "analysis" / "demo.yaml")
    return result, result.contrasts


def test_the_overview_opens_with_the_primary_contrast(browser, site, demo_run):
    result, contrasts = _contrast_rows(demo_run)
    primary = contrasts[contrasts["role"] == "primary"].iloc[0]
    _open(browser, _url(site), "#headline")
    first = browser.execute_script("return document.querySelector('#main > section').id")
    assert first == "headline"
    text = _css(browser, "#headline")[0].text
    assert f"{primary['contrast']} on {primary['cohort']}" in text
    assert f"{primary['estimate_pp']:+.1f}".replace("+0.0", "0.0") in text
    assert f"[{primary['ci_low_pp']:.1f}, {primary['ci_high_pp']:.1f}]" in text
    assert f"{primary['n_tasks']} tasks" in text
    secondaries = contrasts[(contrasts["role"] == "secondary")
                            & (contrasts["cohort"] == primary["cohort"])]
    rows = _css(browser, "#headline table tbody tr")
    assert [r.find_elements("css selector", "td")[0].text for r in rows] == \
        list(secondaries["contrast"])


def test_a_contrast_links_to_its_tasks_with_their_paired_differences(browser, site, demo_run):
    result, contrasts = _contrast_rows(demo_run)
    _open(browser, _url(site), "#headline a.to-tasks")
    _css(browser, "#headline a.to-tasks")[0].click()
    _open(browser, browser.current_url, "#grid td.diff")
    primary = contrasts[contrasts["role"] == "primary"].iloc[0]
    a, b = parse_contrast(primary["contrast"])
    tasks = result.tasks[result.tasks["cohort"] == primary["cohort"]]
    rate = {(t, arm): s / n for t, arm, s, n in
            tasks[["task", "arm", "successes", "attempts"]].itertuples(index=False)}
    expected = {t: 100 * (rate[t, a] - rate[t, b]) for t in set(tasks["task"])}
    shown = {tr.get_attribute("data-task-row"): float(
        tr.find_element("css selector", "td.diff").get_attribute("data-diff"))
        for tr in _css(browser, "#grid tr[data-task-row]")}
    assert shown == pytest.approx(expected)
    # Sorted largest difference first; the mean over the cohort is the contrast's estimate.
    values = list(shown.values())
    assert values == sorted(values, reverse=True)
    mean = _css(browser, "#mean-diff")[0].text
    assert mean == f"mean {primary['estimate_pp']:+.1f}".replace("+0.0", "0.0")
    # Per-arm totals: passed / scored over the tasks shown.
    for th in _css(browser, "#totals th[data-arm]"):
        arm = th.get_attribute("data-arm")
        mine = tasks[tasks["arm"] == arm]
        assert th.text.startswith(f"{int(mine['successes'].sum())}/{int(mine['attempts'].sum())}")


def test_the_grid_header_stays_in_view(browser, tmp_path):
    from fire_exp.view import build_view

    site = build_view(DATA / "fire_panel_30x2.csv", REPO / "analysis" / "demo.yaml",
                      tmp_path / "site").out
    browser.set_window_size(1300, 500)
    try:
        _open(browser, _url(site, "#grid?contrast=real%20-%20sham"), "#grid td.diff")
        browser.execute_script("window.scrollTo(0, 600)")
        top = browser.execute_script(
            "return document.querySelector('#grid thead th').getBoundingClientRect().top")
        assert browser.execute_script("return window.scrollY") > 0
        assert 35 <= top <= 45  # under the 40px page header, not scrolled away
        _css(browser, "#sort-diff")[0].click()
        _open(browser, browser.current_url, "#grid td.diff")
        diffs = [float(td.get_attribute("data-diff")) for td in _css(browser, "#grid td.diff")]
        assert diffs == sorted(diffs, reverse=True)
    finally:
        browser.set_window_size(1300, 1000)


def test_text_search_finds_commands_outputs_and_messages(browser, site, demo_run, records):
    def commands(r: Any) -> str:
        log = demo_run / r.log_dir / "logs" / "agent" / "commands.jsonl"
        return "\n".join(json.loads(x).get("command", "") for x in log.read_text().splitlines())

    expected = {r.attempt_id for r in records
                if "sqlite3" in commands(r) and "evidence/" in commands(r)}
    assert expected
    _open(browser, _url(site, "#attempts?q=sqlite3%20evidence%2F&in=commands"),
          "#attempt-list tbody tr")
    found = {tr.find_element("css selector", "td a").text
             for tr in _css(browser, "#attempt-list tbody tr")}
    assert found == expected
    assert _css(browser, ".snippet")[0].text.count("sqlite3") >= 1
    # A message: what the simulated agent said after a denial.
    said = "read the policy's text"
    _open(browser, _url(site, "#attempts?q=" + said.replace(" ", "%20") + "&in=messages"),
          "#count")
    n = int(_css(browser, "#count")[0].text.split()[0])
    assert n == sum(said in (demo_run / r.log_dir / "logs" / "agent" / "transcript.jsonl")
                    .read_text() for r in records)


@pytest.mark.parametrize("column,key", [("cost", lambda r: r.usage.cost_usd),
                                        ("tokens", lambda r: r.usage.input_tokens
                                         + r.usage.output_tokens),
                                        ("duration", lambda r: r.timings.total_s),
                                        ("reward", lambda r: r.reward)])
def test_columns_sort(browser, site, records, column, key):
    _open(browser, _url(site, "#attempts"), "#attempt-list tbody tr")
    _css(browser, f'th[data-sort="{column}"] a')[0].click()
    _open(browser, browser.current_url, "#attempt-list tbody tr")
    assert f"sort={column}" in browser.current_url and "dir=desc" in browser.current_url
    ids = [tr.find_element("css selector", "td a").text
           for tr in _css(browser, "#attempt-list tbody tr")]
    by_id = {r.attempt_id: r for r in records}
    values = [key(by_id[i]) for i in ids]
    assert values == sorted(values, reverse=True)


def test_side_by_side_aligns_on_the_first_policy_event(browser, site, records):
    _open(browser, _url(site, "#compare?task=recover-wal-orders&a=real&b=sham"), "#aligned")
    anchors = _css(browser, "#aligned .anchor")
    assert len(anchors) == 2
    assert "policy event" in _css(browser, "#aligned-on")[0].text
    left, right = (browser.execute_script("return arguments[0].getBoundingClientRect().top", a)
                   for a in anchors)
    assert left == right
    real = next(r for r in records if r.attempt_id == "recover-wal-orders/real/r0")
    if real.decisions:  # the policy acted on real's timeline: the anchor holds its event
        assert _css_in(anchors[0], ".event")


def test_labels_unknowns_and_percentages(browser, site, records, tmp_path):
    index = _attempt(records, "recover-wal-orders/real/r0")
    r = records[index]
    _open(browser, _url(site, f"#attempt/{index}"), "#timeline-head")
    head = _css(browser, "#timeline-head")[0].text
    assert f"{r.n_commands} command" in head and "stop" in head
    page = _css(browser, "#main")[0].text
    assert f"policy hook calls\n{r.events}" in page
    assert f"policy decisions (not allow)\n{r.decisions}" in page
    # An unknown filter value says so and matches nothing.
    _open(browser, _url(site, "#attempts?arm=shamm"), "#unknown-filter")
    assert 'arm "shamm" is not in this run' in _css(browser, "#unknown-filter")[0].text
    assert _css(browser, "#count")[0].text.startswith("0 of")
    # Percentages carry one decimal, as in the report.
    _open(browser, _url(site), "#headline")
    cells = [td.text for td in _css(browser, "#main > section:nth-of-type(2) td")]
    rates = [c for c in cells if "[" in c]
    assert rates and all(re.fullmatch(r"\d+\.\d \[\d+\.\d, \d+\.\d\]", c) for c in rates)
    # A CSV without cost or duration columns: unknown, not 0.
    from fire_exp.view import build_view

    csv = build_view(DATA / "fire_panel_30x2.csv", REPO / "analysis" / "demo.yaml",
                     tmp_path / "csv").out
    _open(browser, _url(csv, "#attempts"), "#attempt-list tbody tr")
    row = _css(browser, "#attempt-list tbody tr")[0].find_elements("css selector", "td")
    assert [row[k].text for k in (6, 7, 8)] == ["unknown"] * 3


def test_the_site_names_no_path_of_the_machine_that_built_it(site, demo_run):
    """The overview and the page (the logs are the run's own text, shown as they are)."""
    for path in [site / "index.html", site / "view.js", site / "attempt.js", site / "search.js",
                 site / "data" / "index.js"]:
        text = path.read_text(encoding="utf-8")
        assert str(REPO) not in text and str(demo_run.parent) not in text, path
    index = json.loads((site / "data" / "index.js").read_text()[len("FIRE_INDEX="):-2])
    assert index["source"] == "view/attempts.jsonl"
    assert index["metadata"]["plan_path"] == "demo.yaml"
