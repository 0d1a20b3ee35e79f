"""Paper tables from the analysis: contrasts (FIRE Table 3), funnels (Table 4), near-miss.

Each builder takes the ``ReportInputs`` (plan, analysis result and loaded attempts) and
returns a ``ReportTable`` whose ``data`` are the analysis' own rows, so the report never
recomputes what ``fire-exp analyze`` already computed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fire_exp.analysis import AnalysisPlan, AnalysisResult, LoadedAttempts, parse_contrast
from fire_exp.report.figures import ARM_LABELS, arms_in_order
from fire_exp.report.render import ReportTable, fmt_ci, fmt_int, fmt_num, fmt_p

__all__ = ["ReportInputs", "arm_label", "contrast_label", "contrasts_table",
           "family_funnel_table", "funnel_table", "near_miss_table"]


@dataclass(frozen=True)
class ReportInputs:
    """What every table is made from: the plan, the analysis and the scored attempts."""

    plan: AnalysisPlan
    result: AnalysisResult
    loaded: LoadedAttempts

    @property
    def arms(self) -> list[str]:
        """Arms present in the attempts, in the paper's order."""
        return arms_in_order(list(self.loaded.attempts["arm"].unique()))

    @property
    def reference(self) -> str:
        """The arm others are compared with: ``baseline``, else the primary comparator."""
        if "baseline" in self.arms:
            return "baseline"
        comparator = parse_contrast(self.plan.primary.contrast)[1]
        return comparator if comparator in self.arms else self.arms[-1]

    @property
    def main_cohort(self) -> str:
        """The primary contrast's cohort if the attempts have it, else ``all``."""
        cohorts = set(self.loaded.attempts["cohort"])
        return self.plan.primary.cohort if self.plan.primary.cohort in cohorts else "all"

    def cohort_attempts(self, cohort: str) -> pd.DataFrame:
        """Scored attempts of one cohort (``all``: every attempt)."""
        att = self.loaded.attempts
        return att if cohort == "all" else att[att["cohort"] == cohort]


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


def contrasts_table(inp: ReportInputs) -> ReportTable:
    """FIRE Table 3: each contrast of the plan per cohort, Δ in points, CI and p."""
    c = inp.result.contrasts
    cohorts = [k for k in inp.plan.cohorts if k in set(c["cohort"])]
    header = ["contrast"]
    for cohort in cohorts:
        n = int(c.loc[c["cohort"] == cohort, "n_tasks"].max())
        header += [f"{cohort} ({n}) Δ", "95 % CI", "p"]
    rows, keep = [], []
    for name in inp.plan.contrasts:
        cells = [contrast_label(name) + ("†" if name == inp.plan.primary.contrast else "")]
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
             f"interval from {inp.plan.bootstrap.n_resamples:,} task-level bootstrap resamples.",
             f"p: two-sided paired sign-flip test over tasks ({_method_note(data)}).",
             f"† primary contrast (on {inp.plan.primary.cohort})"
             + ("; in parentheses: Holm-adjusted across the secondary contrasts within a "
                "cohort." if inp.plan.multiplicity.method == "holm" else
                "; no multiplicity adjustment (plan: none).")]
    if (data["n_tasks"] < 30).any():
        notes.append("Fewer than 30 tasks: percentile intervals under-cover; paired t "
                     "intervals are in contrasts.csv (t_ci_low_pp, t_ci_high_pp).")
    return ReportTable("contrasts", "Contrasts: real minus each comparator (FIRE Table 3)",
                       tuple(header), tuple(rows), data.reset_index(drop=True),
                       notes=tuple(notes))


def _funnel_cells(r: pd.Series) -> tuple[str, ...]:
    return (fmt_int(r["attempts"]), fmt_int(r["state"]), fmt_int(r["fired"]),
            f"{fmt_int(r['behavior'])} / {fmt_int(r['coded'])}", fmt_int(r["passed"]))


_FUNNEL_HEADER = ("attempts", "risky state", "fired", "behavior / coded", "verifier pass")


