"""One rule for reading CI: empty, 0, false, no and off (any case, any spaces) are not CI;
anything else is, and then a test that lacks what it needs fails instead of skipping."""

from __future__ import annotations

import pytest

from tests.ci import in_ci, missing


@pytest.mark.parametrize("value", ["", "0", "false", "False", "FALSE", " no ", "off", "Off"])
def test_these_values_are_not_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert not in_ci()
    with pytest.raises(pytest.skip.Exception):
        missing("a thing")


@pytest.mark.parametrize("value", ["true", "1", "yes", "True", "github-actions"])
def test_anything_else_is_ci_and_a_missing_need_fails(monkeypatch: pytest.MonkeyPatch,
                                                      value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci()
    with pytest.raises(pytest.fail.Exception, match="CI must run this test, and a thing"):
        missing("a thing")


def test_no_ci_variable_is_not_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert not in_ci()
