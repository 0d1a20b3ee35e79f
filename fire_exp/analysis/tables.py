"""The analysis of a panel: every table, as data, from the attempts and the plan.

``analyze`` computes, for each cohort of the plan, per-arm pass rates and every contrast
(estimate, percentile interval, sign-flip p, paired t interval, Holm-adjusted p for the
secondary contrasts), then the interaction, funnels and near-misses, transitions,
pass@k/pass^k, cost per success, error rates, the sensitivity analysis without
infrastructure failures, the suite and reliability tables against the reference arm,
every task under every arm, and the run's accounting. Every random stream is a child of
the plan's seed keyed by its name. Every interval of every table comes from its cohort's one
set of task resamples, drawn once per analysis (``resamples.SharedBootstrap``): the tables
first say which per-task columns they need, then read their intervals. The report only renders
the result.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy

from fire_exp.analysis.ablation import ablation_contrasts
from fire_exp.analysis.accounting import (
    RunStatus,
    accounting_frame,
    invalid_reasons,
    node_losses,
    prereg_frame,
    run_status,
    tier_label,
)
from fire_exp.analysis.arm_changes import arm_changes_frame
from fire_exp.analysis.arms import (
    arms_in_order,
    cohort_attempts,
    main_cohort,
    reference_arm,
    suite_cohort,
)
from fire_exp.analysis.conformance import check_conformance
from fire_exp.analysis.counts import errors_frame, funnel_frames, near_miss_frame, pass_k_frame
from fire_exp.analysis.frame import FAMILY_COLUMNS, LoadedAttempts, normalize_frame
from fire_exp.analysis.load import validate_attempts
from fire_exp.analysis.plan import AnalysisPlan, load_plan, parse_contrast
from fire_exp.analysis.reliability import (
    RELIABILITY_SCOPE,
    reliability_columns,
    reliability_frame,
)
from fire_exp.analysis.resamples import BootstrapResults, SharedBootstrap
from fire_exp.analysis.result import AnalysisResult
from fire_exp.analysis.run import PlanChoice, RunInputs, choose_plan, read_run, resolve_plan
from fire_exp.analysis.sequential import read_stop, sequential_summary
from fire_exp.analysis.suite import (
    SUITE_SCOPE,
    Suite,
    suite_columns,
    suite_frame,
    suite_transitions_frame,
    tasks_frame,
)
from fire_exp.errors import InputError
from fire_exp.stats import (
    BootstrapInterval,
    CohortAggregates,
    child_rng,
    holm,
    improvement_counts,
    interaction,
    paired_t_interval,
    pass_curve,
    sign_flip_test,
    task_matrices,
    transition_counts,
    transition_labels,
)

__all__ = ["CONTRAST_LEADING_COLUMNS", "analyze"]

CONTRAST_LEADING_COLUMNS = ["contrast", "cohort", "n_tasks", "estimate_pp", "ci_low_pp",
                            "ci_high_pp", "p_value", "p_method"]
Row = dict[str, Any]
_SMALL = 30  # below this many tasks percentile intervals under-cover: read the t interval


def _role(plan: AnalysisPlan, contrast: str, cohort: str) -> str:
    if contrast == plan.primary.contrast:
        return "primary" if cohort == plan.primary.cohort else "supportive"
    return "secondary"


@dataclass(frozen=True)
class _Cohort:
    """One cohort's per-task aggregates and the contrasts it can estimate."""

    name: str
    scope: str
    agg: pd.DataFrame
    arms: list[str]
    usable: list[str]
    tasks: pd.Index  # the rows of the matrices below
    rate: np.ndarray  # tasks x arms: pass rate, successes and attempts (NaN: no attempt)
    successes: np.ndarray
    attempts: np.ndarray
    per_arm: bool  # its per-arm rows are made (the sensitivity table has contrasts only)


@dataclass(frozen=True)
class _Transitions:
    """A contrast's transition counts in long form, one entry per (comparator, arm) cell,
    row by row."""

    contrast: str
    cohort: str
    comparator: np.ndarray
    arm: np.ndarray
    n_tasks: np.ndarray


