"""The replacement rule's block, refused with the exact line a user reads, and the seeds of
replacements: frozen numbers, since a replacement's seed is part of the preregistered
stream (a change would silently change every replacement attempt of a resumed run)."""

from __future__ import annotations

from typing import Any

import pytest

from fire_exp.errors import InputError
from fire_exp.records import Cause
from fire_exp.runner.replacement import ReplacementRule, replacement_seed
from fire_exp.runner.schedule import ScheduledAttempt

CAUSES = "use some of ['environment_failed', 'harness_failed', 'provider_failed']"


@pytest.mark.parametrize(("block", "message"), [
    ({"max_replacements": 2, "couses": []},
     "configs/panel: replacement.couses: unknown key (use max_replacements and causes)"),
    ({"max_replacements": -1},
     "configs/panel: replacement.max_replacements: expected a whole number >= 0, got -1"),
    ({"max_replacements": True, "causes": ["harness_failed"]},
     "configs/panel: replacement.max_replacements: expected a whole number >= 0, got True"),
    ({"max_replacements": 1.5, "causes": ["harness_failed"]},
     "configs/panel: replacement.max_replacements: expected a whole number >= 0, got 1.5"),
    ({"max_replacements": 1, "causes": ["harness_fail"]},
     f"configs/panel: replacement.causes: unknown cause 'harness_fail' ({CAUSES})"),
    ({"max_replacements": 1, "causes": ["agent_timeout"]},
     "configs/panel: replacement.causes: 'agent_timeout' leaves a fair model attempt and is "
     f"never replaced ({CAUSES})"),
    ({"max_replacements": 2, "causes": []},
     "configs/panel: replacement.causes: empty while max_replacements > 0 (name the causes "
     "that are replaced)"),
    ({"max_replacements": 2},
     "configs/panel: replacement.causes: empty while max_replacements > 0 (name the causes "
     "that are replaced)"),
    ({"max_replacements": 11, "causes": ["harness_failed"]},
     "configs/panel: replacement.max_replacements: 11 is above the ceiling 10 (set "
     "panel.replacement.max_replacements to 10 or less, or set ceilings=false to lift the "
     "ceiling on purpose)"),
    ({"max_replacements": 1, "causes": "harness_failed"},
     "configs/panel: replacement.causes: expected a list of causes, got 'harness_failed' "
     "(e.g. panel.replacement.causes=[CAUSE,...])"),
])
def test_a_bad_block_is_refused_with_one_exact_line(block: dict[str, Any],
                                                    message: str) -> None:
    with pytest.raises(InputError) as err:
        ReplacementRule.from_config(block)
    assert str(err.value) == message
    with pytest.raises(InputError) as named:
        ReplacementRule.from_config(block, where="configs/panel/mine.yaml")
    assert str(named.value).startswith("configs/panel/mine.yaml: ")


@pytest.mark.parametrize(("block", "rule"), [
    ({}, ReplacementRule(0, frozenset())),
    ({"max_replacements": 0}, ReplacementRule(0, frozenset())),
    ({"max_replacements": 0, "causes": ["provider_failed"]},
     ReplacementRule(0, frozenset({Cause.PROVIDER_FAILED}))),
    ({"max_replacements": 1, "causes": ["environment_failed", "harness_failed"]},
     ReplacementRule(1, frozenset({Cause.ENVIRONMENT_FAILED, Cause.HARNESS_FAILED}))),
    ({"max_replacements": 0, "causes": None}, ReplacementRule(0, frozenset())),
])
def test_a_good_block_is_the_rule_it_says(block: dict[str, Any], rule: ReplacementRule) -> None:
    assert ReplacementRule.from_config(block) == rule


def test_the_ceiling_is_ten_and_ceilings_false_lifts_it() -> None:
    causes = ["harness_failed"]
    assert ReplacementRule.from_config({"max_replacements": 10, "causes": causes}) == \
        ReplacementRule(10, frozenset({Cause.HARNESS_FAILED}))
    assert ReplacementRule.from_config({"max_replacements": 50, "causes": causes},
                                       ceilings=False).max_replacements == 50


def test_replacement_seeds_are_frozen_numbers() -> None:
    item = ScheduledAttempt(0, "t", "eligible", "real", 0, 0, 123)
    assert [replacement_seed(7, item, n) for n in range(3)] == [
        123, 223399120367963283, 5247988702894454650]
    assert replacement_seed(8, item, 1) == 737237291322474210
    assert all(0 <= replacement_seed(s, item, 1) < 2 ** 63 for s in range(50))
