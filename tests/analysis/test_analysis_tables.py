import numpy as np
import pandas as pd
import pytest

from fire_exp.analysis import CONTRAST_LEADING_COLUMNS, analyze, load_attempts
from fire_exp.analysis.simulate import simulate_panel
from fire_exp.records import Cause, FamilyFunnel, Funnel, append_records
from fire_exp.report.render import write_tables
from tests.analysis.analysis_helpers import make_record


@pytest.fixture
def panel():
    return simulate_panel(24, rng=np.random.default_rng(3), effects={"real": 0.2},
                          infra_rate=0.05)


def test_contrasts_columns_and_roles(panel, fast_plan):
    r = analyze(panel, fast_plan)
    c = r.contrasts
    assert list(c.columns[:8]) == CONTRAST_LEADING_COLUMNS
    assert len(c) == 5 * 3 and not c[CONTRAST_LEADING_COLUMNS].isna().any().any()
    prim = c[(c.contrast == "real - sham") & (c.cohort == "eligible")].iloc[0]
    assert prim.role == "primary" and np.isnan(prim.p_holm)
    sec = c[(c.role == "secondary") & (c.cohort == "eligible")]
    assert len(sec) == 4 and (sec.p_holm >= sec.p_value - 1e-15).all()
    assert ((c.p_value > 0) & (c.p_value <= 1)).all()
    assert (c.ci_low_pp <= c.estimate_pp + 1e-9).all() and (c.estimate_pp <= c.ci_high_pp
                                                             + 1e-9).all()
    assert {"t_ci_low_pp", "t_ci_high_pp", "p_mc_se", "n_nonzero", "min_attainable_p",
            "improved", "regressed", "tied"} <= set(c.columns)
    assert (c.improved + c.regressed + c.tied == c.n_tasks).all()


def test_estimates_match_direct_computation(panel, fast_plan):
    r = analyze(panel, fast_plan)
    sub = panel[panel.cohort == "eligible"]
    rate = sub.groupby(["task", "arm"]).passed.mean().unstack()
    expected = 100 * (rate["real"] - rate["sham"]).mean()
    got = r.contrasts.query("contrast == 'real - sham' and cohort == 'eligible'").estimate_pp
    assert float(got.iloc[0]) == pytest.approx(expected, abs=1e-9)
    pr = r.pass_rates.query("cohort == 'all' and arm == 'real'").iloc[0]
    assert pr.pass_rate_pct == pytest.approx(100 * panel[panel.arm == "real"].passed.mean())


def test_bit_identical_reruns(panel, fast_plan, tmp_path):
    write_tables(analyze(panel, fast_plan), tmp_path / "a")
    write_tables(analyze(panel.sample(frac=1, random_state=1), fast_plan), tmp_path / "b")
    for f in sorted((tmp_path / "a").glob("*.csv")):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name


def test_adding_an_arm_changes_no_other_number(panel, fast_plan):
    full = analyze(panel, fast_plan)
    fewer = analyze(panel[panel.arm != "reconsider"], fast_plan)
    keep = full.contrasts[~full.contrasts.contrast.str.contains("reconsider")]
    # Holm adjusts over the family present; everything else is identical.
    cols = [c for c in keep.columns if c != "p_holm"]
    pd.testing.assert_frame_equal(keep[cols].reset_index(drop=True),
                                  fewer.contrasts[cols].reset_index(drop=True))
    pr = full.pass_rates[full.pass_rates.arm != "reconsider"].reset_index(drop=True)
    pd.testing.assert_frame_equal(pr, fewer.pass_rates)
    assert any("reconsider" in n and "absent" in n for n in fewer.notes)


def test_sensitivity_excludes_infrastructure_failures(fast_plan):
    panel = simulate_panel(24, rng=np.random.default_rng(3), effects={"real": 0.2},
                           infra_rate=0.2)
    r = analyze(panel, fast_plan)
    assert not r.sensitivity.empty
    assert r.metadata["n_infrastructure_failures"] == int(panel.infrastructure_failure.sum())
    assert (r.errors.infrastructure_failures.sum()
            == r.metadata["n_infrastructure_failures"])
    # The sensitivity contrast is the paired estimate on the attempts without an
    # infrastructure failure, over the tasks that keep an attempt under both arms.
    kept = panel[~panel.infrastructure_failure.astype(bool)]
    rate = kept.groupby(["task", "arm"]).passed.mean().unstack()[["real", "sham"]].dropna()
    row = r.sensitivity.query("contrast == 'real - sham' and cohort == 'all'").iloc[0]
    assert int(row.n_tasks) == len(rate)
    assert float(row.estimate_pp) == pytest.approx(100 * (rate.real - rate.sham).mean(),
                                                   abs=1e-9)
    primary = r.contrasts.query("contrast == 'real - sham' and cohort == 'all'").iloc[0]
    assert float(row.estimate_pp) != pytest.approx(float(primary.estimate_pp), abs=1e-6)


