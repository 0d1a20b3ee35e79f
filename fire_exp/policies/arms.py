"""The arms registry, the five arms of the paper, and the triggered sham of any portfolio.

Every built-in arm is registered once in :data:`ARM_REGISTRY` (name, builder, whether it
is a policy arm); building a panel, the validity guard, the attempt and the order of a
report's rows all look arms up there. An arm a panel declares (``panel.declare``,
:mod:`fire_exp.arms`) is not registered: it names the registered arm whose policies it runs,
and the registered arms are its presets. The paper's five:

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fire_exp.errors import InputError
from fire_exp.policies.ablation import ABLATION_PREFIX, ablation_arm_families
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
    """What one arm runs: its families, whether it is a policy arm, where they came from.

    ``portfolio`` and ``controls`` are the source folders the arm was built from, so an
    agent whose policies run elsewhere (a CLI's hooks through the bridge) can rebuild it.
    """

    arm: str
    families: tuple[Family, ...]
    policy_arm: bool = True
    portfolio: Path | None = None
    controls: Path | None = None


ArmBuilder = Callable[[Portfolio, Portfolio], tuple[Family, ...]]


@dataclass(frozen=True)
class Arm:
    """A registered arm.

    Attributes:
        name: the arm's name in panels and records.
        build: its families, given the real portfolio and the control sources.
        policy_arm: whether it runs policies (its attempts must reach the policy runtime;
            a non-policy arm's must carry no policy at all).
        description: one line for listings.
    """

    name: str
    build: ArmBuilder
    policy_arm: bool
    description: str = ""


class ArmRegistry:
    """The arms, in registration order (the order reports list them in).

    Derived arms whose names carry a parameter (``real-minus-FAMILY``) register a prefix
    and a function from the rest of the name to the :class:`Arm`.
    """

    def __init__(self) -> None:
        self._arms: dict[str, Arm] = {}
        self._derived: dict[str, Callable[[str], Arm]] = {}

    def register(self, arm: Arm) -> None:
        """Add ``arm``; a name already taken raises ValueError."""
        if arm.name in self._arms or any(arm.name.startswith(p) for p in self._derived):
            raise ValueError(f"arm {arm.name!r} is already registered")
        self._arms[arm.name] = arm

    def register_derived(self, prefix: str, make: Callable[[str], Arm]) -> None:
        """Arms named ``PREFIX + PARAMETER``, made on first use by ``make(PARAMETER)``."""
        if prefix in self._derived or any(n.startswith(prefix) for n in self._arms):
            raise ValueError(f"arms named {prefix!r}... are already registered")
        self._derived[prefix] = make

    def get(self, name: str) -> Arm:
        """The arm called ``name``. Raises InputError naming the known arms."""
        if name in self._arms:
            return self._arms[name]
        for prefix, make in self._derived.items():
            if name.startswith(prefix) and len(name) > len(prefix):
                return make(name[len(prefix):])
        known = [*self._arms, *(f"{p}NAME" for p in self._derived)]
        raise InputError("panel.arms", name, "unknown arm", f"use some of {', '.join(known)}")

    def names(self) -> tuple[str, ...]:
        """The registered (not derived) arms, in registration order."""
        return tuple(self._arms)

    def order(self, arms: Iterable[str]) -> list[str]:
        """``arms`` sorted as registered; derived and unknown names follow, by name."""
        rank = {name: i for i, name in enumerate(self._arms)}
        return sorted(arms, key=lambda a: (rank.get(a, len(rank)), a))


def _real(portfolio: Portfolio, controls: Portfolio) -> tuple[Family, ...]:
    return portfolio.families


def _sham(portfolio: Portfolio, controls: Portfolio) -> tuple[Family, ...]:
    sentences = generic_sentences(controls.path)
    return tuple(ShamFamily(f, sentences) for f in portfolio.families)


def _control(family: str) -> ArmBuilder:
    def build(portfolio: Portfolio, controls: Portfolio) -> tuple[Family, ...]:
        try:
            return (controls.family(family),)
        except KeyError:
            raise InputError(controls.path, family, "no control family of that name",
                             f"define a family named {family!r}") from None

    return build


def _nothing(portfolio: Portfolio, controls: Portfolio) -> tuple[Family, ...]:
    return ()


ARM_REGISTRY = ArmRegistry()
for _arm in (
    Arm("real", _real, True, "the portfolio's families"),
    Arm("sham", _sham, True, "the portfolio's timing with generic review text"),
    Arm("always_verify", _control("always_verify"), True, "verify at every stop"),
    Arm("reconsider", _control("reconsider"), True, "a generic request to reconsider"),
    Arm("baseline", _nothing, False, "no policy"),
):
    ARM_REGISTRY.register(_arm)
# The paper's five arms, in the order reports list them.
ARMS = ARM_REGISTRY.names()


def _ablated(family: str) -> Arm:
    name = f"{ABLATION_PREFIX}{family}"

    def build(portfolio: Portfolio, controls: Portfolio) -> tuple[Family, ...]:
        return ablation_arm_families(name, portfolio.families)

    return Arm(name, build, True, f"the portfolio with {family} silenced")


# Leave-one-family-out arms, derived like the sham (fire_exp/policies/ablation.py).
ARM_REGISTRY.register_derived(ABLATION_PREFIX, _ablated)


def build_arm(arm: str, portfolio: Portfolio, controls: Portfolio) -> ArmPolicies:
    """The families of ``arm`` given the real portfolio and the control sources.

    Raises:
        InputError: an unknown arm, or a control family that is not defined.
    """
    spec = ARM_REGISTRY.get(arm)
    return ArmPolicies(arm, spec.build(portfolio, controls), spec.policy_arm,
                       portfolio.path, controls.path)


def load_controls(path: str | Path = "controls") -> Portfolio:
    """The control sources (always-verify, reconsider) and the sham's text pool."""
    return load_portfolio(path)
