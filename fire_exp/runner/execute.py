"""Running one job, wherever it runs: its attempt's objects built from the panel
(:func:`build_attempt`) and run to a record (:func:`execute`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fire_exp.agents.base import Agent
from fire_exp.arms.place import ArmSetup
from fire_exp.attempt_paths import AttemptPaths
from fire_exp.environments.base import Environment
from fire_exp.policies.arms import ArmPolicies
from fire_exp.policies.model import Family
from fire_exp.records import AttemptRecord
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.runner.build import versions
from fire_exp.runner.model import AttemptJob, Panel
from fire_exp.runner.store import sync_tree

__all__ = ["Attempt", "build_attempt", "execute"]


@dataclass(frozen=True)
class Attempt:
    """An attempt's objects, built and ready: :meth:`run` is layer 1's ``run_attempt``."""

    spec: AttemptSpec
    environment: Environment
    agent: Agent
    arm: ArmPolicies
    coding: tuple[Family, ...]
    setup: ArmSetup | None = None  # what the arm changes besides its policies

    def run(self) -> AttemptRecord:
        """Run the attempt to its record (never raises for the attempt's own failure)."""
        return run_attempt(self.spec, self.environment, self.agent, self.arm.families,
                           self.coding, rng=np.random.default_rng(self.spec.seed),
                           versions=versions(), setup=self.setup)


def build_attempt(panel: Panel, job: AttemptJob) -> Attempt:
    """The objects of ``job``'s attempt: its spec, a fresh environment and agent, its arm."""
    item = job.item
    task = panel.tasks[item.task]
    arm = panel.arms[item.arm]
    setup = panel.setup_for(item.arm)
    spec = AttemptSpec(run=job.run, panel=panel.name, attempt_id=job.attempt_id,
                       task=item.task, cohort=item.cohort, arm=item.arm,
                       replicate=item.replicate, order=item.order, seed=item.seed,
                       config_hash=panel.config_hash,
                       portfolio=str(arm.portfolio or panel.portfolio.path),
                       controls=str(arm.controls or panel.controls.path),
                       policy_arm=arm.policy_arm, policies=setup.spec.policy_source,
                       agent_timeout_multiplier=panel.config.panel.agent_timeout_multiplier)
    return Attempt(spec=spec,
                   environment=panel.environment_for(item.arm).make(
                       task, Path(job.attempt_dir), job.attempt_id),
                   agent=panel.agent_for(item.arm).make(), arm=arm,
                   coding=panel.portfolio.families, setup=setup)


def execute(job: AttemptJob, panel: Panel, live: set[Environment] | None = None
            ) -> AttemptRecord:
    """Run one job to its record; ``live`` holds its environment while it runs (so the
    driver can cancel it on Ctrl-C). The logs are on disk when this returns."""
    attempt = build_attempt(panel, job)
    if live is not None:
        live.add(attempt.environment)
    try:
        record = attempt.run()
    finally:
        if live is not None:
            live.discard(attempt.environment)
    sync_tree(AttemptPaths(Path(job.attempt_dir)).logs)
    return record