def _transitions_frame(parts: list[_Transitions]) -> pd.DataFrame:
    """Every contrast's transitions in one frame (built once, not concatenated)."""
    if not parts:
        return pd.DataFrame()
    sizes = [p.n_tasks.size for p in parts]
    return pd.DataFrame({
        "contrast": np.repeat(np.array([p.contrast for p in parts], dtype=object), sizes),
        "cohort": np.repeat(np.array([p.cohort for p in parts], dtype=object), sizes),
        "comparator": np.concatenate([p.comparator for p in parts]),
        "arm": np.concatenate([p.arm for p in parts]),
        "n_tasks": np.concatenate([p.n_tasks for p in parts])})


def _contrast_row(plan: AnalysisPlan, name: str, c: _Cohort, keys: tuple[str, ...], k: int,
                  ) -> tuple[Row, _Transitions]:
    """A contrast's row without its bootstrap interval (``_with_interval`` adds it) and its
    transitions: the tests run while the resamples are still being drawn."""
    a, b = parse_contrast(name)
    cohort, pick = c.name, [c.arms.index(a), c.arms.index(b)]
    rate, succ, n = c.rate[:, pick], c.successes[:, pick], c.attempts[:, pick]
    ok = ~np.isnan(rate).any(axis=1)
    d = rate[ok, 0] - rate[ok, 1]
    sf = sign_flip_test(d, n_resamples=plan.permutation.n_resamples,
                        max_enumeration=plan.permutation.max_enumeration,
                        method=plan.permutation.method, rng=child_rng(plan.seed, *keys, name, "signflip", cohort))
    ti = paired_t_interval(d, plan.bootstrap.confidence_level)
    ic = improvement_counts(rate[ok, 0], rate[ok, 1])
    flags = [s for s in (sf.method == "degenerate" and "no non-zero difference",
                         d.size < _SMALL and f"fewer than {_SMALL} tasks: read t interval")
             if s]
    row = {"contrast": name, "cohort": cohort, "n_tasks": int(d.size),
           "estimate_pp": 100 * sf.statistic, "ci_low_pp": np.nan,
           "ci_high_pp": np.nan, "p_value": sf.p_value, "p_method": sf.method,
           "role": _role(plan, name, cohort), "p_holm": np.nan, "p_mc_se": sf.mc_se,
           "p_resamples": sf.n_resamples, "n_nonzero": sf.n_nonzero,
           "min_attainable_p": sf.min_attainable_p, "ci_method": "",
           "n_resamples": 0, "ci_mc_error_pp": np.nan,
           "t_ci_low_pp": 100 * ti.ci_low, "t_ci_high_pp": 100 * ti.ci_high,
           "improved": ic.improved, "regressed": ic.regressed, "tied": ic.tied,
           "pass_a_pct": 100 * float(np.mean(rate[ok, 0])),
           "pass_b_pct": 100 * float(np.mean(rate[ok, 1])), "flag": "; ".join(flags)}
    full = ok & (n[:, 0] == k) & (n[:, 1] == k)
    counts = transition_counts(succ[full, 1], succ[full, 0], k)
    labels = np.array(transition_labels(k), dtype=object)
    return row, _Transitions(name, cohort, np.repeat(labels, k + 1), np.tile(labels, k + 1),
                             counts.ravel())


def _with_interval(row: Row, bi: BootstrapInterval) -> Row:
    """A contrast row with its bootstrap interval (the first flag names a degenerate one)."""
    flags = [f for f in ("degenerate bootstrap" if bi.method == "degenerate" else "",
                         str(row["flag"])) if f]
    return {**row, "ci_low_pp": 100 * bi.ci_low, "ci_high_pp": 100 * bi.ci_high,
            "ci_method": bi.method, "n_resamples": bi.n_resamples,
            "ci_mc_error_pp": 100 * bi.mc_error, "flag": "; ".join(flags)}


def _scope(keys: tuple[str, ...], cohort: str) -> str:
    return f"{'/'.join(keys) or 'primary'}:{cohort}"


