"""The validity guard: an attempt is scored under its arm only if the arm really ran.

As in the FIRE runner: a policy-arm attempt whose policy runtime saw no events (the
agent's hooks never reached it) or whose policies failed to load did not test the policy,
and an attempt of a non-policy arm (the baseline) that carries any policy configuration is
not a baseline. Whether an arm is a policy arm is the arms registry's answer. A policy
attempt whose evidence says the treatment may not have been delivered as recorded — a
coding-agent CLI's transcript and the host's hook calls disagree, or the hook channel
reported tampering (``fire_exp/agents/coding_agents/evidence.py``) — is invalid too, with
every reason named. Such attempts are kept as records with ``valid=False`` and the reason;
the analysis leaves them out of scoring and counts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fire_exp.policies.model import Family

NO_EVENTS = "policy runtime saw no events"
NO_POLICIES = "policies failed to load: the arm has no policy families"
LOAD_FAILED = "policies failed to load"
BASELINE_WITH_POLICY = "baseline attempt carries policy configuration"


@dataclass(frozen=True)
class Validity:
    """The guard's verdict on one attempt."""

    valid: bool = True
    reason: str | None = None


def check_attempt(policy_arm: bool, families: Sequence[Family], events: int,
                  agent_ran: bool, tamper: Sequence[str] = ()) -> Validity:
    """Judge one attempt.

    Args:
        policy_arm: whether the attempt's arm runs policies.
        families: the arm's families the attempt ran with.
        events: policy events the runtime saw during the agent phase.
        agent_ran: whether the agent phase started (an environment that never came up
            leaves no events to judge; the replacement rule handles it).
        tamper: what the agent's evidence says against the record (``AgentOutcome.tamper``),
            each reason named; all of them follow the guard's own reason, joined by "; ".
    """
    reasons = []
    if not policy_arm:
        if families:
            names = ", ".join(f.name for f in families)
            reasons.append(f"{BASELINE_WITH_POLICY} ({names})")
    elif not families:
        reasons.append(NO_POLICIES)
    elif agent_ran and events == 0:
        reasons.append(NO_EVENTS)
    reasons += [t for t in tamper if t not in reasons]
    return Validity(False, "; ".join(reasons)) if reasons else Validity()
