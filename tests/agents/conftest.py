"""Fixtures of the agent tests (see agent_support.py); the Docker engine of the
environment tests, for the in-container CLI tests."""

from tests.agents.agent_support import fake_key, run_task
from tests.environments.conftest import docker_client

__all__ = ["docker_client", "fake_key", "run_task"]