def _cohort_columns(plan: AnalysisPlan, aggs: CohortAggregates, cohort: str,
                    keys: tuple[str, ...], notes: list[str], boot: SharedBootstrap,
                    per_arm: bool) -> _Cohort | None:
    """A cohort's aggregates; asks ``boot`` for its contrasts and, ``per_arm``, its arms'
    pass rates and cost ratios (no other number depends on which columns are asked for)."""
    agg = aggs.of(cohort)
    if agg.empty:
        notes.append(f"cohort '{cohort}': no attempts; skipped")
        return None
    arms = sorted(agg["arm"].unique())
    tasks, (rate, cost, succ, n) = task_matrices(
        agg, ("pass_rate", "cost_usd", "successes", "attempts"), arms)
    cols = {f"arm:{arm}": rate[:, i] for i, arm in enumerate(arms)} if per_arm else {}
    usable = []
    for name in plan.contrasts:
        a, b = parse_contrast(name)
        if a not in arms or b not in arms:
            notes.append(f"contrast '{name}' on '{cohort}': arm(s) "
                         f"{[x for x in (a, b) if x not in arms]} absent; skipped")
            continue
        d = rate[:, arms.index(a)] - rate[:, arms.index(b)]
        if np.all(np.isnan(d)):
            notes.append(f"contrast '{name}' on '{cohort}': no task has both arms; skipped")
            continue
        cols[f"contrast:{name}"] = d
        usable.append(name)
    index = pd.Index(tasks)
    ratios = {f"cost:{arm}": (pd.Series(np.nan_to_num(cost[:, i]), index=index),
                              pd.Series(np.nan_to_num(succ[:, i]), index=index))
              for i, arm in enumerate(arms)} if per_arm else {}
    scope = _scope(keys, cohort)
    boot.add(scope, cohort, {key: pd.Series(v, index=index) for key, v in cols.items()},
             ratios)
    return _Cohort(cohort, scope, agg, arms, usable, index, rate, succ, n, per_arm)


@dataclass
class _CohortRows:
    """A cohort's contrast rows, transitions and per-arm rows, before their intervals."""

    cohort: _Cohort
    rows: list[Row]
    trans: list[_Transitions]
    arm_rows: list[Row]


def _cohort_tests(plan: AnalysisPlan, c: _Cohort, keys: tuple[str, ...], k: int,
                  ) -> _CohortRows:
    """Everything of a cohort's tables that does not read the bootstrap."""
    rows, trans = [], []
    for name in c.usable:
        row, tr = _contrast_row(plan, name, c, keys, k)
        rows.append(row)
        trans.append(tr)
    secondary = [r for r in rows if r["role"] == "secondary"]
    if secondary and plan.multiplicity.method == "holm":
        for r, p in zip(secondary, holm([r["p_value"] for r in secondary]), strict=True):
            r["p_holm"] = float(p)
    arm_rows: list[Row] = []
    # Each arm's rows of the cohort's (task, arm) aggregates, as arrays in the frame's order.
    of_arm = c.agg["arm"].to_numpy()
    col = {field: c.agg[field].to_numpy() for field in ("attempts", "successes", "mean_reward",
                                                        "cost_usd", "agent_seconds")}
    for arm in c.arms if c.per_arm else []:
        g = {field: v[of_arm == arm] for field, v in col.items()}
        curve = pass_curve(g["attempts"].astype(int), g["successes"].astype(int))
        arm_rows.append({"cohort": c.name, "arm": arm, "n_tasks": len(g["attempts"]),
                         "attempts": int(g["attempts"].sum()),
                         "successes": int(g["successes"].sum()),
                         "pass_rate_pct": np.nan, "ci_low_pct": np.nan, "ci_high_pct": np.nan,
                         "mean_reward": float(g["mean_reward"].mean()),
                         "total_cost_usd": float(g["cost_usd"].sum()),
                         "cost_per_success_usd": np.nan,
                         "cost_ci_low_usd": np.nan, "cost_ci_high_usd": np.nan,
                         "mean_agent_seconds": float(g["agent_seconds"].sum()
                                                     / g["attempts"].sum()),
                         "_curve": curve})
    return _CohortRows(c, rows, trans, arm_rows)


