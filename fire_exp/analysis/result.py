"""``AnalysisResult``: every table of an analysis as data, and how it was made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import pandas as pd

from fire_exp.analysis.accounting import RunStatus
from fire_exp.analysis.plan import AnalysisPlan

__all__ = ["TABLE_FIELDS", "AnalysisResult"]

_ONLY_WHEN_PRESENT = frozenset({"arm_changes"})  # tables of declared arms only


@dataclass(frozen=True)
class AnalysisResult:
    """All tables of one analysis plus how they were made; renderers only format these.

    Every DataFrame field is a table, returned by ``tables()`` (name → frame, in field
    order) and written as ``NAME.csv`` / ``NAME.md`` by ``fire-exp analyze``. Percent
    (``_pct``) and points (``_pp``) are on a 0–100 scale; cohorts are the plan's
    (``eligible``, ``silent``, ``all``); ``arm`` names are the panel's.

    Tables (columns):
        pass_rates: per cohort and arm: ``cohort, arm, n_tasks, attempts, successes,
            pass_rate_pct, ci_low_pct, ci_high_pct`` (task-bootstrap interval),
            ``mean_reward``.
        contrasts: per plan contrast ``A - B`` and cohort: ``contrast, cohort, n_tasks,
            estimate_pp, ci_low_pp, ci_high_pp, p_value`` (two-sided sign-flip),
            ``p_method, role`` (primary/supportive/secondary), ``p_holm, p_mc_se,
            p_resamples, n_nonzero, min_attainable_p, ci_method, n_resamples,
            ci_mc_error_pp, t_ci_low_pp, t_ci_high_pp, improved, regressed, tied,
            pass_a_pct, pass_b_pct, flag``.
        sensitivity: ``contrasts`` without infrastructure failures (empty when there are
            none or the plan asks for no sensitivity analysis).
        interaction: the plan's interaction: ``contrast, cohort`` (``first - second``),
            ``n_tasks, estimate_pp, ci_low_pp, ci_high_pp, p_value, p_method, p_mc_se,
            p_resamples, n_resamples, n_first, n_second``.
        transitions: per plan contrast and cohort, tasks with K attempts in both arms by
            successes: ``contrast, cohort, comparator`` (``i/K`` under B), ``arm``
            (``j/K`` under A), ``n_tasks``.
        pass_k: per cohort, arm and k = 1..(fewest attempts of a task): ``cohort, arm, k,
            n_tasks, pass_at_k_pct, pass_hat_k_pct, consistency`` (pass^K / pass^1).
        cost: per cohort and arm: ``cohort, arm, n_tasks, attempts, successes,
            total_cost_usd, cost_per_success_usd, cost_ci_low_usd, cost_ci_high_usd,
            mean_agent_seconds``.
        errors: per arm: ``arm, attempts, infrastructure_failures,
            infrastructure_failure_pct, no_fair_attempt, replaced_records, gave_up`` and
            ``cause:NAME`` counts over every record, replaced ones included.
        funnel: per cohort and arm, attempt counts: ``cohort, arm, attempts, state, fired,
            behavior, coded, passed, near_miss_pct``.
        family_funnel: the same per policy family and arm: ``family, arm, attempts, state,
            fired, behavior, coded, passed, near_miss_pct``.
        near_miss: seed 000's near-misses, per arm on the main cohort (``family`` reads
            ``all (COHORT)``) then per family and arm: ``family, arm, passed_in_state,
            near_miss, uncoded, near_miss_pct``.
        suite: per arm on the suite cohort (FIRE Tables 5 and 7): ``arm, n_tasks,
            attempts, pass_at_1_pct, ci_low_pct, ci_high_pct, delta_pp, delta_ci_low_pp,
            delta_ci_high_pp, delta_p, delta_p_method`` (against ``reference``),
            ``delta_planned`` (false: exploratory, not in the plan), ``pass_at_2_pct,
            pass_hat_2_pct, improved, regressed, tasks_fired, gave_up, timeouts, crashes,
            total_cost_usd, mean_agent_seconds``.
        suite_transitions: per arm against ``reference`` on the suite cohort (FIRE Table
            6): ``arm, reference, from`` (``i/K`` under the reference), one column per
            ``j/K`` under the arm (task counts).
        reliability: per arm on the suite cohort (seed 003): ``arm, n_tasks,
            pass_hat_1_pct … pass_hat_K_pct, consistency, pass1_replicate_R_pct`` per
            replicate, ``pass1_pstd_pct, delta_pass_all_pp, delta_ci_low_pp,
            delta_ci_high_pp`` (per-task pass^K against the reference, paired
            task-bootstrap), ``mcnemar_b, mcnemar_c, mcnemar_strata, mcnemar_p,
            mcnemar_method`` (pooled exact McNemar over cohort strata).
        tasks: per cohort, task and arm (FIRE Table 8): ``cohort, task, arm, attempts,
            successes, pass_rate, cost_usd, agent_seconds``.
        accounting: per arm, then ``total``: ``arm, scheduled`` (empty without
            prereg.json), ``finished_records, scored, replaced, invalid, in_flight``.
        prereg: the run's preregistered items: ``item, path, sha256``.
        ablation: per leave-one-family-out arm ``real-minus-F``, family F's contribution
            real − (real minus F) on F's eligible tasks (``fire_exp.analysis.ablation``);
            empty without such arms.
        arm_changes: per arm of a panel that declares its arms (``panel.declare``): ``arm,
            description, changes`` (as frozen in prereg.json), ``models, records,
            input_tokens, output_tokens, tokens_per_record, total_cost_usd,
            cost_per_record_usd`` over every finished record; absent (not written) for a
            panel of preset arms only.

        extra: the tables of ``analyze(tables=...)`` that are not fields here, by name,
            in the order built (written after the fields' tables).

    Attributes beyond the tables:
        plan: the plan analysed with.
        arms: the arms present, in the paper's order.
        reference: the arm the suite tables compare with.
        main_cohort: the primary contrast's cohort if present, else ``all``.
        suite_cohort: ``all`` if the plan has it, else the main cohort.
        k: attempts per task and arm (the most of any task), the one K of the transition
            and reliability tables.
        tier: the run's agent tier (or the run's name when the records name none or several).
        status: whether the run was finished.
        metadata: how the tables were made (plan name, hash, file and where it came
            from, seed, library versions, record counts), JSON-serialisable.
        notes: what was skipped and why.
        sequential: the sequential test of a plan with a ``sequential:`` section
            (``fire_exp.analysis.sequential.sequential_summary``), else None; written as
            ``sequential.json`` and ``sequential.md``.
    """

    pass_rates: pd.DataFrame
    contrasts: pd.DataFrame
    sensitivity: pd.DataFrame
    interaction: pd.DataFrame
    transitions: pd.DataFrame
    pass_k: pd.DataFrame
    cost: pd.DataFrame
    errors: pd.DataFrame
    funnel: pd.DataFrame
    family_funnel: pd.DataFrame
    near_miss: pd.DataFrame
    suite: pd.DataFrame
    suite_transitions: pd.DataFrame
    reliability: pd.DataFrame
    tasks: pd.DataFrame
    accounting: pd.DataFrame
    prereg: pd.DataFrame
    plan: AnalysisPlan
    ablation: pd.DataFrame = field(default_factory=pd.DataFrame)
    arm_changes: pd.DataFrame = field(default_factory=pd.DataFrame)
    extra: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    arms: tuple[str, ...] = ()
    reference: str = ""
    main_cohort: str = "all"
    suite_cohort: str = "all"
    k: int = 1
    tier: str = ""
    status: RunStatus = field(default_factory=RunStatus)
    metadata: Mapping[str, object] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    sequential: Mapping[str, Any] | None = None

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name, in a fixed order (an empty table only some runs have, like
        ``arm_changes``, left out)."""
        named = {name: getattr(self, name) for name in TABLE_FIELDS}
        return {name: frame for name, frame in {**named, **self.extra}.items()
                if not (name in _ONLY_WHEN_PRESENT and frame.empty)}


TABLE_FIELDS = tuple(f.name for f in fields(AnalysisResult) if f.type == "pd.DataFrame")
"""The fields of ``AnalysisResult`` that are tables, in order."""
