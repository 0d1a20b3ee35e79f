"""Declared arms in real containers: the placed file is in the agent's working folder
(``/app``) through the environment's public upload, the verifier's folders hold nothing of
the arm, and the verifier scores its own files (the oracle passes under every arm)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fire_exp.agents.base import AgentOutcome, OracleAgent
from fire_exp.agents.session import AgentSession
from fire_exp.arms import arm_specs_from_dict
from fire_exp.config import ComponentConfig, PanelConfig, RunConfig
from fire_exp.environments.images import BASE_IMAGE, LABEL, bootstrap_base_image
from fire_exp.registry import REGISTRY
from fire_exp.runner.build import build_panel, prepare_panel
from fire_exp.runner.execute import build_attempt
from fire_exp.runner.model import job_for
from tests.ci import missing

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "csv-column-stats"
SEEN: dict[str, dict[str, str]] = {}


class LookingOracle(OracleAgent):
    """Looks at the working folder and the verifier's folders, then solves the task."""

    name = "looking-oracle"

    def __init__(self, **_: object) -> None:
        pass

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        look = {"pwd": "pwd", "file": "cat AGENTS.md 2>&1",
                "tests": "ls -A /tests 2>&1 || true",
                "verifier": "ls -A /logs/verifier 2>&1"}
        SEEN[session.context.arm] = {k: session.env.exec(c, 30).output.strip()
                                     for k, c in look.items()}
        return super().run(session, rng=rng)


@pytest.fixture(scope="module")
def docker_engine() -> Iterator[Any]:
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as exc:  # noqa: BLE001
        missing(f"a reachable Docker engine ({exc})")
    bootstrap_base_image(BASE_IMAGE, client=client)
    if "looking-oracle" not in REGISTRY.names("agent"):
        REGISTRY.register("agent", "looking-oracle", LookingOracle)
    yield client
    ours = [c.name for c in client.containers.list(
        all=True, ignore_removed=True,
        filters={"label": [f"{LABEL}=1", f"{LABEL}.owner-pid={os.getpid()}"]})]
    assert not ours, f"containers left behind: {ours}"


def test_a_placed_file_reaches_the_agent_and_not_the_verifier(docker_engine: Any,
                                                              tmp_path: Path) -> None:
    source = tmp_path / "AGENTS.md"
    source.write_text("Skip the header row.\n")
    declare = {"file": {"files": {"AGENTS.md": str(source), "notes/more.md": str(source)}},
               "none": {}}
    config = RunConfig(
        panel=PanelConfig(name="arms-docker", suite="fire-mini", eligible=(), silent=(TASK,),
                          arms=("file", "none"), attempts=1, portfolio="fire-core",
                          analysis="demo", declare=arm_specs_from_dict(declare)),
        agent=ComponentConfig("looking-oracle"), environment=ComponentConfig("docker"),
        executor=ComponentConfig("local", {"workers": 1}), seed=0, run="r",
        results_dir=str(tmp_path))
    panel = build_panel(config)
    prepare_panel(panel, report=lambda line: None)
    records = {item.arm: build_attempt(panel, job_for(panel, tmp_path / "run", item)).run()
               for item in panel.schedule}
    assert SEEN["file"]["pwd"] == "/app"
    assert SEEN["file"]["file"] == "Skip the header row."
    assert "No such file" in SEEN["none"]["file"]
    for arm in ("file", "none"):
        assert SEEN[arm]["verifier"] == ""  # nothing of the arm where the reward lands
        assert "AGENTS.md" not in SEEN[arm]["tests"]
        record = records[arm]
        assert record.cause is None and record.reward == 1.0, record.error
        logs = tmp_path / "run" / "attempts" / record.attempt_id / "logs" / "verifier"
        assert sorted(p.name for p in logs.iterdir()) == ["result.json", "reward.txt",
                                                          "test-stdout.txt"]
