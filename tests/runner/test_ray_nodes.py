"""Placement on a cluster's nodes, by the task's declared CPUs and memory (no Ray needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

import fire_exp
from fire_exp.errors import PreflightError
from fire_exp.runner.ray_nodes import MIB, Demand, Node, Placement, check_fits, node_name
from fire_exp.tasks.loader import load_tasks

SMALL = Node(node_id="a", name="small", cpus=1, memory=1024 * MIB)
BIG = Node(node_id="b", name="big", cpus=4, memory=8192 * MIB)


def test_a_node_is_named_by_its_resource_else_by_address() -> None:
    assert node_name({"Resources": {"CPU": 1, "fire-exp-node:gpu-box": 1}}) == "gpu-box"
    assert node_name({"NodeManagerAddress": "10.0.0.7", "NodeID": "abcdef0123"}) == \
        "10.0.0.7/abcdef01"


def test_per_node_limit_spreads_attempts() -> None:
    placement = Placement(per_node=1)
    placement.update([SMALL, BIG])
    one = Demand(cpus=1, memory=512 * MIB)
    first = placement.pick(one)
    assert first is not None
    placement.hold(first, one)
    second = placement.pick(one)
    assert second is not None and second != first
    placement.hold(second, one)
    assert placement.pick(one) is None  # both nodes at their limit: wait
    placement.release(first.node_id, one)
    assert placement.pick(one) == first


def test_resources_decide_without_a_limit() -> None:
    placement = Placement(per_node=None)
    placement.update([SMALL])
    half = Demand(cpus=0.5, memory=256 * MIB)
    for _ in range(2):
        placement.hold(SMALL, half)
    assert placement.pick(half) is None  # its CPU is taken
    assert placement.pick(Demand(cpus=0, memory=2048 * MIB)) is None  # too much memory


def test_a_lost_node_takes_no_more_attempts() -> None:
    placement = Placement(per_node=None)
    placement.update([SMALL, BIG])
    placement.update([SMALL])
    assert placement.pick(Demand(cpus=1, memory=0)) == SMALL


def test_a_task_that_fits_no_node_is_refused_naming_it() -> None:
    tasks = load_tasks(Path(fire_exp.__file__).parent / "suites" / "fire-mini")[:2]
    check_fits(tasks, [BIG], cpus_per_attempt=1)
    tiny = Node(node_id="t", name="tiny", cpus=1, memory=64 * MIB)
    with pytest.raises(PreflightError, match=rf"task {tasks[0].name}: .*largest: tiny"):
        check_fits(tasks, [tiny], cpus_per_attempt=1)
    with pytest.raises(PreflightError, match="no live node"):
        check_fits(tasks, [], cpus_per_attempt=1)
