"""The simulated agent reads an instruction file its arm placed (AGENTS.md, CLAUDE.md):
a slip the file cues is avoided at the tier's uptake, deterministically from its seed;
without a placed file it reads nothing and draws nothing more."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from fire_exp.agents import SimulatedAgent
from fire_exp.arms import ArmSpec
from fire_exp.arms.place import ArmSetup, PlacedFile
from fire_exp.environments import LocalEnvironment
from fire_exp.records import AttemptRecord
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks import load_task
from tests.agents.test_simulated_agent import make_task

ALWAYS = {"weak": 1.0, "mid": 1.0, "strong": 1.0}
NEVER = {"weak": 0.0, "mid": 0.0, "strong": 0.0}


def _attempt(tmp_path: Path, name: str | None, text: str, seed: int = 0, rate: float = 1.0,
             **agent_kw: dict[str, float]) -> tuple[AttemptRecord, Path]:
    task = load_task(make_task(tmp_path / uuid.uuid4().hex[:6], rate))
    attempt_id = f"sim-{uuid.uuid4().hex[:8]}"
    env = LocalEnvironment(task, tmp_path / attempt_id, attempt_id)
    files = () if name is None else (PlacedFile(name, Path("x"), text.encode()),)
    setup = ArmSetup(ArmSpec("arm", files={f.dest: "x" for f in files}), files)
    spec = AttemptSpec("run", "panel", attempt_id, task.name, "eligible", "arm", 0, 0, seed,
                       policy_arm=False)
    record = run_attempt(spec, env, SimulatedAgent(**agent_kw), [], [],
                         rng=np.random.default_rng(seed), setup=setup)
    return record, tmp_path / attempt_id / "logs" / "agent" / "commands.jsonl"


@pytest.mark.parametrize("name", ["AGENTS.md", "CLAUDE.md"])
def test_a_cued_instruction_file_avoids_the_slip(tmp_path: Path, name: str) -> None:
    record, log = _attempt(tmp_path, name, "Always write good to out.txt.", uptake=ALWAYS)
    assert record.reward == 1.0
    assert log.read_text().splitlines()[0].count(f"cat {name}") == 1


def test_without_uptake_or_cue_the_slip_stays(tmp_path: Path) -> None:
    assert _attempt(tmp_path, "AGENTS.md", "Always write good.", uptake=NEVER)[0].reward == 0.0
    generic = _attempt(tmp_path, "AGENTS.md", "Review your work.", self_check=NEVER)[0]
    assert generic.reward == 0.0
    assert _attempt(tmp_path, "AGENTS.md", "Review your work.",
                    self_check=ALWAYS)[0].reward == 1.0


def test_other_files_are_not_read(tmp_path: Path) -> None:
    record, log = _attempt(tmp_path, "NOTES.md", "Always write good.", uptake=ALWAYS)
    assert record.reward == 0.0 and "cat NOTES.md" not in log.read_text()


def test_no_file_changes_nothing_and_a_file_is_deterministic(tmp_path: Path) -> None:
    plain = _attempt(tmp_path, None, "", seed=5, rate=0.5)[0]
    base = SimulatedAgent()
    # The attempt without a file is the attempt of an arm that places none, draw for draw.
    assert plain.n_commands == 2 and plain.usage.model == f"simulated-{base.tier}"
    runs = [_attempt(tmp_path, "AGENTS.md", "Always write good.", seed=s, rate=0.5)[0]
            for s in (7, 7, 8)]
    assert (runs[0].reward, runs[0].usage) == (runs[1].reward, runs[1].usage)
    assert runs[0].usage.input_tokens > plain.usage.input_tokens  # the file was read
