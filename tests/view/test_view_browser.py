"""The run explorer in a real headless Chromium: from the file system and over HTTP."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.view.conftest import HOSTILE

pytestmark = pytest.mark.browser


def _open(browser: Any, url: str, ready: str) -> None:
    """Load ``url`` and wait until ``ready`` (a CSS selector) is in the page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, ready))


def _errors(browser: Any) -> list[dict[str, Any]]:
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def _css(browser: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(browser.find_elements(By.CSS_SELECTOR, selector))


def _attempt(records: list[Any], attempt_id: str) -> int:
    return next(i for i, r in enumerate(records) if r.attempt_id == attempt_id)


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """``site`` on a static file server on a free loopback port."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("origin", ["file", "http"])
def test_every_page_loads_without_console_errors(browser, site, served, origin):
    base = (site / "index.html").as_uri() if origin == "file" else f"{served}/index.html"
    browser.get_log("browser")  # drop what earlier tests left
    for route, ready in [("", "#headline"), ("#grid", "#grid a.cell"),
                         ("#grid?contrast=real%20-%20sham&sort=diff", "#grid td.diff"),
                         ("#attempts", "#attempt-list tbody tr"),
                         ("#attempts?q=evidence&sort=cost", "#attempt-list tbody tr"),
                         ("#attempt/0", "ol.timeline li.step"),
                         ("#compare?task=recover-wal-orders", "#aligned .item")]:
        _open(browser, base + route, ready)
        assert _errors(browser) == [], route
        # Parts of a page are elements; a bare text child would be a rendering slip ("null").
        assert browser.execute_script(
            "return [...document.getElementById('main').childNodes]"
            ".filter(n => n.nodeType === 3).map(n => n.textContent)") == [], route


def test_grid_has_one_cell_per_task_and_arm(browser, site, records):
    _open(browser, (site / "index.html").as_uri() + "#grid?cohort=every", "#grid a.cell")
    cells = [(td.get_attribute("data-task"), td.get_attribute("data-arm"))
             for td in _css(browser, "#grid td[data-task]")]
    expected = {(r.task, r.arm) for r in records}
    assert len(cells) == len(expected) == 3 * 5
    assert set(cells) == expected
    link = _css(browser, '#grid td[data-task="recover-wal-orders"][data-arm="real"] a')[0]
    assert link.get_attribute("href").endswith("#attempts?task=recover-wal-orders&arm=real")


def test_attempt_page_shows_policy_event_at_its_step(browser, site, demo_run, records):
    log = demo_run / "attempts" / "recover-wal-orders" / "real" / "r0" / "logs" / "agent"
    events = [json.loads(x) for x in (log / "policy-events.jsonl").read_text().splitlines()]
    deny = next(e for e in events if e["event"] == "PreToolUse")
    commands = [json.loads(x) for x in (log / "commands.jsonl").read_text().splitlines()]
    denied = [c for c in commands if c["kind"] == "command"][deny["step"] - 1]
    assert denied["denied"]  # the command log agrees which command was denied
    index = _attempt(records, "recover-wal-orders/real/r0")
    _open(browser, (site / "index.html").as_uri() + f"#attempt/{index}", "ol.timeline")
    steps = _css(browser, "ol.timeline > li.step")
    with_events = [s for s in steps if _css_in(s, ".event")]
    assert [s.get_attribute("data-step") for s in with_events] == [str(deny["step"])]
    step = with_events[0]
    assert denied["command"].splitlines()[0] in _css_in(step, "pre.cmd")[0].text
    head = _css_in(step, ".event-head")[0].text
    assert f"{deny['family']} / {deny['rule']}" in head and "denied" in head
    assert deny["text"][:60] in _css_in(step, ".event-text")[0].text


def _css_in(element: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(element.find_elements(By.CSS_SELECTOR, selector))


def test_a_filter_changes_what_is_listed(browser, site, records):
    from selenium.webdriver.support.ui import Select, WebDriverWait

    _open(browser, (site / "index.html").as_uri() + "#attempts", "#attempt-list tbody tr")
    assert len(_css(browser, "#attempt-list tbody tr")) == len(records) == 15
    Select(_css(browser, 'select[name="arm"]')[0]).select_by_value("sham")
    WebDriverWait(browser, 5).until(lambda d: len(_css(d, "#attempt-list tbody tr")) == 3)
    arms = {row.find_elements("css selector", "td")[2].text
            for row in _css(browser, "#attempt-list tbody tr")}
    assert arms == {"sham"}
    Select(_css(browser, 'select[name="outcome"]')[0]).select_by_value("passed")
    passed = sum(r.passed for r in records if r.arm == "sham")
    WebDriverWait(browser, 5).until(
        lambda d: len(_css(d, "#attempt-list tbody tr")) == passed)
    assert _css(browser, "#count")[0].text == f"{passed} of 15 attempts"


def test_output_holding_script_is_shown_as_text(browser, site, records):
    index = _attempt(records, "csv-column-stats/baseline/r0")
    _open(browser, (site / "index.html").as_uri() + f"#attempt/{index}", "pre.output")
    title = browser.title
    _css(browser, "li.step.command details summary")[0].click()
    output = _css(browser, "li.step.command pre.output")[0]
    assert HOSTILE in output.get_attribute("textContent")
    assert _css_in(output, "script, img, b") == []
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.title == title != "pwned"
    assert "key=***" in output.get_attribute("textContent")
