import pytest

from fire_exp.analysis import load_plan
from fire_exp.errors import InputError
from tests.analysis.analysis_helpers import REPO


def test_default_and_demo_plans_load(plan):
    assert plan.contrasts[0] == "real - sham" and plan.primary.cohort == "eligible"
    assert plan.bootstrap.n_resamples == 10_000 and plan.permutation.n_resamples == 100_000
    assert plan.cohorts == ["eligible", "silent", "all"]
    assert load_plan(REPO / "analysis" / "demo.yaml").contrasts == plan.contrasts
    assert len(plan.plan_hash()) == 64


def test_errors_name_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nseed: 1\nprimary: {contrast: real-sham}\n")
    with pytest.raises(InputError) as exc:
        load_plan(bad)
    assert exc.value.path == str(bad) and exc.value.field == "primary.contrast"
    bad.write_text("name: x\nseed: 1\nprimary: {contrast: real - sham}\nbootstrap: {n: 3}\n")
    with pytest.raises(InputError, match="bootstrap.n"):
        load_plan(bad)
    with pytest.raises(InputError, match="not found"):
        load_plan(tmp_path / "missing.yaml")


def test_a_plan_is_checked_against_the_panel(plan):
    from fire_exp.analysis.plan import check_plan_for_panel
    from fire_exp.policies.arms import ARMS

    check_plan_for_panel(plan, "p.yaml", ["real", "baseline"], ARMS)  # absent arms: skipped
    with pytest.raises(InputError, match=r"arm\(s\) \['extra'\] are not in the plan"):
        check_plan_for_panel(plan, "p.yaml", ["real", "extra"], ARMS)
    typo = plan.model_copy(update={"secondary": ["real - baselin"]})
    with pytest.raises(InputError, match="did you mean 'baseline'"):
        check_plan_for_panel(typo, "p.yaml", ["real"], ARMS)
    extra = plan.model_copy(update={"arms": ["extra"]})
    check_plan_for_panel(extra, "p.yaml", ["real", "extra"], ARMS)  # a panel's own arm


def test_did_you_mean_ignores_case_and_lists_known_names():
    from fire_exp.analysis.plan import did_you_mean

    assert "did you mean 'sham'" in did_you_mean("Sham", ["real", "sham"])
    assert did_you_mean("zzz", ["real", "sham"]) == "known: real, sham"
