"""Statistics engine of fire-exp: task-level estimators, bootstrap and permutation tests.

The task is the unit of inference; every function that draws takes ``rng=`` (a child
stream from :mod:`fire_exp.stats.seeds`).
"""

from fire_exp.stats.aggregate import (
    CohortAggregates,
    aggregate_tasks,
    task_matrices,
    task_matrix,
)
from fire_exp.stats.bootstrap import (
    BootstrapInterval,
    Distributions,
    PendingDistributions,
    TInterval,
    bootstrap_distributions,
    paired_bootstrap,
    paired_t_interval,
    start_bootstrap_distributions,
)
from fire_exp.stats.contrasts import (
    ImprovementCounts,
    InteractionResult,
    improvement_counts,
    interaction,
    transition_counts,
    transition_labels,
    transition_table,
)
from fire_exp.stats.mcnemar import (
    McNemarResult,
    mcnemar_exact,
    mcnemar_pooled,
    mcnemar_stratified,
)
from fire_exp.stats.multiplicity import holm
from fire_exp.stats.passk import PassKCurve, pass_at_k, pass_curve, pass_hat_k
from fire_exp.stats.permutation import SignFlipResult, lattice_resolution, sign_flip_test
from fire_exp.stats.resample import Stratum, count_matrix_sums
from fire_exp.stats.seeds import child_rng, child_seed_sequence, stable_hash32
from fire_exp.stats.sequential import SequentialResult, e_process, sequential_test

__all__ = [
    "CohortAggregates",
    "BootstrapInterval",
    "Distributions",
    "ImprovementCounts",
    "InteractionResult",
    "McNemarResult",
    "PassKCurve",
    "SequentialResult",
    "SignFlipResult",
    "Stratum",
    "TInterval",
    "aggregate_tasks",
    "PendingDistributions",
    "bootstrap_distributions",
    "child_rng",
    "child_seed_sequence",
    "count_matrix_sums",
    "e_process",
    "holm",
    "improvement_counts",
    "interaction",
    "lattice_resolution",
    "mcnemar_exact",
    "mcnemar_pooled",
    "mcnemar_stratified",
    "paired_bootstrap",
    "paired_t_interval",
    "start_bootstrap_distributions",
    "pass_at_k",
    "pass_curve",
    "pass_hat_k",
    "sequential_test",
    "sign_flip_test",
    "stable_hash32",
    "task_matrices",
    "task_matrix",
    "transition_counts",
    "transition_labels",
    "transition_table",
]