def _cohort_intervals(part: _CohortRows, results: BootstrapResults,
                      ) -> tuple[list[Row], list[_Transitions], list[Row]]:
    """A cohort's rows with their bootstrap intervals (waits for the resamples)."""
    boot = results.scope(part.cohort.scope)
    rows = [_with_interval(r, boot[f"contrast:{r['contrast']}"]) for r in part.rows]
    arm_rows = []
    for r in part.arm_rows:
        bi, ci = boot[f"arm:{r['arm']}"], boot[f"cost:{r['arm']}"]
        arm_rows.append({**r, "pass_rate_pct": 100 * bi.estimate, "ci_low_pct": 100 * bi.ci_low,
                         "ci_high_pct": 100 * bi.ci_high, "cost_per_success_usd": ci.estimate,
                         "cost_ci_low_usd": ci.ci_low, "cost_ci_high_usd": ci.ci_high})
    return rows, part.trans, arm_rows


def _contrast_frame(rows: list[Row]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=CONTRAST_LEADING_COLUMNS)
    rest = [c for c in frame.columns if c not in CONTRAST_LEADING_COLUMNS]
    return frame[CONTRAST_LEADING_COLUMNS + rest]


def _cohorts(plan: AnalysisPlan, aggs: CohortAggregates, keys: tuple[str, ...],
             notes: list[str], boot: SharedBootstrap, per_arm: bool = True) -> list[_Cohort]:
    found = [_cohort_columns(plan, aggs, cohort, keys, notes, boot, per_arm)
             for cohort in plan.cohorts]
    return [c for c in found if c is not None]


def _run_cohorts(parts: list[_CohortRows], results: BootstrapResults,
                 ) -> tuple[pd.DataFrame, list[_Transitions], list[Row]]:
    rows: list[Row] = []
    trans: list[_Transitions] = []
    arms: list[Row] = []
    for part in parts:
        r, t, a = _cohort_intervals(part, results)
        rows += r
        trans += t
        arms += a
    return _contrast_frame(rows), trans, arms


_INTERACTION = "interaction"


def _interaction_columns(plan: AnalysisPlan, cohorts: list[_Cohort], notes: list[str],
                         boot: SharedBootstrap) -> list[np.ndarray] | None:
    """Each interaction cohort's per-task differences (from the cohort's task matrix);
    asks ``boot`` to resample them."""
    spec = plan.interaction
    if spec is None:
        return None
    a, b = parse_contrast(spec.contrast)
    found = {c.name: c for c in cohorts}
    diffs = []
    for cohort in spec.cohorts:
        c = found.get(cohort)
        if c is None or not {a, b} <= set(c.arms):
            notes.append(f"interaction of '{spec.contrast}': cohort '{cohort}' lacks data; "
                         "skipped")
            return None
        d = pd.Series(c.rate[:, c.arms.index(a)] - c.rate[:, c.arms.index(b)],
                      index=c.tasks).dropna()
        boot.add(_INTERACTION, cohort, {cohort: d})
        diffs.append(d.to_numpy())
    return diffs


def _interaction_frame(plan: AnalysisPlan, diffs: list[np.ndarray] | None,
                       results: BootstrapResults) -> pd.DataFrame:
    spec = plan.interaction
    if spec is None or diffs is None:
        return pd.DataFrame()
    first, second = spec.cohorts
    res = interaction(diffs[0], diffs[1], n_permutations=plan.permutation.n_resamples,
                      confidence_level=plan.bootstrap.confidence_level,
                      resampled=(results.resampled(_INTERACTION, first),
                                 results.resampled(_INTERACTION, second)),
                      rng_permutation=child_rng(plan.seed, _INTERACTION, spec.contrast,
                                                "permutation"))
    return pd.DataFrame([{
        "contrast": spec.contrast, "cohort": f"{first} - {second}",
        "n_tasks": res.n_first + res.n_second, "estimate_pp": 100 * res.estimate,
        "ci_low_pp": 100 * res.ci_low, "ci_high_pp": 100 * res.ci_high,
        "p_value": res.p_value, "p_method": res.p_method, "p_mc_se": res.mc_se,
        "p_resamples": res.n_permutations, "n_resamples": res.n_resamples,
        "n_first": res.n_first, "n_second": res.n_second}])


def _inputs(source: str | Path | pd.DataFrame | LoadedAttempts | RunInputs,
            merge_runs: bool, plan: AnalysisPlan | None) -> RunInputs:
    if isinstance(source, RunInputs):
        return source
    if isinstance(source, LoadedAttempts):
        return RunInputs(source, name=Path(source.source).stem)
    if isinstance(source, pd.DataFrame):
        frame = normalize_frame(source)
        return RunInputs(LoadedAttempts(frame, pd.DataFrame(columns=FAMILY_COLUMNS),
                                        "<frame>", len(frame), 0, 0), name="<frame>")
    return read_run(source, merge_runs=merge_runs, plan=plan)


