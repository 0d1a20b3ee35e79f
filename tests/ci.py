"""The one rule for reading ``CI``, and what a test does when what it needs is missing.

``CI`` set to anything but empty, ``0``, ``false``, ``no`` or ``off`` (any case) means the
tests run in CI. There nothing the README says must run may skip: a missing Docker engine,
browser, model server, LaTeX or mount right fails the test. On a developer's machine the
test skips, saying what to install.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

_NOT_CI = {"", "0", "false", "no", "off"}


def in_ci() -> bool:
    """Whether the tests run in CI (see the module docstring for the rule)."""
    return os.environ.get("CI", "").strip().lower() not in _NOT_CI


def missing(what: str) -> NoReturn:
    """Skip the test for want of ``what`` on a developer's machine; fail it in CI."""
    if in_ci():
        pytest.fail(f"CI must run this test, and {what}", pytrace=False)
    pytest.skip(what)
