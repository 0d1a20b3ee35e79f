"""Policies: the policy model, the runtime, portfolios, arms, freezing and routing."""

from fire_exp.policies.arms import (
    ARM_REGISTRY,
    ARMS,
    Arm,
    ArmPolicies,
    ShamFamily,
    build_arm,
    generic_text,
)
from fire_exp.policies.loader import Portfolio, load_portfolio, resolve_portfolio, sha256_file
from fire_exp.policies.model import (
    ALLOW,
    EVENT_NAMES,
    Coding,
    Decision,
    Event,
    Family,
    Rule,
    Step,
    allow,
    deny,
    instruct,
    rule,
)
from fire_exp.policies.runtime import LogEntry, PolicyRuntime
from fire_exp.policies.status import succeeded
from fire_exp.policies.trajectory import Walk, replay

__all__ = [
    "ALLOW",
    "ARMS",
    "ARM_REGISTRY",
    "Arm",
    "EVENT_NAMES",
    "ArmPolicies",
    "Coding",
    "Decision",
    "Event",
    "Family",
    "LogEntry",
    "PolicyRuntime",
    "Portfolio",
    "Rule",
    "ShamFamily",
    "Step",
    "Walk",
    "allow",
    "build_arm",
    "deny",
    "generic_text",
    "instruct",
    "load_portfolio",
    "replay",
    "resolve_portfolio",
    "rule",
    "sha256_file",
    "succeeded",
]
