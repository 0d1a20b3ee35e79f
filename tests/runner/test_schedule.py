"""The randomized schedule: permutations within blocks, seeded, independent streams."""

from __future__ import annotations

from collections import Counter

from fire_exp.policies.arms import ARMS
from fire_exp.runner.schedule import attempt_seed, build_schedule, schedule_digest

TASKS = [(f"t{i}", "eligible" if i < 4 else "silent") for i in range(8)]


def test_every_cell_once_and_each_block_is_a_permutation() -> None:
    schedule = build_schedule(TASKS, ARMS, attempts=3, seed=11)
    assert len(schedule) == len(TASKS) * len(ARMS) * 3
    assert Counter(s.attempt_id for s in schedule).most_common(1)[0][1] == 1
    blocks: dict[tuple[str, int], list[str]] = {}
    for s in schedule:
        blocks.setdefault((s.task, s.replicate), []).append(s.arm)
    assert all(sorted(arms) == sorted(ARMS) for arms in blocks.values())
    assert [s.position for s in schedule] == list(range(len(schedule)))
    # Replicates run one after another.
    assert [s.replicate for s in schedule] == sorted(s.replicate for s in schedule)


def test_arm_order_is_randomized_not_fixed() -> None:
    schedule = build_schedule(TASKS, ARMS, attempts=3, seed=11)
    orders = {tuple(s.arm for s in schedule if (s.task, s.replicate) == key)
              for key in {(s.task, s.replicate) for s in schedule}}
    assert len(orders) > 10  # 24 blocks; a fixed order would give 1
    first = Counter(s.arm for s in schedule if s.order == 0)
    assert len(first) >= 4  # every arm gets to go first sometimes


def test_same_seed_same_schedule_other_seed_other_schedule() -> None:
    a = build_schedule(TASKS, ARMS, attempts=2, seed=5)
    assert a == build_schedule(TASKS, ARMS, attempts=2, seed=5)
    assert schedule_digest(a) == schedule_digest(build_schedule(TASKS, ARMS, 2, 5))
    assert schedule_digest(a) != schedule_digest(build_schedule(TASKS, ARMS, 2, 6))


def test_attempt_seeds_do_not_depend_on_the_other_arms() -> None:
    small = build_schedule(TASKS, ["real", "baseline"], attempts=2, seed=5)
    large = build_schedule(TASKS, ARMS, attempts=2, seed=5)
    seeds = {s.attempt_id: s.seed for s in large}
    assert all(seeds[s.attempt_id] == s.seed for s in small)
    assert len({s.seed for s in large}) == len(large)
    assert attempt_seed(5, "t0", "real", 0) != attempt_seed(5, "t0", "real", 1)
