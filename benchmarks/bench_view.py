"""Time ``fire-exp view`` on a large panel, its pages, its search and sort in headless Chromium.

Writes 500 tasks x 5 arms x 4 attempts (10,000 records, the report benchmark's simulated
panel) with a small command log, a conversation and policy events per attempt, builds the
explorer with the default plan, then opens it from the file system in Debian's Chromium
(selenium, the system chromedriver) and times, from navigation to the page drawn: the
overview (the index), the task x arm grid (and sorted by a contrast's paired difference),
the attempt list, a filter, one attempt page (its data file loaded when opened), and a text
search on a cold page (the search index loaded first). Then, on a loaded page, each query
the issue asks to answer in under a second: a text search over commands, outputs and
messages, and a sort by tokens, cost, duration and reward (from the address change to the
list drawn).

    python -m benchmarks.bench_view [--tasks 500] [--attempts 4] [--keep DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_report import write_panel
from fire_exp.analysis import load_plan
from fire_exp.paths import ANALYSIS_DIR
from fire_exp.records import AttemptRecord, append_records, read_records
from fire_exp.view import build_view

_DENY = "Denied: copy the evidence folder first (cp -a DIR DIR.copy), then work on the copy."


def add_logs(run: Path) -> int:
    """Give every record of ``run`` a log folder: three commands, a stop, its policy events."""
    records = read_records(run / "attempts.jsonl").finished
    rewritten: list[AttemptRecord] = []
    for k, r in enumerate(records):
        log_dir = f"attempts/{r.task}/{r.arm}/r{r.replicate}"
        agent = run / log_dir / "logs" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        said = ["sqlite3 evidence/orders.db .dump" if k % 7 == 0 else f"step 0 of {r.task}",
                f"step 1 of {r.task}", f"step 2 of {r.task}"]
        commands = [{"index": i, "kind": "command", "command": said[i],
                     "exit_code": 0, "output": f"output {i}\n" * 20, "denied": False}
                    for i in range(3)] + [{"index": 3, "kind": "stop"}]
        (agent / "commands.jsonl").write_text("".join(json.dumps(c) + "\n" for c in commands))
        transcript = [{"role": "assistant", "content": f"I run step {i} now.",
                       "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
                           "name": "bash", "arguments": json.dumps({"command": said[i]})}}]}
                      for i in range(3)] + [{"role": "assistant", "content": "Done."}]
        (agent / "transcript.jsonl").write_text("".join(json.dumps(m) + "\n"
                                                        for m in transcript))
        events = [{"seq": 4, "event": "PreToolUse", "step": 2, "family": "service_persistence",
                   "rule": "r", "decision": "deny", "text": _DENY}] if r.funnel.fired else []
        (agent / "policy-events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        verifier = run / log_dir / "logs" / "verifier"
        verifier.mkdir(exist_ok=True)
        (verifier / "test-stdout.txt").write_text("1 passed\n" if r.passed else "1 failed\n")
        rewritten.append(r.model_copy(update={"log_dir": log_dir}))
    (run / "attempts.jsonl").unlink()
    append_records(run / "attempts.jsonl", rewritten)
    return len(rewritten)


def _browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1300,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options,
                            service=Service(shutil.which("chromedriver") or "chromedriver"))


def _time_page(driver: Any, url: str, ready: str) -> float:
    """Seconds from navigation start until the page is drawn and painted.

    The page sets ``FIRE_DRAWN`` (``performance.now()``, counted from navigation start) one
    frame after its route finished drawing; ``ready`` (a CSS selector) must then be there.
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(url)
    drawn = WebDriverWait(driver, 60, poll_frequency=0.05).until(
        lambda d: d.execute_script("return window.FIRE_DRAWN"))
    if not driver.find_elements(By.CSS_SELECTOR, ready):
        raise AssertionError(f"{url}: drawn, but without {ready}")
    return float(drawn) / 1000


_SEARCH = "#attempts?q=sqlite3%20evidence%2F"
QUERIES = {"search: sqlite3 evidence/ (everywhere)": _SEARCH,
           "search: 'step 2' in messages": "#attempts?q=step%202&in=messages",
           "search: output 1 in outputs": "#attempts?q=output%201&in=outputs",
           "sort by tokens": "#attempts?sort=tokens&dir=desc",
           "sort by cost": "#attempts?sort=cost&dir=desc",
           "sort by duration": "#attempts?sort=duration&dir=asc",
           "sort by reward": "#attempts?sort=reward&dir=desc",
           "search + sort by cost": _SEARCH + "&sort=cost&dir=desc"}


def _time_query(driver: Any, route: str) -> float:
    """Seconds from an address change on a loaded page until the new list is drawn."""
    from selenium.webdriver.support.ui import WebDriverWait

    start = driver.execute_script(
        "const t = performance.now(); location.hash = arguments[0]; return t;", route)
    drawn = WebDriverWait(driver, 60, poll_frequency=0.02).until(
        lambda d: d.execute_script("return window.FIRE_DRAWN"))
    return (float(drawn) - float(start)) / 1000


def browse(site: Path, repeat: int, attempt: int) -> dict[str, float]:
    """Median seconds per page over ``repeat`` cold loads, then per query on a loaded page."""
    index = site / "index.html"
    pages = {"overview (index)": ("", "#headline"),
             "task x arm grid": ("#grid", "#grid a.cell"),
             "grid by paired difference": ("#grid?contrast=real%20-%20sham&sort=diff",
                                           "#grid td.diff"),
             "attempt list": ("#attempts", "#attempt-list tbody tr"),
             "filtered list (arm, near-miss)": ("#attempts?arm=real&near_miss=yes",
                                                "#attempt-list tbody tr"),
             "attempt page": (f"#attempt/{attempt}", "ol.timeline li.step"),
             "cold search (index + search files)": (_SEARCH, "#attempt-list tbody tr")}
    driver = _browser()
    try:
        times = {name: [_time_page(driver, index.as_uri() + route, ready)
                        for _ in range(repeat)] for name, (route, ready) in pages.items()}
        _time_page(driver, index.as_uri() + _SEARCH, "#attempt-list tbody tr")
        for name, route in QUERIES.items():
            times["loaded page, " + name] = [
                _time_query(driver, route + ("&" if "?" in route else "?") + f"n={k}")
                for k in range(repeat)]
    finally:
        driver.quit()
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    """Generate the panel, build the explorer, time its pages, print the times."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--attempts", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folder here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run = write_panel(args.keep or Path(tmp) / "run", args.tasks, args.attempts)
        t0 = time.perf_counter()
        n = add_logs(run)
        t1 = time.perf_counter()
        site = build_view(run, load_plan(ANALYSIS_DIR / "default.yaml"))
        t2 = time.perf_counter()
        size = (site.out / "data" / "index.js").stat().st_size
        print(f"{n} attempts with logs written in {t1 - t0:.1f} s; fire-exp view (read, "
              f"analyse, figures, {site.n_attempts} attempt files): {t2 - t1:.1f} s; "
              f"data/index.js {size / 1e6:.2f} MB")
        for name, seconds in browse(site.out, args.repeat, n // 2).items():
            print(f"{name:52s} {seconds:6.2f} s (median of {args.repeat}, headless Chromium)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
