"""Each family's contribution: real − (real without F) on the tasks where F is eligible.

For every leave-one-family-out arm ``real-minus-F`` in the attempts, the contrast compares the
real portfolio with the portfolio minus F, paired by task, on the tasks where F is eligible
(the tasks the family funnel codes F on, in any arm). It uses the machinery of the main
contrasts: per-task pass rates averaged over attempts, a paired percentile bootstrap over
tasks, the sign-flip test of the plan, and Holm across the families (an exploratory family
of contrasts, separate from the plan's secondaries). Every stream is a child of the plan's
seed keyed by ``ablation`` and the family, so adding a family changes no other number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from fire_exp.analysis.frame import LoadedAttempts
from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.policies.ablation import ablated_family, is_ablation_arm
from fire_exp.stats import (
    aggregate_tasks,
    child_rng,
    holm,
    improvement_counts,
    paired_bootstrap,
    sign_flip_test,
    task_matrix,
)

__all__ = ["ABLATION_COLUMNS", "ablation_contrasts", "family_eligible_tasks"]

ABLATION_COLUMNS = ["family", "contrast", "n_tasks", "estimate_pp", "ci_low_pp", "ci_high_pp",
                    "p_value", "p_method", "p_holm", "n_nonzero", "min_attainable_p",
                    "pass_real_pct", "pass_ablated_pct", "improved", "regressed", "tied",
                    "note"]


def family_eligible_tasks(loaded: LoadedAttempts) -> dict[str, set[str]]:
    """Family -> tasks where it is eligible, from the family funnel of the attempts."""
    fam = loaded.families
    if fam.empty:
        return {}
    return {str(f): set(g["task"].astype(str)) for f, g in fam.groupby("family")}


def _row(plan: AnalysisPlan, family: str, arm: str, reference: str,
         att: pd.DataFrame) -> dict[str, Any]:
    agg = aggregate_tasks(att)
    _, rate = task_matrix(agg, "pass_rate", [reference, arm])
    ok = ~np.isnan(rate).any(axis=1)
    d = rate[ok, 0] - rate[ok, 1]
    row: dict[str, Any] = {"family": family, "contrast": f"{reference} - {arm}",
                           "n_tasks": int(d.size), "note": ""}
    if d.size == 0:
        return row | {"note": "no F-eligible task has both arms"}
    boot = paired_bootstrap({"d": d}, n_resamples=plan.bootstrap.n_resamples,
                            confidence_level=plan.bootstrap.confidence_level,
                            rng=child_rng(plan.seed, "ablation", family, "bootstrap"))["d"]
    sf = sign_flip_test(d, n_resamples=plan.permutation.n_resamples,
                        max_enumeration=plan.permutation.max_enumeration,
                        method=plan.permutation.method,
                        rng=child_rng(plan.seed, "ablation", family, "signflip"))
    ic = improvement_counts(rate[ok, 0], rate[ok, 1])
    return row | {"estimate_pp": 100 * sf.statistic, "ci_low_pp": 100 * boot.ci_low,
                  "ci_high_pp": 100 * boot.ci_high, "p_value": sf.p_value,
                  "p_method": sf.method, "n_nonzero": sf.n_nonzero,
                  "min_attainable_p": sf.min_attainable_p,
                  "pass_real_pct": 100 * float(rate[ok, 0].mean()),
                  "pass_ablated_pct": 100 * float(rate[ok, 1].mean()),
                  "improved": ic.improved, "regressed": ic.regressed, "tied": ic.tied}


def ablation_contrasts(loaded: LoadedAttempts, plan: AnalysisPlan, *,
                       reference: str = "real",
                       eligible: Mapping[str, set[str]] | None = None) -> pd.DataFrame:
    """One row per leave-one-family-out arm: family F's contribution, real − without F.

    Args:
        loaded: the attempts (with the family funnel, which says where F is eligible).
        plan: resample counts, sign-flip method and root seed.
        reference: the full-portfolio arm.
        eligible: family -> tasks where it is eligible (default: from the family funnel).

    Returns:
        Columns ``ABLATION_COLUMNS``, families in name order; empty without ablation arms.
    """
    att = loaded.attempts
    arms = sorted(a for a in att["arm"].unique() if is_ablation_arm(str(a)))
    where = family_eligible_tasks(loaded) if eligible is None else eligible
    rows = []
    for arm in arms:
        family = ablated_family(arm)
        tasks = where.get(family, set())
        sub = att[att["arm"].isin([reference, arm]) & att["task"].isin(tasks)]
        if reference not in set(att["arm"].unique()):
            rows.append({"family": family, "contrast": f"{reference} - {arm}", "n_tasks": 0,
                         "note": f"no {reference!r} arm to compare with"})
        elif sub.empty:
            rows.append({"family": family, "contrast": f"{reference} - {arm}", "n_tasks": 0,
                         "note": "no task where the family is eligible"})
        else:
            rows.append(_row(plan, family, arm, reference, sub))
    frame = pd.DataFrame(rows, columns=ABLATION_COLUMNS)
    tested = frame["p_value"].notna()
    if tested.any():
        frame.loc[tested, "p_holm"] = holm(frame.loc[tested, "p_value"].to_numpy(float))
    return frame
