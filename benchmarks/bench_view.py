"""Time ``fire-exp view`` on a large panel and its pages in headless Chromium.

Writes 1,000 tasks x 5 arms x 4 attempts (20,000 records, the report benchmark's simulated
panel) with a small command log and policy events per attempt, builds the explorer with
the default plan, then opens it from the file system in Debian's Chromium (selenium, the
system chromedriver) and times, from navigation to the page drawn: the overview (the index),
the task x arm grid, the attempt list, a filter, and one attempt page (its data file
loaded when opened).

    python -m benchmarks.bench_view [--tasks 1000] [--attempts 4] [--keep DIR] [--repeat 3]
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
    for r in records:
        log_dir = f"attempts/{r.task}/{r.arm}/r{r.replicate}"
        agent = run / log_dir / "logs" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        commands = [{"index": i, "kind": "command", "command": f"step {i} of {r.task}",
                     "exit_code": 0, "output": f"output {i}\n" * 20, "denied": False}
                    for i in range(3)] + [{"index": 3, "kind": "stop"}]
        (agent / "commands.jsonl").write_text("".join(json.dumps(c) + "\n" for c in commands))
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


def browse(site: Path, repeat: int, attempt: int) -> dict[str, float]:
    """Median seconds per page over ``repeat`` cold loads."""
    index = site / "index.html"
    pages = {"overview (index)": ("", "#table-contrasts"),
             "task x arm grid": ("#grid", "#grid a.cell"),
             "attempt list": ("#attempts", "#attempt-list tbody tr"),
             "filtered list (arm, near-miss)": ("#attempts?arm=real&near_miss=yes",
                                                "#attempt-list tbody tr"),
             "attempt page": (f"#attempt/{attempt}", "ol.timeline li.step")}
    driver = _browser()
    try:
        times = {name: [_time_page(driver, index.as_uri() + route, ready)
                        for _ in range(repeat)] for name, (route, ready) in pages.items()}
    finally:
        driver.quit()
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    """Generate the panel, build the explorer, time its pages, print the times."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
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
            print(f"{name:32s} {seconds:6.2f} s (median of {args.repeat}, headless Chromium)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
