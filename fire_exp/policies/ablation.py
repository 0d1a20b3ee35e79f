"""Leave-one-family-out arms, derived from the real portfolio like the sham.

The arm ``real-minus-F`` runs the real portfolio with family F silenced: F stays eligible and
keeps tracking its state (so the arm sees the same events), but its rules never fire. Every
other family is the real one. The funnel is coded by the portfolio's extractors in every arm,
F's included. ``panel.ablation=true`` adds one such arm per family of the portfolio; naming
``real-minus-F`` in ``panel.arms`` adds just that one. The arm's families come from the same
hashed sources as ``real``, so the preregistration freezes it, and the schedule randomizes it
like every other arm.
"""

from __future__ import annotations

from collections.abc import Sequence

from fire_exp.errors import InputError
from fire_exp.policies.model import Coding, Event, Family, Rule, State, Step

__all__ = ["ABLATION_PREFIX", "SilencedFamily", "ablated_family", "ablation_arm_families",
           "ablation_arms", "is_ablation_arm"]

ABLATION_PREFIX = "real-minus-"


def is_ablation_arm(arm: str) -> bool:
    """Whether ``arm`` names a leave-one-family-out arm.

    >>> is_ablation_arm("real-minus-service_persistence"), is_ablation_arm("real")
    (True, False)
    """
    return arm.startswith(ABLATION_PREFIX) and len(arm) > len(ABLATION_PREFIX)


def ablated_family(arm: str) -> str:
    """The family an ablation arm leaves out: ``real-minus-F`` -> ``F``."""
    if not is_ablation_arm(arm):
        raise ValueError(f"{arm!r} is not an ablation arm ({ABLATION_PREFIX}FAMILY)")
    return arm[len(ABLATION_PREFIX):]


class SilencedFamily(Family):
    """A family whose rules never fire; eligibility, tracking and coding are the real one's."""

    def __init__(self, real: Family) -> None:
        self.real = real
        self.name = real.name
        self.description = f"{real.name}, silenced (leave-one-family-out arm)"

    def eligible(self, task_text: str) -> bool:
        return self.real.eligible(task_text)

    def track(self, event: Event, state: State) -> None:
        self.real.track(event, state)

    def rules(self) -> list[Rule]:
        return []

    def code(self, trajectory: Sequence[Step], task_text: str) -> Coding:
        return self.real.code(trajectory, task_text)


def ablation_arm_families(arm: str, families: Sequence[Family],
                          where: str = "panel.arms") -> tuple[Family, ...]:
    """The families of ``real-minus-F``: the real ones, with F silenced.

    Raises:
        InputError: F is not a family of the portfolio (the message lists them).
    """
    left_out = ablated_family(arm)
    names = [f.name for f in families]
    if left_out not in names:
        raise InputError(where, arm, f"the portfolio has no family {left_out!r}",
                         f"families: {', '.join(names)}")
    return tuple(SilencedFamily(f) if f.name == left_out else f for f in families)


def ablation_arms(arms: Sequence[str], families: Sequence[Family], ablation: bool,
                  ) -> tuple[str, ...]:
    """The panel's arms: as configured, plus ``real-minus-F`` for every family when
    ``ablation`` is set (in portfolio order, after the configured arms; no duplicates).

    >>> class F(Family):
    ...     def __init__(self, name): self.name = name
    >>> ablation_arms(["real", "sham"], [F("a"), F("b")], True)
    ('real', 'sham', 'real-minus-a', 'real-minus-b')
    """
    extra = [f"{ABLATION_PREFIX}{f.name}" for f in families] if ablation else []
    return tuple(dict.fromkeys([*arms, *extra]))
