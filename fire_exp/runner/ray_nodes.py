"""The nodes of a Ray cluster as fire-exp sees them: each is prepared before its first
attempt, and attempts are placed on them by the task's declared resources.

Every node runs its attempts in its own environment: with ``environment=docker`` that is
the Docker engine its Ray worker reaches (``DOCKER_HOST`` of the ``ray start`` that
started the node, or the default socket). Before a node's first attempt, the driver runs
:func:`prepare_node` there, pinned to the node: it builds the driver's panel from the
driver's config (checked against the panel digest, as every attempt does), checks the
environment's preflight (the engine and its base image) and builds the task images from the
node's base image, once per Docker engine (two nodes on one engine prepare once). A
task image's tag is its build context's content digest, so a second preparation finds
every image and builds nothing.

Images are built on the node rather than shipped from the driver: a task's build context
is a few kilobytes and already on every node (the worker checks the panel digest against
it), while a built task image is hundreds of megabytes to ``docker save`` through the
object store per node; the base image is the one thing a node must have (see
docs/runner.md).

:class:`Placement` keeps, on the driver, what each node holds: an attempt goes to a node
whose free CPUs and memory fit the task's ``[environment]`` ``cpus`` and ``memory_mb`` and
that runs fewer than ``per_node`` attempts; it is pinned there (Ray's node affinity), so
the driver knows which node ran which attempt. A task that fits no node is refused before
the panel starts (:func:`check_fits`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fire_exp.config import RunConfig
from fire_exp.errors import PreflightError
from fire_exp.tasks.model import Task

__all__ = ["Node", "NodeReady", "Placement", "alive_nodes", "check_fits", "demand",
           "node_name", "prepare_node", "scratch_root"]

NAME_PREFIX = "fire-exp-node:"  # a custom resource naming a node: --resources '{"fire-exp-node:a": 1}'
MIB = 1024**2


def scratch_root() -> Path:
    """Where a node runs its attempts (on the node's machine)."""
    return Path(tempfile.gettempdir()) / "fire-exp-ray"


@dataclass(frozen=True)
class Node:
    """A live Ray node that can run attempts."""

    node_id: str
    name: str
    cpus: float
    memory: int  # bytes Ray may hand out on it


def node_name(info: dict[str, Any]) -> str:
    """A node's name: its ``fire-exp-node:NAME`` resource, else its address and id."""
    for key in info.get("Resources", {}):
        if key.startswith(NAME_PREFIX):
            return str(key)[len(NAME_PREFIX):]
    return f"{info.get('NodeManagerAddress', '?')}/{str(info.get('NodeID', ''))[:8]}"


def alive_nodes(ray: Any) -> list[Node]:
    """The cluster's live nodes with CPUs to run attempts, by name."""
    found = []
    for info in ray.nodes():
        resources = info.get("Resources", {})
        if info.get("Alive") and resources.get("CPU", 0) > 0:
            found.append(Node(node_id=info["NodeID"], name=node_name(info),
                              cpus=float(resources["CPU"]),
                              memory=int(resources.get("memory", 0))))
    return sorted(found, key=lambda n: n.name)


@dataclass(frozen=True)
class Demand:
    """What one attempt of a task reserves on its node."""

    cpus: float
    memory: int  # bytes


def demand(task: Task, cpus_per_attempt: float) -> Demand:
    """A task's attempt reserves its declared CPUs and memory (at least ``cpus_per_attempt``
    CPUs, the executor's floor for a task that declares none)."""
    env = task.environment
    cpus = float(env.cpus) if env.cpus else cpus_per_attempt
    return Demand(cpus=cpus, memory=int(env.memory_mb * MIB) if env.memory_mb else 0)


def check_fits(tasks: Iterable[Task], nodes: Sequence[Node], cpus_per_attempt: float) -> None:
    """Refuse a task whose declared resources fit no node of the cluster.

    Raises:
        PreflightError: naming the task, what it declares and the largest node.
    """
    if not nodes:
        raise PreflightError("executor=ray: the cluster has no live node with CPUs",
                             "start a node (ray start --address HEAD:PORT)")
    for task in tasks:
        need = demand(task, cpus_per_attempt)
        if not any(need.cpus <= n.cpus and need.memory <= n.memory for n in nodes):
            most = max(nodes, key=lambda n: (n.cpus, n.memory))
            raise PreflightError(
                f"task {task.name}: task.toml: [environment] asks {need.cpus:g} CPUs and "
                f"{need.memory // MIB} MiB; no node has that (largest: {most.name}, "
                f"{most.cpus:g} CPUs, {most.memory // MIB} MiB)",
                "add a larger node, or lower the task's cpus/memory_mb")


@dataclass
class Placement:
    """Which node runs the next attempt, from what the driver has placed where."""

    per_node: int | None
    nodes: dict[str, Node] = field(default_factory=dict)
    used: dict[str, list[Demand]] = field(default_factory=dict)

    def update(self, nodes: Iterable[Node]) -> None:
        """The nodes that may take attempts now (a lost node takes no more)."""
        self.nodes = {n.node_id: n for n in nodes}

    def pick(self, need: Demand) -> Node | None:
        """The least loaded node where ``need`` fits now, or None (wait)."""
        fits = []
        for node in self.nodes.values():
            held = self.used.get(node.node_id, [])
            if self.per_node is not None and len(held) >= self.per_node:
                continue
            if need.cpus + sum(d.cpus for d in held) > node.cpus + 1e-9:
                continue
            if need.memory + sum(d.memory for d in held) > node.memory:
                continue
            fits.append((len(held), node.name, node))
        return min(fits, key=lambda f: f[:2])[2] if fits else None

    def hold(self, node: Node, need: Demand) -> None:
        """``need`` runs on ``node``."""
        self.used.setdefault(node.node_id, []).append(need)

    def release(self, node_id: str, need: Demand) -> None:
        """An attempt that held ``need`` on the node ended."""
        held = self.used.get(node_id, [])
        if need in held:
            held.remove(need)


@dataclass(frozen=True)
class NodeReady:
    """What :func:`prepare_node` found and did on one node."""

    engine: str  # the engine's identity (``Environment.engine_identity``)
    lines: tuple[str, ...]  # progress: one line per image
    error: str | None = None  # why this node cannot run the panel


def prepare_node(config: RunConfig, digest: str, done: frozenset[str]) -> NodeReady:
    """On a node: the driver's panel built and checked, the environment's preflight, and
    every task image built or found, unless this node's engine is in ``done``."""
    from fire_exp.runner.build import prepare_environments
    from fire_exp.runner.worker_panel import worker_panel

    lines: list[str] = []
    try:
        panel = worker_panel(config, digest)
        panel.environment.preflight()
        engine = panel.environment.engine_identity()
        # An engine that comes back still holds the containers of the attempts it lost.
        if reaped := panel.environment.reap_orphans(scratch=scratch_root()):
            lines.append(f"removed {reaped} containers of ended attempts")
        if engine in done:
            return NodeReady(engine=engine,
                             lines=(*lines, "images already prepared on this engine"))
        prepare_environments(panel, lines.append)
    except PreflightError as exc:
        return NodeReady(engine="", lines=tuple(lines), error=exc.what)
    except Exception as exc:  # noqa: BLE001 - the driver refuses with it, naming the node
        return NodeReady(engine="", lines=tuple(lines),
                         error=f"{type(exc).__name__}: {exc}".splitlines()[0])
    return NodeReady(engine=engine, lines=tuple(lines))