def test_other_tables(panel, fast_plan):
    r = analyze(panel, fast_plan)
    assert set(r.pass_k.k) == {1, 2}
    assert (r.pass_k.pass_hat_k_pct <= r.pass_k.pass_at_k_pct + 1e-9).all()
    assert r.interaction.iloc[0].cohort == "eligible - silent"
    t = r.transitions.query("contrast == 'real - sham' and cohort == 'all'")
    assert t.n_tasks.sum() == 24 and len(t) == 9
    assert (r.cost.cost_per_success_usd > 0).all()
    assert r.metadata["numpy"] == np.__version__ and len(r.metadata["plan_hash"]) == 64


def test_funnel_from_records(tmp_path, fast_plan):
    path = tmp_path / "attempts.jsonl"
    recs = []
    for t in range(3):
        for arm in ("real", "sham"):
            fam = [FamilyFunnel(family="service", state=True, fired=arm == "real",
                                behavior=arm == "real", passed=arm == "real")]
            recs.append(make_record(f"t{t}", arm, 0, passed=arm == "real",
                                    funnel=Funnel(state=True, fired=arm == "real",
                                                  behavior=arm == "real" or None,
                                                  passed=arm == "real"),
                                    family_funnel=fam))
    recs.append(make_record("t9", "real", 0, passed=False, cause=Cause.PROVIDER_FAILED))
    append_records(path, recs)
    r = analyze(load_attempts(path), fast_plan)
    f = r.funnel.query("cohort == 'eligible'").drop(columns="cohort").set_index("arm")
    assert f.loc["real"].tolist() == [4, 3, 3, 3, 3, 3, 0.0]
    assert f.loc["sham"].tolist() == [3, 3, 0, 0, 0, 0, 0.0]
    ff = r.family_funnel.set_index("arm")
    assert ff.loc["real", "fired"] == 3 and ff.loc["sham", "passed"] == 0
    errors = r.errors.set_index("arm")
    assert errors.loc["real", "no_fair_attempt"] == 1
    assert errors.loc["real", "cause:provider_failed"] == 1


def test_degenerate_panel_gives_defined_results(fast_plan):
    f = pd.DataFrame({"task": ["a", "a", "b", "b"], "arm": ["real", "sham"] * 2,
                      "replicate": 0, "cohort": "eligible", "passed": [1, 1, 0, 0]})
    c = analyze(f, fast_plan).contrasts
    row = c.query("contrast == 'real - sham' and cohort == 'eligible'").iloc[0]
    assert row.p_value == 1.0 and row.p_method == "degenerate"
    assert row.ci_low_pp == row.ci_high_pp == 0.0 and "degenerate" in row.flag


def test_an_extractor_error_is_counted_and_noted_never_dropped(tmp_path, fast_plan):
    from fire_exp.analysis import analyze
    from fire_exp.records import FamilyFunnel, append_records
    from tests.analysis.analysis_helpers import make_record

    path = tmp_path / "attempts.jsonl"
    records = []
    for i in range(4):
        for arm in ("real", "sham", "always_verify", "reconsider", "baseline"):
            broken = i == 0 and arm == "real"
            records.append(make_record(
                f"t{i}", arm, passed=(i + len(arm)) % 2 == 0, families=["enumeration"],
                family_funnel=[FamilyFunnel(family="enumeration", state=None if broken else True,
                                            fired=arm != "baseline", behavior=None)],
                coding_errors={"enumeration": "ValueError: boom"} if broken else {}))
    append_records(path, records)
    result = analyze(path, fast_plan)
    assert any("1 scored attempt(s) have a family whose extractor raised" in n
               for n in result.notes)
    clean = tmp_path / "clean.jsonl"
    append_records(clean, [r.model_copy(update={"coding_errors": {}}) for r in records])
    assert not any("extractor raised" in n for n in analyze(clean, fast_plan).notes)
