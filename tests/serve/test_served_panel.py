"""Issue 35, point 3: a real panel driven by the served model, in the suite.

``fire-exp run`` with the real CLI in Docker (Codex 0.163, Claude Code 2.1), pointed at
``fire-exp serve-model``'s llama-server with Qwen2.5-Coder-0.5B, on two bundled tasks (one
the policies are eligible on, one silent), the real and the baseline arm, one attempt each
(``served_panel.py``). :func:`served_panel.check_panel` asserts what the records must say:
every attempt fair (no provider, harness, environment or protocol failure), tokens counted,
cost zero, the real arm's hook events in its record and the baseline's none, the model's
tool calls answered by the CLI in the box, Claude Code's commands run.

The two panels run at once, each CLI against its own server of the model (the ``served``
fixture: one thread at niceness -10 each, as beside the suite's other tests a two-thread
server's answers slowed past the attempts' time). The figures per attempt are
``benchmarks/bench_served_model.py --panel``'s.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fire_exp.serve.server import Endpoint
from tests.serve.served_panel import check_panel, run_panel

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.cli, pytest.mark.docker]


def test_served_panels_of_both_clis_are_fair_and_recorded(served: dict[str, Endpoint],
                                                          tmp_path: Path,
                                                          docker_client: object) -> None:
    with ThreadPoolExecutor(max_workers=len(served)) as pool:
        runs = {agent: pool.submit(run_panel, agent, endpoint, tmp_path / agent)
                for agent, endpoint in served.items()}
    for agent, run in runs.items():
        check_panel(agent, run.result())
