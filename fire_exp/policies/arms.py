"""The five arms of a panel, and the triggered sham derived from any portfolio.

- ``real``: the portfolio's families.
- ``sham``: the same eligibility, tracking and guards, so it fires at the same events, but
  every intervention text is replaced by generic review text of similar length (within
  ±20 %), and a ``deny`` becomes an ``instruct`` (repeated generic denial can deadlock an
  agent, while keeping the denial would keep the tested mechanism; FIRE §4).
- ``always_verify`` and ``reconsider``: control sources in ``portfolios/controls/``.
- ``baseline``: nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fire_exp.errors import InputError
from fire_exp.policies.ablation import ablation_arm_families, is_ablation_arm
from fire_exp.policies.loader import Portfolio, load_portfolio
from fire_exp.policies.model import (
    Coding,
    Decision,
    Event,
    Family,
    Rule,
    State,
    Step,
)

ARMS = ("real", "sham", "always_verify", "reconsider", "baseline")
CONTROL_FAMILIES = {"always_verify": "always_verify", "reconsider": "reconsider"}
SHAM_TEXT_FILE = "sham_text.md"
_TOLERANCE = 0.2


def generic_sentences(controls: Path) -> list[str]:
    """The sentence pool of generic review text (``portfolios/controls/sham_text.md``)."""
    path = controls / SHAM_TEXT_FILE
    if not path.is_file():
        raise InputError(path, "<file>", "missing", "the sham needs its generic text pool")
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    sentences = [ln for ln in lines if ln and not ln.startswith("#")]
    if len(sentences) < 3:
        raise InputError(path, "<sentences>", "needs at least 3 generic sentences")
    return sentences


def generic_text(target_len: int, key: str, sentences: Sequence[str]) -> str:
    """Generic review text whose length is within ±20 % of ``target_len``.

    Sentences are taken in a rotation that starts at a position fixed by ``key`` (the
    rule), so a rule's sham text is the same in every attempt. The last sentence is
    shortened at a word boundary when needed.
    """
    start = int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(sentences)
    low, high = (1 - _TOLERANCE) * target_len, (1 + _TOLERANCE) * target_len
    text, i = "", start
    while len(text) < low:
        candidate = f"{text} {sentences[i % len(sentences)]}".strip()
        if len(candidate) > high:
            # Cut the sentence at a word boundary and close it with a period.
            words = sentences[i % len(sentences)].rstrip(".").split()
            while words and len(f"{text} {' '.join(words)}.".strip()) > high:
                words.pop()
            candidate = f"{text} {' '.join(words)}.".strip() if words else text
            return candidate
        text, i = candidate, i + 1
    return text


class ShamFamily(Family):
    """A family's triggered sham: same eligibility and timing, generic text, no denial."""

    def __init__(self, real: Family, sentences: Sequence[str]) -> None:
        self.real = real
        self.name = real.name
        self.description = f"sham of {real.name}"
        self._sentences = tuple(sentences)

    def eligible(self, task_text: str) -> bool:
        return self.real.eligible(task_text)

    def track(self, event: Event, state: State) -> None:
        self.real.track(event, state)

    def rules(self) -> list[Rule]:
        return [Rule(r.family, r.name, r.events, r.limit, self._sham(r)) for r in self.real.rules()]

    def _sham(self, real_rule: Rule):  # type: ignore[no-untyped-def]
        def decide(event: Event, state: State) -> Decision:
            decision = real_rule.decide(event, state)
            if decision.is_allow:
                return decision
            text = generic_text(len(decision.text), real_rule.key, self._sentences)
            return Decision("instruct", text)

        return decide

    def code(self, trajectory: Sequence[Step], task_text: str) -> Coding:
        return self.real.code(trajectory, task_text)


@dataclass(frozen=True)
class ArmPolicies:
    """What one arm runs: its families and the sources they came from (for hashing)."""

    arm: str
    families: tuple[Family, ...]


def build_arm(arm: str, portfolio: Portfolio, controls: Portfolio) -> ArmPolicies:
    """The families of ``arm`` given the real portfolio and the control sources."""
    if arm == "real":
        return ArmPolicies(arm, portfolio.families)
    if arm == "sham":
        sentences = generic_sentences(controls.path)
        return ArmPolicies(arm, tuple(ShamFamily(f, sentences) for f in portfolio.families))
    if arm in CONTROL_FAMILIES:
        try:
            return ArmPolicies(arm, (controls.family(CONTROL_FAMILIES[arm]),))
        except KeyError:
            raise InputError(controls.path, arm, "no control family of that name",
                             f"define a family named {CONTROL_FAMILIES[arm]!r}") from None
    if arm == "baseline":
        return ArmPolicies(arm, ())
    if is_ablation_arm(arm):  # leave-one-family-out (fire_exp/policies/ablation.py)
        return ArmPolicies(arm, ablation_arm_families(arm, portfolio.families))
    raise InputError("panel.arms", arm, "unknown arm", f"use some of {', '.join(ARMS)}, or without_FAMILY")


def load_controls(path: str | Path = "controls") -> Portfolio:
    """The control sources (always-verify, reconsider) and the sham's text pool."""
    return load_portfolio(path)
