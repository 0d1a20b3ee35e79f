"""Which arm a panel's arm name is, and the policies it runs: a declared arm's own spec, a
registered preset, or a refusal naming the field; the policies built from the arm's own
portfolio and controls when it names them, else from the panel's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fire_exp.arms import ArmSpec, preset
from fire_exp.arms.build import arm_policies, arm_spec
from fire_exp.errors import InputError
from fire_exp.paths import PORTFOLIOS_DIR
from fire_exp.policies.arms import ShamFamily
from fire_exp.policies.loader import load_portfolio

PORTFOLIO = load_portfolio("fire-core")
CONTROLS = load_portfolio("controls")
KNOWN = "real, sham, always_verify, reconsider, baseline"


def test_a_declared_name_is_its_spec_and_a_registered_one_its_preset() -> None:
    mine = ArmSpec("brief", instruction="Be brief.")
    assert arm_spec("brief", {"brief": mine}) is mine
    assert arm_spec("sham", {"brief": mine}) == preset("sham")
    assert arm_spec("real-minus-enumeration", {}) == preset("real-minus-enumeration")


def test_a_declared_arm_may_not_take_a_registered_name() -> None:
    with pytest.raises(InputError) as err:
        arm_spec("real", {"real": ArmSpec("real")})
    assert str(err.value) == ("configs/panel: declare.real: a registered arm's name (give the "
                              "declared arm a name of its own)")


def test_an_unknown_name_is_refused_naming_both_kinds() -> None:
    with pytest.raises(InputError) as err:
        arm_spec("brif", {"brief": ArmSpec("brief")})
    assert str(err.value) == (
        "configs/panel: arms: unknown arm 'brif' (did you mean 'brief'? (known: "
        f"{', '.join(sorted(['brief', *KNOWN.split(', ')]))}); declare it under panel.declare, "
        "or name a registered arm (real-minus-FAMILY too))")


def test_a_preset_runs_its_registered_policies_from_the_panels_folders() -> None:
    built = arm_policies(preset("sham"), PORTFOLIO, CONTROLS)
    assert (built.arm, built.policy_arm, built.portfolio, built.controls) == (
        "sham", True, PORTFOLIO.path, CONTROLS.path)
    assert [f.real for f in built.families] == list(PORTFOLIO.families)  # type: ignore[attr-defined]
    assert all(isinstance(f, ShamFamily) for f in built.families)


def test_a_declared_arm_runs_the_policies_it_names_under_its_own_name() -> None:
    built = arm_policies(ArmSpec("verify", policies="always_verify"), PORTFOLIO, CONTROLS)
    assert (built.arm, [f.name for f in built.families], built.policy_arm) == (
        "verify", ["always_verify"], True)
    none = arm_policies(ArmSpec("plain"), PORTFOLIO, CONTROLS)
    assert (none.arm, none.families, none.policy_arm) == ("plain", (), False)


def test_an_arm_naming_its_own_folders_runs_their_policies(tmp_path: Path) -> None:
    portfolio, controls = tmp_path / "core", tmp_path / "controls"
    shutil.copytree(PORTFOLIOS_DIR / "fire-core", portfolio)
    for name in ("enumeration.py", "latex_log.py"):
        (portfolio / name).unlink()
    shutil.copytree(PORTFOLIOS_DIR / "controls", controls)
    own = arm_policies(ArmSpec("mine", policies="real", portfolio=str(portfolio)), PORTFOLIO,
                       CONTROLS)
    assert own.portfolio == portfolio and own.controls == CONTROLS.path
    assert {f.name for f in own.families} == {f.name for f in PORTFOLIO.families} - {
        "enumeration", "latex_final_log"}
    (controls / "reconsider.py").unlink()
    with pytest.raises(InputError) as err:
        arm_policies(ArmSpec("mine", policies="reconsider", controls=str(controls)), PORTFOLIO,
                     CONTROLS)
    assert (err.value.path, err.value.field) == ("configs/panel", "declare.mine.policies")
    assert err.value.problem == "no control family of that name"
    assert err.value.fix == "define a family named 'reconsider'"
    verify = arm_policies(ArmSpec("v", policies="always_verify", controls=str(controls)),
                          PORTFOLIO, CONTROLS)
    assert verify.controls == controls and verify.portfolio == PORTFOLIO.path
    preset_own = arm_policies(ArmSpec("real", policies="real", portfolio=str(portfolio),
                                      declared=False), PORTFOLIO, CONTROLS)
    assert preset_own.portfolio == portfolio and len(preset_own.families) == len(own.families)


def test_policies_naming_no_registered_arm_are_refused_at_the_field() -> None:
    with pytest.raises(InputError) as err:
        arm_policies(ArmSpec("x", policies="shamm"), PORTFOLIO, CONTROLS)
    assert str(err.value) == (f"configs/panel: declare.x.policies: unknown arm (use some of "
                              f"{KNOWN}, real-minus-NAME)")
