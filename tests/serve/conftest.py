"""Fixtures of the served-model tests: the Docker engine (no container left over)."""

from tests.environments.conftest import docker_client

__all__ = ["docker_client"]
