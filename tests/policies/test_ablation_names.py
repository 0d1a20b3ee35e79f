"""Which arm names are leave-one-family-out arms: ``real-minus-`` and a family name."""

from __future__ import annotations

import pytest

from fire_exp.policies.ablation import ablated_family, is_ablation_arm


@pytest.mark.parametrize(("arm", "family"), [
    ("real-minus-enumeration", "enumeration"), ("real-minus-x", "x"),
    ("real-minus-real-minus-x", "real-minus-x"),
])
def test_an_ablation_arm_names_its_family(arm: str, family: str) -> None:
    assert is_ablation_arm(arm) and ablated_family(arm) == family


@pytest.mark.parametrize("arm", ["real", "real-minus-", "always_verify_and_more", "baseline",
                                 "sham-minus-enumeration", "Real-minus-enumeration", ""])
def test_other_names_are_not_ablation_arms(arm: str) -> None:
    assert not is_ablation_arm(arm)
    with pytest.raises(ValueError, match=f"^{arm!r} is not an ablation arm "
                                         r"\(real-minus-FAMILY\)$"):
        ablated_family(arm)
