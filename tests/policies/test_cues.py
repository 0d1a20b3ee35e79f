"""The simulated agent reacts to content, not to interruption: every remedy cue of a
fire-mini task is in the real text of a family eligible on it, and in none of the texts the
comparator arms show (sham sentence pool, always-verify, reconsider)."""

from __future__ import annotations

import sys

import pytest

from fire_exp.agents.simulated import load_script
from fire_exp.paths import SUITES_DIR
from fire_exp.policies.arms import generic_sentences, load_controls
from fire_exp.policies.loader import load_portfolio
from fire_exp.policies.model import Family
from fire_exp.tasks.loader import load_task

SUITE = SUITES_DIR / "fire-mini"
PORTFOLIO = load_portfolio("fire-core")
CONTROLS = load_controls()
TASKS = sorted(p.name for p in SUITE.iterdir() if (p / "task.toml").is_file())


def texts_of(family: Family) -> list[str]:
    """The intervention texts a family's source declares (module constants named *TEXT)."""
    module = vars(sys.modules[type(family).__module__])
    return [v.lower() for k, v in module.items() if k.endswith("TEXT") and isinstance(v, str)]


COMPARATOR = " ".join(generic_sentences(CONTROLS.path)).lower() + " ".join(
    t for f in CONTROLS.families for t in texts_of(f))


def cues(task: str) -> list[tuple[str, tuple[str, ...]]]:
    script = load_script(SUITE / task / "simulated.yaml")
    return [(name, m.remedy.cues) for name, m in script.modes.items()
            if m.remedy is not None and m.remedy.cues]


@pytest.mark.parametrize("task", TASKS)
def test_remedy_cues_come_from_the_real_text_only(task: str) -> None:
    text = load_task(SUITE / task).instruction
    eligible = [f for f in PORTFOLIO.families if f.eligible(text)]
    real = " ".join(t for f in eligible for t in texts_of(f))
    for mode, words in cues(task):
        assert not any(w in COMPARATOR for w in words), f"{task}:{mode} cued by a comparator"
        if eligible:
            assert any(w in real for w in words), f"{task}:{mode} has no cue in the real text"
        if not eligible:
            everything = " ".join(t for f in PORTFOLIO.families for t in texts_of(f))
            assert not any(w in everything for w in words), f"{task}:{mode} cued by a policy"


def test_every_family_and_control_declares_its_texts() -> None:
    for family in (*PORTFOLIO.families, *CONTROLS.families):
        assert texts_of(family), family.name


def test_every_eligible_task_has_a_cued_failure_mode() -> None:
    for task in TASKS:
        text = load_task(SUITE / task).instruction
        if any(f.eligible(text) for f in PORTFOLIO.families):
            assert cues(task), f"{task} has no failure mode a policy can cue"
