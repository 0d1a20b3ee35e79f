"""The validity guard's verdict on every kind of attempt, exactly: an arm that did not
really run is never scored (a policy arm without families or without events, a baseline
carrying policies), and the reason names what was wrong."""

from __future__ import annotations

import pytest

from fire_exp.policies.loader import load_portfolio
from fire_exp.runner.validity import (
    BASELINE_WITH_POLICY,
    NO_EVENTS,
    NO_POLICIES,
    Validity,
    check_attempt,
)

FAMILIES = load_portfolio("fire-core").families[:2]
NAMES = ", ".join(f.name for f in FAMILIES)


@pytest.mark.parametrize(("policy_arm", "families", "events", "agent_ran", "verdict"), [
    (True, FAMILIES, 5, True, Validity(True, None)),
    (True, FAMILIES, 0, True, Validity(False, NO_EVENTS)),
    (True, FAMILIES, 0, False, Validity(True, None)),   # never started: replacement's case
    (True, (), 5, True, Validity(False, NO_POLICIES)),
    (True, (), 0, False, Validity(False, NO_POLICIES)),
    (False, (), 0, True, Validity(True, None)),
    (False, (), 3, True, Validity(True, None)),
    (False, FAMILIES, 0, True, Validity(False, f"{BASELINE_WITH_POLICY} ({NAMES})")),
])
def test_the_guard_judges_each_attempt(policy_arm: bool, families: tuple, events: int,
                                       agent_ran: bool, verdict: Validity) -> None:
    assert check_attempt(policy_arm, families, events, agent_ran) == verdict
