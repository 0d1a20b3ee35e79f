"""Fixtures of the runner tests (helpers and test doubles live in runner_helpers.py)."""

from tests.runner.runner_helpers import _doubles, script  # noqa: F401 - fixtures