def _stopped_status(status: RunStatus, inputs: RunInputs) -> RunStatus:
    """The status of a run that stopped before its end (its ``stopped.json``) says why, so
    the report's banner names the rule or the budget that stopped it."""
    stop = read_stop(inputs.path.parent) if inputs.path is not None else None
    if stop is None:
        return status
    message = "; ".join(part for part in (str(stop["line"]), status.message) if part)
    return replace(status, partial=True, message=message)


def _metadata(choice: PlanChoice, inputs: RunInputs, att: pd.DataFrame, k: int,
              ) -> dict[str, object]:
    plan, loaded, manifest = choice.plan, inputs.loaded, inputs.prereg or {}
    return {"plan": plan.name, "plan_hash": plan.plan_hash(), "seed": plan.seed,
            "plan_path": None if choice.path is None else str(choice.path),
            "plan_source": choice.source, "plan_frozen_sha256": choice.frozen_sha256,
            "plan_matches_frozen": choice.matches_frozen, "plan_used": choice.describe(),
            "source": loaded.source, "k": k,
            "numpy": np.__version__, "scipy": scipy.__version__, "pandas": pd.__version__,
            "n_records": loaded.n_records, "n_scored": len(att),
            "n_invalid": loaded.n_invalid, "n_superseded": loaded.n_superseded,
            "invalid_reasons": invalid_reasons(inputs.records),
            "n_infrastructure_failures": int(att["infrastructure_failure"].sum()),
            "node_losses": node_losses(inputs.records.finished) if inputs.records else [],
            "torn_tail": loaded.torn_tail,
            "prereg": {key: manifest[key] for key in ("panel", "frozen_at", "harness_version",
                                                      "seed") if key in manifest}}