def funnel_table(inp: ReportInputs) -> ReportTable:
    """FIRE Table 4: the funnel per arm on the main cohort (attempt counts)."""
    cohort = inp.main_cohort
    f = inp.result.funnel
    f = f[f["cohort"] == cohort].set_index("arm")
    arms = [a for a in inp.arms if a in f.index]
    rows = tuple((arm_label(a), *_funnel_cells(f.loc[a])) for a in arms)
    data = f.loc[arms].reset_index()
    return ReportTable(
        "funnel", f"Funnel per arm, {cohort} tasks (FIRE Table 4)", ("arm", *_FUNNEL_HEADER),
        rows, data, notes=(
            "Attempts with the risky state, with the intervention fired, with the registered "
            "behavior (of attempts where it could be coded) and with a verifier pass.",
            "State and behavior come from the same deterministic extractors in every arm."))


def family_funnel_table(inp: ReportInputs) -> ReportTable:
    """The funnel per policy family and arm (attempts where the family is eligible)."""
    f = inp.result.family_funnel
    rows, keep, rules = [], [], []
    if not f.empty:
        for family in sorted(set(f["family"])):
            g = f[f["family"] == family].set_index("arm")
            for a in [x for x in inp.arms if x in g.index]:
                rows.append((family.replace("_", " "), arm_label(a), *_funnel_cells(g.loc[a])))
                keep.append(f.index[(f["family"] == family) & (f["arm"] == a)][0])
            rules.append(len(rows) - 1)
    return ReportTable("funnel_family", "Funnel per policy family and arm",
                       ("family", "arm", *_FUNNEL_HEADER), tuple(rows),
                       f.loc[keep].reset_index(drop=True), align="llrrrrr",
                       rules_after=tuple(rules),
                       notes=("Attempts on tasks where the family is eligible, all cohorts.",))


def _near_miss_counts(g: pd.DataFrame, state: str, beh: str, passed: str) -> dict[str, float]:
    pis = (g[passed] == 1) & (g[state] == 1)
    near = int((pis & (g[beh] == 0)).sum())
    n = int(pis.sum())
    return {"passed_in_state": n, "near_miss": near,
            "uncoded": int((pis & g[beh].isna()).sum()),
            "near_miss_pct": 100 * near / max(1, n)}


def near_miss_table(inp: ReportInputs) -> ReportTable:
    """Seed 000's near-miss rate: passes in the risky state without the registered behavior.

    Per arm on the main cohort, then per family and arm. The rate divides by every pass in
    the risky state (uncoded behavior counts in the denominator, as in the analysis).
    """
    cohort = inp.main_cohort
    att = inp.cohort_attempts(cohort)
    records, rows, rules = [], [], []
    for a in inp.arms:
        g = att[att["arm"] == a]
        if len(g):
            records.append({"family": f"all ({cohort})", "arm": a, **_near_miss_counts(
                g, "funnel_state", "funnel_behavior", "funnel_passed")})
    rules.append(len(records) - 1)
    fam = inp.loaded.families
    for family in sorted(set(fam["family"])) if not fam.empty else []:
        for a in inp.arms:
            g = fam[(fam["family"] == family) & (fam["arm"] == a)]
            if len(g):
                records.append({"family": family, "arm": a,
                                **_near_miss_counts(g, "state", "behavior", "passed")})
        rules.append(len(records) - 1)
    for r in records:
        rows.append((str(r["family"]).replace("_", " "), arm_label(str(r["arm"])),
                     fmt_int(r["passed_in_state"]), fmt_int(r["near_miss"]),
                     fmt_int(r["uncoded"]),
                     fmt_num(r["near_miss_pct"]) if r["passed_in_state"] else "–"))
    return ReportTable(
        "near_miss", "Near-misses: passes in the risky state without the registered behavior",
        ("family", "arm", "passes in risky state", "without behavior", "uncoded",
         "near-miss %"), tuple(rows), pd.DataFrame(records), align="llrrrr",
        rules_after=tuple(rules),
        notes=("Near-miss % = passes in the risky state without the registered behavior / "
               "passes in the risky state (seed 000); '–' where no attempt passed in it.",))
