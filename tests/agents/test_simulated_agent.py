"""The simulated agent: real commands, seeded slips, and a response to text alone."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from fire_exp.agents import SimulatedAgent, load_script
from fire_exp.environments import LocalEnvironment
from fire_exp.errors import InputError
from fire_exp.policies import Family, instruct, rule
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks import load_task

SCRIPT = """
steps:
  - id: write
    run: ["echo good > out.txt"]
    slip: {mode: bad_write, run: ["echo bad > out.txt"]}
  - id: look
    run: ["cat out.txt"]
failure_modes:
  bad_write:
    rate: {weak: RATE, mid: RATE, strong: RATE}
    remedy: {cues: ["write good"], run: ["echo good > out.txt"]}
"""


def make_task(root: Path, rate: float = 1.0) -> Path:
    task = root / "sim-task"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text('schema_version = "1.1"\n')
    (task / "instruction.md").write_text("Write the word good to out.txt.\n")
    (task / "environment" / "Dockerfile").write_text("FROM fire-exp/base:bookworm\n")
    (task / "environment" / "setup.sh").write_text("mkdir -p $FIRE_WORKDIR\n")
    (task / "tests" / "test.sh").write_text(
        'if grep -qx good "$FIRE_WORKDIR/out.txt"; then echo 1; else echo 0; fi '
        '> "$FIRE_LOGS/verifier/reward.txt"\n')
    (task / "simulated.yaml").write_text(SCRIPT.replace("RATE", str(rate)))
    return task


class Says(Family):
    """A stop-time family that says a fixed text once."""

    def __init__(self, text: str) -> None:
        self.name = "says"
        self.text = text

    def eligible(self, task_text):
        return True

    @rule(events=("Stop",), limit=1)
    def speak(self, event, state):
        return instruct(self.text)


def attempt(tmp_path: Path, families, seed: int = 0, rate: float = 1.0, **agent_kw):
    task = load_task(make_task(tmp_path, rate))
    attempt_id = f"sim-{uuid.uuid4().hex[:8]}"
    env = LocalEnvironment(task, tmp_path / attempt_id, attempt_id)
    spec = AttemptSpec("run", "panel", attempt_id, task.name, "eligible", "real", 0, 0, seed)
    return run_attempt(spec, env, SimulatedAgent(**agent_kw), families, [],
                       rng=np.random.default_rng(seed))


def test_slip_fails_without_any_policy(tmp_path: Path) -> None:
    record = attempt(tmp_path, [])
    assert record.reward == 0.0 and record.n_commands == 2 and record.events > 0


def test_cued_text_triggers_the_remedy(tmp_path: Path) -> None:
    record = attempt(tmp_path, [Says("Please write good before you stop.")],
                     uptake={"weak": 1.0, "mid": 1.0, "strong": 1.0})
    assert record.reward == 1.0 and record.decisions == 1 and record.n_commands == 3


@pytest.mark.parametrize(("self_check", "reward"), [(0.0, 0.0), (1.0, 1.0)])
def test_generic_text_helps_only_at_the_self_check_rate(tmp_path: Path, self_check: float,
                                                         reward: float) -> None:
    record = attempt(tmp_path, [Says("Please review your work carefully.")],
                     self_check={"weak": self_check, "mid": self_check, "strong": self_check})
    assert record.reward == reward


def test_without_a_slip_the_agent_succeeds(tmp_path: Path) -> None:
    assert attempt(tmp_path, [], rate=0.0).reward == 1.0


def test_same_seed_same_attempt(tmp_path: Path) -> None:
    runs = [attempt(tmp_path / str(i), [Says("Please review your work carefully.")], seed=3,
                    rate=0.5) for i in range(2)]
    assert runs[0].reward == runs[1].reward
    assert runs[0].usage == runs[1].usage and runs[0].n_commands == runs[1].n_commands


def test_the_script_gives_each_tier_its_own_rate(tmp_path: Path) -> None:
    # How often the agent slips at each rate, over many seeds: test_simulated_tiers.py.
    path = make_task(tmp_path) / "simulated.yaml"
    path.write_text(SCRIPT.replace("weak: RATE, mid: RATE, strong: RATE",
                                   "weak: 0.7, mid: 0.4, strong: 0.1"))
    assert load_script(path).modes["bad_write"].rate == {"weak": 0.7, "mid": 0.4,
                                                         "strong": 0.1}


@pytest.mark.parametrize(("text", "field"), [
    ("steps: []", "steps"),
    ("steps: [{run: 'true', slip: {mode: ghost, run: 'false'}}]", "steps[0].slip.mode"),
    ("steps: [{run: 'true'}]\nfailure_modes: {x: {rate: {weak: 2, mid: 0, strong: 0}}}",
     "failure_modes.x.rate.weak"),
    ("steps: [{run: 'true'}]\nfailure_modes: {x: {rate: {weak: 0.1}}}", "failure_modes.x.rate"),
    ("steps: [ {run: 'true'", "line 2"),
    ("steps: [{run: 'true'}]\nsteps: [{run: 'false'}]", "line 2"),  # a key twice
])
def test_bad_scripts_name_the_file_and_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "simulated.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_script(path)
    assert err.value.field == field and str(path) in str(err.value)
