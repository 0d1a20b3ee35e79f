"""Fixtures of the agent tests (see agent_support.py)."""

from tests.agents.agent_support import fake_key, run_task

__all__ = ["fake_key", "run_task"]
