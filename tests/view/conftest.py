"""Fixtures of the run explorer's tests: a real small demo run, its site, a real browser.

The browser tests drive Debian's ``chromium`` through its ``chromedriver`` with selenium
(no driver download). Without them the tests skip, except under ``CI=true``, where a
missing browser fails them: CI installs ``chromium`` and ``chromium-driver`` with apt.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fire_exp.records import read_records
from fire_exp.view import build_view
from tests.ci import missing
from tests.conftest import REPO, run_cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
# What the injected command output holds: it must show as text and never run.
HOSTILE = "<script>window.__pwned = 1; document.title = 'pwned'</script>" \
          "<img src=x onerror=\"window.__pwned = 2\"><b>bold?</b>"
SECRET = "sk-test-viewsecret-0123456789"


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of the demo panel on 3 tasks x 5 arms x 1 attempt (local environment).

    What the run printed is kept in ``RESULTS/run-stdout.txt``. One command output is then
    rewritten to hold ``HOSTILE`` and ``SECRET``, as an agent's
    output could.
    """
    results = tmp_path_factory.mktemp("view-results")
    proc = run_cli("run", "panel=demo", "panel.attempts=1",
                   "panel.eligible=[recover-wal-orders,serve-status-page]",
                   "panel.silent=[csv-column-stats]", f"results_dir={results}", "run=view")
    assert proc.returncode == 0, proc.stderr
    (results / "run-stdout.txt").write_text(proc.stdout)  # beside the run folder
    run = results / "demo" / "view"
    log = run / "attempts" / "csv-column-stats" / "baseline" / "r0" / "logs" / "agent" \
        / "commands.jsonl"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    lines[0]["output"] = f"{HOSTILE}\nkey={SECRET}\n"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


@pytest.fixture(scope="session")
def site(demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The explorer of ``demo_run``, built with ``SECRET`` in the environment."""
    out = tmp_path_factory.mktemp("view-site")
    saved = os.environ.get("FIRE_VIEW_TEST_API_KEY")
    os.environ["FIRE_VIEW_TEST_API_KEY"] = SECRET
    try:
        build_view(demo_run, REPO / "analysis" / "demo.yaml", out)
    finally:
        if saved is None:
            del os.environ["FIRE_VIEW_TEST_API_KEY"]
        else:
            os.environ["FIRE_VIEW_TEST_API_KEY"] = saved
    return out


@pytest.fixture(scope="session")
def records(demo_run: Path) -> list[Any]:
    """The run's finished records, in file order (the site's attempt numbers)."""
    return read_records(demo_run / "attempts.jsonl").finished


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium through selenium and the system chromedriver."""
    if not (CHROMIUM and CHROMEDRIVER):
        message = "needs chromium and chromedriver (apt install chromium chromium-driver)"
        missing(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
