"""Paper tables of contrasts (FIRE Table 3), funnels (Table 4) and near-misses.

Each builder takes the ``AnalysisResult`` and returns a ``ReportTable`` whose ``data``
are the analysis' own rows; nothing here computes a number.
"""

from __future__ import annotations

import pandas as pd

from fire_exp.analysis import AnalysisResult, parse_contrast
from fire_exp.report.figures import ARM_LABELS
from fire_exp.report.render import ReportTable, fmt_ci, fmt_int, fmt_num, fmt_p
from fire_exp.report.rounding import rate_of

__all__ = ["arm_label", "contrast_label", "contrasts_table", "family_funnel_table",
           "funnel_table", "near_miss_table"]


def arm_label(arm: str) -> str:
    """The arm as the paper names it."""
    return ARM_LABELS.get(arm, arm)


def contrast_label(name: str) -> str:
    """``real - sham`` as ``real − sham`` (a true minus sign)."""
    a, b = parse_contrast(name)
    return f"{a} − {b}"


def _method_note(frame: pd.DataFrame) -> str:
    parts = []
    for cohort, g in frame.groupby("cohort", sort=False):
        parts.append(f"{cohort}: {', '.join(sorted(set(g['p_method'])))}")
    return "; ".join(parts)


def contrasts_table(result: AnalysisResult) -> ReportTable:
    """FIRE Table 3: each contrast of the plan per cohort, Δ in points, CI and p."""
    c, plan = result.contrasts, result.plan
    cohorts = [k for k in plan.cohorts if k in set(c["cohort"])]
    header = ["contrast"]
    for cohort in cohorts:
        n = int(c.loc[c["cohort"] == cohort, "n_tasks"].max())
        header += [f"{cohort} ({n}) Δ", "95 % CI", "p"]
    rows, keep = [], []
    for name in plan.contrasts:
        cells = [contrast_label(name) + ("†" if name == plan.primary.contrast else "")]
        for cohort in cohorts:
            hit = c[(c["contrast"] == name) & (c["cohort"] == cohort)]
            if hit.empty:
                cells += ["–", "–", "–"]
                continue
            r = hit.iloc[0]
            keep.append(hit.index[0])
            p = fmt_p(r["p_value"])
            if r["role"] == "secondary" and pd.notna(r["p_holm"]):
                p += f" ({fmt_p(r['p_holm'])})"
            cells += [fmt_num(r["estimate_pp"]), fmt_ci(r["ci_low_pp"], r["ci_high_pp"]), p]
        if len(cells) > 1 and any(x != "–" for x in cells[1:]):
            rows.append(tuple(cells))
    data = c.loc[sorted(keep)]  # the analysis' own order
    notes = [f"Δ: mean paired difference of per-task pass rates, points; 95 % percentile "
             f"interval from {plan.bootstrap.n_resamples:,} task-level bootstrap resamples.",
             f"p: two-sided paired sign-flip test over tasks ({_method_note(data)}).",
             f"† primary contrast (on {plan.primary.cohort})"
             + ("; in parentheses: Holm-adjusted across the secondary contrasts within a "
                "cohort." if plan.multiplicity.method == "holm" else
                "; no multiplicity adjustment (plan: none).")]
    if (data["n_tasks"] < 30).any():
        notes.append("Fewer than 30 tasks: percentile intervals under-cover; paired t "
                     "intervals are in contrasts.csv (t_ci_low_pp, t_ci_high_pp).")
    paper = all(arm in ARM_LABELS for name in plan.contrasts for arm in parse_contrast(name))
    title = "Contrasts: real minus each comparator (FIRE Table 3)" if paper else \
        "Contrasts of the analysis plan (as FIRE Table 3)"
    return ReportTable("contrasts", title, tuple(header), tuple(rows),
                       data.reset_index(drop=True), notes=tuple(notes))


def _funnel_cells(r: pd.Series) -> tuple[str, ...]:
    return (fmt_int(r["attempts"]), fmt_int(r["state"]), fmt_int(r["fired"]),
            f"{fmt_int(r['behavior'])} / {fmt_int(r['coded'])}", fmt_int(r["passed"]))


_FUNNEL_HEADER = ("attempts", "risky state", "fired", "behavior / coded", "verifier pass")


def funnel_table(result: AnalysisResult) -> ReportTable:
    """FIRE Table 4: the funnel per arm on the main cohort (attempt counts)."""
    cohort = result.main_cohort
    f = result.funnel
    f = f[f["cohort"] == cohort].set_index("arm")
    arms = [a for a in result.arms if a in f.index]
    rows = tuple((arm_label(a), *_funnel_cells(f.loc[a])) for a in arms)
    data = f.loc[arms].reset_index()
    return ReportTable(
        "funnel", f"Funnel per arm, {cohort} tasks (FIRE Table 4)", ("arm", *_FUNNEL_HEADER),
        rows, data, notes=(
            "Attempts with the risky state, with the intervention fired, with the registered "
            "behavior (of attempts where it could be coded) and with a verifier pass.",
            "State and behavior come from the same deterministic extractors in every arm."))


def family_funnel_table(result: AnalysisResult) -> ReportTable:
    """The funnel per policy family and arm (attempts where the family is eligible)."""
    f = result.family_funnel
    rows, keep, rules = [], [], []
    if not f.empty:
        for family in sorted(set(f["family"])):
            g = f[f["family"] == family].set_index("arm")
            for a in [x for x in result.arms if x in g.index]:
                rows.append((family.replace("_", " "), arm_label(a), *_funnel_cells(g.loc[a])))
                keep.append(f.index[(f["family"] == family) & (f["arm"] == a)][0])
            rules.append(len(rows) - 1)
    return ReportTable("funnel_family", "Funnel per policy family and arm",
                       ("family", "arm", *_FUNNEL_HEADER), tuple(rows),
                       f.loc[keep].reset_index(drop=True), align="llrrrrr",
                       rules_after=tuple(rules),
                       notes=("Attempts on tasks where the family is eligible, all cohorts.",))


def _block_ends(labels: list[str]) -> tuple[int, ...]:
    """Row indices where a run of equal labels ends (a rule goes after each)."""
    return tuple(i for i, label in enumerate(labels)
                 if i + 1 == len(labels) or labels[i + 1] != label)


def near_miss_table(result: AnalysisResult) -> ReportTable:
    """Seed 000's near-miss rate: passes in the risky state without the registered behavior.

    Per arm on the main cohort, then per family and arm (the analysis' ``near_miss``).
    """
    data = result.near_miss
    records = data.to_dict("records")
    rows = tuple((str(r["family"]).replace("_", " "), arm_label(str(r["arm"])),
                  fmt_int(r["passed_in_state"]), fmt_int(r["near_miss"]), fmt_int(r["uncoded"]),
                  rate_of(int(r["near_miss"]), int(r["passed_in_state"])))
                 for r in records)
    return ReportTable(
        "near_miss", "Near-misses: passes in the risky state without the registered behavior",
        ("family", "arm", "passes in risky state", "without behavior", "uncoded",
         "near-miss %"), rows, data, align="llrrrr",
        rules_after=_block_ends([str(r["family"]) for r in records]),
        notes=("Near-miss % = passes in the risky state without the registered behavior / "
               "passes in the risky state (seed 000), with its counts where fewer than 20 "
               "passed in it; '–' where none did.",))
