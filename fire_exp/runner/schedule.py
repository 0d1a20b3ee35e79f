"""The randomized schedule: every (task, arm, replicate) with its order and seed.

Within each replicate, every task gets its own random order of the arms (FIRE: "condition
order is randomized within each replicate"); replicates run one after another. Each
attempt's seed comes from its own child stream of the panel seed, keyed by task, arm and
replicate (:mod:`fire_exp.attempt_seeds`), so adding an arm or a task changes no other
attempt's seed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from fire_exp.attempt_seeds import attempt_seed, stable_key

__all__ = ["ScheduledAttempt", "attempt_seed", "build_schedule", "build_task_block_schedule",
           "schedule_digest", "stable_key"]


@dataclass(frozen=True)
class ScheduledAttempt:
    """One cell of the schedule."""

    position: int  # execution order over the whole panel
    task: str
    cohort: str
    arm: str
    replicate: int
    order: int  # the arm's place within its (replicate, task) block
    seed: int

    @property
    def attempt_id(self) -> str:
        return f"{self.task}/{self.arm}/r{self.replicate}"


def build_schedule(tasks: Sequence[tuple[str, str]], arms: Sequence[str], attempts: int,
                   seed: int) -> list[ScheduledAttempt]:
    """Randomize arm order within each (replicate, task) block.

    Args:
        tasks: (task name, cohort) pairs, in the panel's order.
        arms: the panel's arms.
        attempts: replicates per task and arm.
        seed: the panel seed.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stable_key("schedule"),)))
    schedule: list[ScheduledAttempt] = []
    for replicate in range(attempts):
        for task, cohort in tasks:
            _append_arms(schedule, task, cohort, arms, replicate, seed, rng=rng)
    return schedule


def _append_arms(schedule: list[ScheduledAttempt], task: str, cohort: str,
                 arms: Sequence[str], replicate: int, seed: int, *,
                 rng: np.random.Generator) -> None:
    """Append one replicate of ``task``: every arm once, in an order drawn from ``rng``."""
    for order, arm_index in enumerate(rng.permutation(len(arms))):
        arm = arms[int(arm_index)]
        schedule.append(ScheduledAttempt(
            position=len(schedule), task=task, cohort=cohort, arm=arm,
            replicate=replicate, order=order, seed=attempt_seed(seed, task, arm, replicate)))


def schedule_digest(schedule: Sequence[ScheduledAttempt]) -> str:
    """SHA-256 of the schedule as canonical JSON (what the preregistration freezes)."""
    text = json.dumps([asdict(s) for s in schedule], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def build_task_block_schedule(tasks: Sequence[tuple[str, str]], arms: Sequence[str],
                              attempts: int, seed: int) -> list[ScheduledAttempt]:
    """The schedule of a sequential panel: task blocks in a random task order.

    The tasks run in an order drawn from the panel seed (its own stream, keyed
    ``task-order``); each task's block holds every arm and attempt of the task, arms in a
    random order within each replicate, so a task is complete before the next one starts
    and the stopping rule can be evaluated after each. Seeds are the attempts' own, as in
    :func:`build_schedule`. The manifest freezes the schedule, and with it the order.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    order_rng = np.random.default_rng(np.random.SeedSequence(
        seed, spawn_key=(stable_key("task-order"),)))
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stable_key("schedule"),)))
    schedule: list[ScheduledAttempt] = []
    for task_index in order_rng.permutation(len(tasks)):
        task, cohort = tasks[int(task_index)]
        for replicate in range(attempts):
            _append_arms(schedule, task, cohort, arms, replicate, seed, rng=rng)
    return schedule
