"""Environments: one attempt's box, with one lifecycle and two backends (local, docker)."""

from fire_exp.environments.base import (
    BoxPaths,
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
    "Environment",
    "EnvironmentFailure",
    "ExecResult",
    "LocalEnvironment",
    "SessionEnd",
    "VerifierResult",
    "parse_reward",
    "read_reward_dir",
]
