"""Environments: one attempt's box, one contract (``base.Environment``), two backends
(local, docker) and the verifier written once on the contract (``Environment.run_verifier``)."""

from fire_exp.environments.base import (
    BoxPaths,
    Capability,
    Environment,
    EnvironmentFailure,
    ExecResult,
    SessionEnd,
    VerifierResult,
)
from fire_exp.environments.local import LocalEnvironment
from fire_exp.environments.reward import parse_reward, read_reward_dir

__all__ = [
    "BoxPaths",
    "Capability",
    "Environment",
    "EnvironmentFailure",
    "ExecResult",
    "LocalEnvironment",
    "SessionEnd",
    "VerifierResult",
    "parse_reward",
    "read_reward_dir",
]
