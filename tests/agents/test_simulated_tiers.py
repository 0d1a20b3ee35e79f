"""The simulated agent's tiers, over many seeds: slips, early stops, uptake of a cued remedy
and self-checks follow each tier's rates (weak, mid and strong), read from the scripts and
the code's defaults, and observed only in the commands the agent runs.

The agent plays against a stand-in session that runs nothing (so thousands of attempts
take a second or two); what the tests count is what a policy would see: the commands.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from fire_exp.agents import SimulatedAgent, simulated
from fire_exp.agents.session import ToolResult
from fire_exp.agents.simulated import DEFAULT_SELF_CHECK, DEFAULT_UPTAKE, TIERS
from fire_exp.attempt_paths import AttemptPaths
from fire_exp.paths import SUITES_DIR

SEEDS = 3000
SERVE = SUITES_DIR / "fire-mini" / "serve-status-page" / "simulated.yaml"


@dataclass
class Session:
    """Runs nothing; records the commands; at the first stop says ``says`` (if any)."""

    script: Path
    folder: Path  # the attempt folder (the agent writes its transcript under it)
    says: str | None = None
    instruction: str = "Serve the status page."
    commands: list[str] = field(default_factory=list)
    trajectory: list[object] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.env = SimpleNamespace(task=SimpleNamespace(simulation_script=self.script),
                                   files=AttemptPaths(self.folder))
        self.context = SimpleNamespace(files=())  # no instruction file placed by the arm

    def begin(self) -> str:
        return ""

    def bash(self, command: str) -> ToolResult:
        self.commands.append(command)
        self.trajectory.append(command)
        return ToolResult(output="", exit_code=0)

    def stop(self) -> str | None:
        text, self.says = self.says, None
        return text


@pytest.fixture(autouse=True)
def parse_each_script_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent reads its script at every attempt; here the YAML is parsed once."""
    monkeypatch.setattr(simulated, "load_script", functools.cache(simulated.load_script))


def play(tier: str, script: Path, says: str | None = None) -> list[list[str]]:
    """The commands of SEEDS attempts of ``tier``, one seed each."""
    runs = []
    folder = Path(tempfile.mkdtemp(prefix="fire-exp-tiers-"))
    try:
        (folder / "logs" / "agent").mkdir(parents=True)
        for seed in range(SEEDS):
            session = Session(script, folder, says)
            SimulatedAgent(tier=tier).run(session, rng=np.random.default_rng(seed))  # type: ignore[arg-type]
            runs.append(session.commands)
    finally:
        shutil.rmtree(folder)
    return runs


def near(observed: float, expected: float, n: int) -> bool:
    """Within 4.5 binomial standard errors (a false alarm about once in 150,000 runs)."""
    return abs(observed - expected) <= 4.5 * np.sqrt(expected * (1 - expected) / n) + 1e-9


def rates(script: Path) -> dict[str, dict[str, float]]:
    modes = yaml.safe_load(script.read_text())["failure_modes"]
    return {name: mode["rate"] for name, mode in modes.items()}


@pytest.fixture(scope="module")
def serve() -> dict[str, object]:
    """serve-status-page's script: its slip and early stop commands, as the YAML has them."""
    data = yaml.safe_load(SERVE.read_text())
    steps = {s["id"]: s for s in data["steps"]}
    return {"slip": steps["launch"]["slip"]["run"][0], "detached": steps["launch"]["run"][0],
            "remedy": data["failure_modes"]["skip_detach"]["remedy"]["run"][0]}


def test_the_tiers_differ_enough_to_be_told_apart() -> None:
    for mode, by_tier in rates(SERVE).items():
        assert len(set(by_tier.values())) == 3, mode
    assert len(set(DEFAULT_UPTAKE.values())) == len(set(DEFAULT_SELF_CHECK.values())) == 3


@pytest.mark.parametrize("tier", TIERS)
def test_slips_and_early_stops_follow_the_tier(tier: str, serve: dict[str, str]) -> None:
    rate = {mode: by_tier[tier] for mode, by_tier in rates(SERVE).items()}
    runs = play(tier, SERVE)
    stopped = [not any(serve["slip"] in c or serve["detached"] in c for c in r) for r in runs]
    slipped = [serve["slip"] in r for r in runs]
    assert near(np.mean(stopped), rate["stop_early"], SEEDS), (np.mean(stopped), rate)
    # The launch is skipped after an early stop: a slip shows only in the other runs.
    went_on = SEEDS - sum(stopped)
    assert near(sum(slipped) / went_on, rate["skip_detach"], went_on), rate


@pytest.mark.parametrize("tier", TIERS)
def test_a_cued_remedy_is_taken_up_at_the_tier_rate(tier: str, serve: dict[str, str]) -> None:
    runs = play(tier, SERVE, says="Relaunch it with setsid in a new session.")
    slipped = [r for r in runs if serve["slip"] in r]
    remedied = [r for r in slipped if serve["remedy"] in r]
    assert near(len(remedied) / len(slipped), DEFAULT_UPTAKE[tier], len(slipped))
    assert not any(serve["remedy"] in r for r in runs if serve["slip"] not in r
                   and serve["detached"] in r)  # nothing to remedy: no remedy


@pytest.mark.parametrize("tier", TIERS)
def test_generic_text_helps_at_the_tier_self_check_rate(tier: str,
                                                        serve: dict[str, str]) -> None:
    runs = play(tier, SERVE, says="Please review your work once more before you finish.")
    # Runs that slipped the launch and did not stop early: one open mode, so a self-check
    # remedies exactly it.
    slipped = [r for r in runs if serve["slip"] in r]
    remedied = [r for r in slipped if serve["remedy"] in r]
    assert near(len(remedied) / len(slipped), DEFAULT_SELF_CHECK[tier], len(slipped))
