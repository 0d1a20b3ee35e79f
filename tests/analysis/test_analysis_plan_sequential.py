"""The plan's ``sequential:`` section: read, checked where it enters, hashed only when set."""

from __future__ import annotations

import pytest

from fire_exp.analysis import load_plan
from fire_exp.errors import InputError
from tests.analysis.analysis_helpers import REPO

BASE = "name: x\nseed: 1\nprimary: {contrast: real - sham}\n"


def test_the_bundled_sequential_plan_loads_with_its_rule() -> None:
    plan = load_plan(REPO / "analysis" / "sequential.yaml")
    assert plan.sequential is not None
    assert (plan.sequential.method, plan.sequential.bet_on, plan.sequential.alpha) == \
        ("agrapa", "sign", 0.05)
    assert plan.sequential.futility is not None and plan.sequential.futility.min_tasks == 10
    assert plan.contrasts == load_plan(REPO / "analysis" / "default.yaml").contrasts


def test_a_plan_without_the_section_hashes_as_before(tmp_path) -> None:
    plan = load_plan(REPO / "analysis" / "default.yaml")
    assert plan.sequential is None
    # default.yaml's hash as published before the section existed (a frozen run's tables)
    assert plan.plan_hash() == "5edd00aba4280ea5042492010df09f58887fad923ef1340e22789df53d924a51"
    with_rule = plan.model_copy(update={"sequential": load_plan(
        REPO / "analysis" / "sequential.yaml").sequential})
    assert with_rule.plan_hash() != plan.plan_hash()


@pytest.mark.parametrize("section, field", [
    ("sequential: {alpha: 0}", "sequential.alpha"),
    ("sequential: {alpha: 0.9}", "sequential.alpha"),
    ("sequential: {method: kelly}", "sequential.method"),
    ("sequential: {bet_on: rank}", "sequential.bet_on"),
    ("sequential: {max_bet: 1.0}", "sequential.max_bet"),
    ("sequential: {grid_size: 0}", "sequential.grid_size"),
    ("sequential: {futility: {e_below: 2}}", "sequential.futility.e_below"),
    ("sequential: {futility: {e_below: 0.1, min_tasks: 0}}", "sequential.futility.min_tasks"),
    ("sequential: {alpah: 0.05}", "sequential.alpah"),
])
def test_a_bad_value_is_refused_naming_file_field_and_example(tmp_path, section, field) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE + section + "\n")
    with pytest.raises(InputError) as exc:
        load_plan(bad)
    assert (exc.value.path, exc.value.field) == (str(bad), field)
    assert "analysis/sequential.yaml" in exc.value.fix


def test_a_sequential_plan_needs_the_primary_arms_in_the_panel() -> None:
    from fire_exp.analysis.plan_sequential import check_sequential_for_panel

    plan = load_plan(REPO / "analysis" / "sequential.yaml")
    check_sequential_for_panel(plan.sequential, plan.primary.contrast, "p.yaml",
                               ["real", "sham"])
    check_sequential_for_panel(None, plan.primary.contrast, "p.yaml", ["real"])
    with pytest.raises(InputError) as exc:
        check_sequential_for_panel(plan.sequential, plan.primary.contrast, "p.yaml",
                                   ["real", "baseline"])
    assert exc.value.field == "primary.contrast" and "sham" in exc.value.problem
