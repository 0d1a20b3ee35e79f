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


# ---- runs of the other agents: agent=openai (a scripted server), Claude Code and Codex ------
# (the test stand-in CLI); two of the demo's tasks, one attempt of real, sham and baseline.
LONG = "Let me think about the evidence first. " * 30  # folds on the page
SAID = {"claude-code": "I will look at the evidence folder before touching anything.",
        "codex": "Checking what the evidence folder holds first."}
FAKE_CLI = REPO / "tests" / "agents" / "fake_cli.py"
_PANEL = ("panel=demo", "panel.attempts=1", "panel.arms=[real,sham,baseline]",
          "panel.eligible=[recover-wal-orders]", "panel.silent=[csv-column-stats]")


def _openai_reply(body: dict[str, Any], n: int) -> dict[str, Any]:
    """A model that talks (a long message holding SECRET), errs once, runs two commands, stops."""
    from tests.agents.scripted_server import completion, text, tool_call

    k = sum(m["role"] == "assistant" for m in body["messages"])
    if k == 0:
        return completion({"content": f"{LONG}key {SECRET}", "tool_calls": [
            {"id": "bad1", "type": "function",
             "function": {"name": "bash", "arguments": "{not json"}}]})
    if k == 1:
        return tool_call("ls -la evidence/")
    if k == 2:
        return tool_call("sqlite3 evidence/orders.db .dump | head -3")
    return text("Done: I looked, and I stop here.")


def _say_first(log: Path, agent: str) -> None:
    """Put an assistant text turn before the CLI's first tool call, as the real CLIs print
    one (the test CLI prints tool calls only)."""
    lines = log.read_text().splitlines()
    first = next(i for i, x in enumerate(lines)
                 if '"tool_use"' in x or '"command_execution"' in x)
    said = ({"type": "assistant", "message": {"model": "claude-fake-1", "content": [
        {"type": "text", "text": SAID[agent]}]}} if agent == "claude-code" else
            {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message",
                                                "text": SAID[agent]}})
    lines.insert(first, json.dumps(said))
    log.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def agent_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A run folder per agent: ``openai``, ``claude-code``, ``codex``."""
    from tests.agents.scripted_server import ScriptedServer

    results = tmp_path_factory.mktemp("view-agents")
    runs: dict[str, Path] = {}
    with ScriptedServer(_openai_reply) as server:
        proc = run_cli("run", *_PANEL, f"results_dir={results}", "run=openai", "agent=openai",
                       f"agent.base_url={server.base_url}", "agent.model=scripted-model-1",
                       "agent.api_key_env=")
    assert proc.returncode == 0, proc.stderr
    runs["openai"] = results / "demo" / "openai"
    script = json.dumps({"commands": ["ls -la evidence/",
                                      "sqlite3 evidence/orders.db .dump | head -3"]})
    for agent in ("claude-code", "codex"):
        proc = run_cli("run", *_PANEL, f"results_dir={results}", f"run={agent}",
                       f"agent={agent}", f"agent.binary={FAKE_CLI}",
                       "agent.env_passthrough=[FAKE_CLI_SCRIPT]",
                       # Codex reports no cost: on its vendor's endpoint its model is priced
                       *(["agent.model=m", "+agent.prices.m={input:1.0,output:1.0}"]
                         if agent == "codex" else []),
                       env={"FAKE_CLI_SCRIPT": script})
        assert proc.returncode == 0, proc.stderr
        runs[agent] = results / "demo" / agent
        for log in runs[agent].glob("attempts/*/*/r0/logs/agent/cli-stdout.jsonl"):
            _say_first(log, agent)
    return runs


@pytest.fixture(scope="session")
def agent_sites(agent_runs: dict[str, Path], site: Path, demo_run: Path,
                tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The explorer of each agent's run (``SECRET`` in the environment), and the simulated
    agent's (``site``)."""
    out = tmp_path_factory.mktemp("view-agent-sites")
    saved = os.environ.get("FIRE_VIEW_TEST_API_KEY")
    os.environ["FIRE_VIEW_TEST_API_KEY"] = SECRET
    try:
        sites = {agent: build_view(run, REPO / "analysis" / "demo.yaml", out / agent).out
                 for agent, run in agent_runs.items()}
    finally:
        if saved is None:
            del os.environ["FIRE_VIEW_TEST_API_KEY"]
        else:
            os.environ["FIRE_VIEW_TEST_API_KEY"] = saved
    return sites | {"simulated": site}