def analyze(source: str | Path | pd.DataFrame | LoadedAttempts | RunInputs,
            plan: AnalysisPlan | str | Path | None = None, *,
            merge_runs: bool = False) -> AnalysisResult:
    """Every table of a run (a run folder, an attempts file, a tidy frame or loaded
    attempts) under an analysis plan.

    Args:
        source: what to analyse; a run folder or attempts file is read with its
            ``prereg.json``.
        plan: a plan (object, file or name under ``analysis/``); None: the plan frozen
            with the run (its ``prereg.json``), else ``analysis/default.yaml``.
        merge_runs: let one attempts file hold several runs (else refused).

    An attempts file is checked against the chosen plan as it enters: rewards in the
    plan's scale, arms and cohorts the plan knows, one cohort per task, one run per file.

    Same data, same plan (seed) and same numpy build give bit-identical tables.

    Raises:
        InputError: unreadable input, no scored attempt, or a frozen plan that changed.
    """
    given = resolve_plan(plan) if isinstance(plan, str | Path) else plan  # refuse it first
    # A CSV is read with the given plan: its reward scale says which rewards pass.
    inputs = _inputs(source, merge_runs, load_plan(given) if isinstance(given, Path) else given)
    choice = choose_plan(inputs, given)
    plan, loaded = choice.plan, inputs.loaded
    if inputs.path is not None:
        validate_attempts(inputs.path, plan, merge_runs=merge_runs, read=inputs.records,
                          loaded=inputs.loaded)
        check_conformance(inputs.path, inputs.records, inputs.prereg)
    att, notes = loaded.attempts, list[str]()
    if att.empty:
        raise InputError(loaded.source, "<attempts>", "no finished, valid attempt to analyse",
                         "wait for the first attempt to finish")
    aggs = CohortAggregates(att)  # every attempt grouped by (cohort, task, arm) once
    k = int(aggs.of("all")["attempts"].max())  # K: the most attempts of a task under an arm
    boot = SharedBootstrap(plan, att)
    primary = _cohorts(plan, aggs, (), notes, boot)
    sens_att = att[~att["infrastructure_failure"].astype(bool)]
    sensitive = plan.missing_data.sensitivity == "exclude"
    if sensitive and len(sens_att) == len(att):
        notes.append("sensitivity analysis: no infrastructure failures; identical to primary")
    sens = _cohorts(plan, CohortAggregates(sens_att), ("sensitivity",), [], boot, False) \
        if sensitive and len(sens_att) < len(att) else None
    order = arms_in_order(att["arm"].unique())
    main = main_cohort(plan, att)
    suite = Suite(plan, cohort_attempts(att, suite_cohort(plan, main)), order,
                  reference_arm(plan, order), suite_cohort(plan, main), k, aggs)
    planned = {n for c in primary if c.name == suite.cohort for n in c.usable}
    boot.add(SUITE_SCOPE, suite.cohort, suite_columns(suite, planned))
    boot.add(RELIABILITY_SCOPE, suite.cohort, reliability_columns(suite))
    diffs = _interaction_columns(plan, primary, notes, boot)
    # Every interval of every table, from one set of resamples: drawn from here on (in a
    # child process when large) while the tables that need none are built.
    results = boot.run()
    primary_tests = [_cohort_tests(plan, c, (), k) for c in primary]
    sens_tests = [_cohort_tests(plan, c, ("sensitivity",), k) for c in sens or []]
    if loaded.coding_errors:
        notes.append(f"{loaded.coding_errors} scored attempt(s) have a family whose extractor "
                     "raised: that family is uncoded there (see coding_errors in the records)")
    funnel, family_funnel = funnel_frames(att, loaded.families, plan.cohorts)
    suite_transitions, left_out = suite_transitions_frame(suite)
    status = _stopped_status(run_status(inputs.records, inputs.prereg), inputs)
    errors = errors_frame(att, loaded.superseded)
    near_miss = near_miss_frame(att, loaded.families, order, main)
    tasks = tasks_frame(aggs)
    accounting = accounting_frame(loaded, inputs.records, inputs.prereg, order)
    ablation = ablation_contrasts(loaded, plan)
    # From here on the tables read the resamples.
    contrasts, trans, arm_rows = _run_cohorts(primary_tests, results)
    sensitivity = pd.DataFrame() if sens is None else _run_cohorts(sens_tests, results)[0]
    arms = pd.DataFrame([{k: v for k, v in r.items() if k != "_curve"} for r in arm_rows])
    cost_cols = ["total_cost_usd", "cost_per_success_usd", "cost_ci_low_usd",
                 "cost_ci_high_usd", "mean_agent_seconds"]
    key_cols = ["cohort", "arm", "n_tasks", "attempts", "successes"]
    pass_rates = arms.drop(columns=cost_cols) if len(arms) else arms
    cost = arms[key_cols + cost_cols] if len(arms) else arms
    pass_k = pass_k_frame(arm_rows)
    sequential = sequential_summary(inputs.records.finished if inputs.records else None, plan,
                                    inputs.prereg, inputs.path.parent if inputs.path else None)
    if sequential is not None and sequential.get("fixed_size_after_optional_stop"):
        notes.append("the fixed-size tables were computed after an optional stop "
                     f"({sequential['line']}): the sequential test is the primary result")
    return AnalysisResult(
        pass_rates=pass_rates, contrasts=contrasts, sensitivity=sensitivity,
        interaction=_interaction_frame(plan, diffs, results),
        transitions=_transitions_frame(trans),
        pass_k=pass_k, cost=cost, errors=errors,
        funnel=funnel, family_funnel=family_funnel,
        near_miss=near_miss,
        suite=suite_frame(suite, pass_rates, cost, contrasts, pass_k,
                          results.scope(SUITE_SCOPE)),
        suite_transitions=suite_transitions,
        reliability=reliability_frame(suite, pass_k, results.scope(RELIABILITY_SCOPE)),
        tasks=tasks, accounting=accounting, prereg=prereg_frame(inputs.prereg), plan=plan,
        ablation=ablation, arm_changes=arm_changes_frame(inputs.records, inputs.prereg, order),
        arms=tuple(order),
        reference=suite.reference, main_cohort=main, suite_cohort=suite.cohort, k=suite.k,
        tier=tier_label(inputs.records, inputs.name),
        status=status,
        metadata={**_metadata(choice, inputs, att, k), "suite_transitions_left_out": left_out,
                  "run_status": asdict(status)},
        notes=tuple(notes), sequential=sequential)
