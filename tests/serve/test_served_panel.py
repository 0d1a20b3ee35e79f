"""Issue 35, point 3: a real panel driven by the served model, in the suite.

``fire-exp run`` with the real CLI in Docker (Codex 0.163, Claude Code 2.1), pointed at
``fire-exp serve-model``'s llama-server with Qwen2.5-Coder-0.5B, on two bundled tasks (one
the policies are eligible on, one silent), the real and the baseline arm, one attempt each
(``served_panel.py``). :func:`served_panel.check_panel` asserts what the records must say:
every attempt fair (no provider, harness, environment or protocol failure), tokens counted,
cost zero, the real arm's hook events in its record and the baseline's none, the model's
tool calls answered by the CLI in the box, Claude Code's commands run.

The two panels share the server (a slot each). Claude Code's starts once Codex's first
attempt is over: the first request of each on a cold server at once left Codex's without an
answer in its time on CI's loaded cores. The figures per attempt are
``benchmarks/bench_served_model.py --panel``'s.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fire_exp.records import read_records
from fire_exp.serve.server import Endpoint
from tests.serve.served_panel import check_panel, run_panel

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.cli, pytest.mark.docker]


def test_served_panels_of_both_clis_are_fair_and_recorded(served: Endpoint, tmp_path: Path,
                                                          docker_client: object) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        codex = pool.submit(run_panel, "codex", served, tmp_path / "codex")
        while not codex.done() and not _finished_any(tmp_path / "codex"):
            time.sleep(1)
        claude = pool.submit(run_panel, "claude-code", served, tmp_path / "claude-code")
        runs = {"codex": codex.result(), "claude-code": claude.result()}
    for agent, run in runs.items():
        check_panel(agent, run)


def _finished_any(results: Path) -> bool:
    """Whether a run under ``results`` has a finished attempt on record."""
    return any(read_records(p).finished for p in results.glob("demo/*/attempts.jsonl"))
