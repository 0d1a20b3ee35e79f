"""The Ray executor: attempts as Ray tasks on a cluster's workers.

Each attempt runs on some worker with that machine's own environment (its Docker, or a
local folder): the driver puts the panel's typed config into the object store once, and
the worker builds the panel from it (:func:`~fire_exp.runner.worker_panel.worker_panel`, once per
worker process), checks it against the driver's preregistered panel digest the job
carries, and runs the attempt in a scratch folder. A worker whose panel does not build or
differs from the driver's returns the error instead; the driver records a
``harness_failed`` attempt flagged invalid (its policies did not load). The record and the
attempt's log folder (as a tar archive) stream back to the driver, which unpacks the logs
into the run folder and then, alone, writes the store — so resume and analysis are the
same as with the local pool.

A worker or node that dies takes its attempt with it: Ray does not retry it
(``max_retries=0``); the driver records a ``harness_failed`` attempt and the panel's
frozen replacement rule decides whether it is replaced. Ctrl-C cancels the tasks in
flight (each receives KeyboardInterrupt and stops its environment) and waits for them.

Ray is imported here only, when the executor runs.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from fire_exp.config import RunConfig
from fire_exp.environments.inbox.procs import is_alive
from fire_exp.errors import FireExpError, PreflightError, ProtocolError
from fire_exp.records import INFRASTRUCTURE_CAUSES, AttemptRecord, Cause
from fire_exp.runner.cleanup import reap
from fire_exp.runner.execute import execute
from fire_exp.runner.executors import Workers
from fire_exp.runner.job_records import harness_failure
from fire_exp.runner.model import AttemptJob, JobQueue, OnDone, OnStart, Panel, Report
from fire_exp.runner.ray_nodes import (
    Demand,
    Node,
    NodeReady,
    Placement,
    alive_nodes,
    check_fits,
    demand,
    prepare_node,
    scratch_root,
)
from fire_exp.runner.store import sync_tree
from fire_exp.runner.validity import LOAD_FAILED
from fire_exp.runner.worker_panel import panel_digest, worker_panel
from fire_exp.settings import Settings, ceiling

CANCEL_WAIT_S = 60.0  # how long cancelled attempts may take to tear down their environment


def _pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        if folder.is_dir():
            tar.add(folder, arcname=".")
    return buffer.getvalue()


def _unpack(data: bytes, folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(folder, filter="data")
    sync_tree(folder)


def ray_attempt(config: RunConfig, job: AttemptJob
                ) -> tuple[dict[str, Any] | None, str | None, bytes]:
    """Run one attempt on this worker.

    Returns its record (JSON) and its logs (tar.gz); or, when this worker cannot build the
    driver's panel, no record and the error.
    """
    try:
        panel = worker_panel(config, job.panel_digest)
    except Exception as exc:  # noqa: BLE001 - the driver records it as a harness failure
        return None, f"{type(exc).__name__}: {exc}", b""
    root = scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    reap(root, orphans_only=True)  # processes of attempts whose worker died
    scratch = Path(tempfile.mkdtemp(prefix=f"attempt-{os.getpid()}-", dir=root))
    try:
        # The run's layout (RUN/attempts/TASK/ARM/rN): its container is labelled with the
        # run, so a scoped ``fire-exp cleanup --run RUN`` finds it on this node's engine.
        local = scratch / job.run / job.log_dir
        # Drop the box (the agent's working copy) before packing: the logs go back.
        record = execute(replace(job, attempt_dir=str(local)), panel)
        shutil.rmtree(local / "box", ignore_errors=True)
        return record.model_dump(mode="json"), None, _pack(local)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def sweep_node(config: RunConfig, digest: str) -> int:
    """Kill what attempts of dead workers left on this node, remove their scratch folders,
    and remove the containers of ended attempts from this node's engine (its orphans: a
    lost worker's, or an engine's that stopped mid-attempt and came back); returns how many
    processes and containers went."""
    root = scratch_root()
    killed = reap(root, orphans_only=True) if root.is_dir() else []
    for folder in root.glob("attempt-*-*") if root.is_dir() else ():
        pid = folder.name.split("-")[1]
        if pid.isdigit() and not is_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
    try:
        containers = worker_panel(config, digest).environment.reap_orphans(scratch=root)
    except Exception:  # noqa: BLE001 - an engine that is down has nothing to remove now
        containers = 0
    return len(killed) + containers


class RayExecutorSettings(Settings):
    """``configs/executor/ray.yaml`` (see :class:`RayExecutor`)."""

    address: str | None = None
    workers: Workers = 2
    cpus_per_attempt: Annotated[float, Field(ge=1), ceiling(1024)] = 1.0
    per_node: Annotated[int, Field(ge=1)] | None = None


_RAY = RayExecutorSettings()


class RayExecutor:
    """Attempts as Ray tasks.

    Args:
        address: a running cluster (``HOST:PORT`` or ``auto``); None starts a local Ray
            for this run and shuts it down after.
        workers: attempts in flight at once.
        cpus_per_attempt: Ray CPUs each attempt reserves (on a cluster: the floor for a
            task whose ``task.toml`` declares none).
        per_node: on a cluster, the most attempts one node runs at once (None: as many
            as its CPUs and memory hold).
    """

    name = "ray"
    settings_model = RayExecutorSettings

    def __init__(self, address: str | None = _RAY.address, workers: int = _RAY.workers,
                 cpus_per_attempt: float = _RAY.cpus_per_attempt,
                 per_node: int | None = _RAY.per_node) -> None:
        self.address, self.workers, self.cpus = address, workers, cpus_per_attempt
        self.per_node = per_node
        self._owns_ray = False
        self._nodes = NodePool()

    def _connect(self, ray: Any) -> None:
        if ray.is_initialized():
            return
        if self.address is None:
            ray.init(num_cpus=max(1, int(self.workers * self.cpus + 0.999)),
                     include_dashboard=False, log_to_driver=False,
                     logging_level="WARNING")
        else:
            ray.init(address=self.address, log_to_driver=False, logging_level="WARNING")
        self._owns_ray = True

    def prepare(self, panel: Panel, report: Report) -> bool:
        """On a cluster: check every node and prepare its environment (its engine's task
        images) before the panel starts; False when there is no cluster (a local Ray on
        this machine: the driver prepares its own environment as for the local pool).

        Raises:
            PreflightError: a task fits no node, or a node cannot run the panel (named).
        """
        if self.address is None:
            return False
        import ray

        self._connect(ray)
        nodes = alive_nodes(ray)
        check_fits(panel.tasks.values(), nodes, self.cpus)
        self._nodes.prepare(ray, panel, nodes, report, wait=True)
        return True

    def run(self, panel: Panel, queue: JobQueue, on_start: OnStart, on_done: OnDone) -> None:
        """Run the queue's jobs on the cluster, ``workers`` at a time (on a cluster: each
        placed on a prepared node where its task's resources fit)."""
        import ray

        self._connect(ray)
        remote = ray.remote(ray_attempt)
        running: dict[Any, AttemptJob] = {}
        config = ray.put(panel.config)  # once; every task reads it from the object store
        sweep = _sweeper(ray, config, panel_digest(panel))
        try:
            if self.address is None:
                self._run_local(ray, remote, config, panel, queue, running, on_start, on_done)
            else:
                self._run_placed(ray, remote, config, panel, queue, running, on_start,
                                 on_done)
            sweep()
        except KeyboardInterrupt:
            _abandon(ray, running, panel, on_done)
            sweep()
            raise
        finally:
            if self._owns_ray:
                ray.shutdown()
                self._owns_ray = False

    def _run_local(self, ray: Any, remote: Any, config: Any, panel: Panel, queue: JobQueue,
                   running: dict[Any, AttemptJob], on_start: OnStart,
                   on_done: OnDone) -> None:
        while queue or running:
            while queue and len(running) < self.workers:
                job = queue.popleft()
                on_start(job)
                running[remote.options(num_cpus=self.cpus, max_retries=0,
                                       retry_exceptions=False).remote(config, job)] = job
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.25)
            for ref in ready:
                job = running.pop(ref)
                record = _collect(ray, ref, job, panel)
                if record is not None:
                    on_done(job, record)

    def _run_placed(self, ray: Any, remote: Any, config: Any, panel: Panel,
                    queue: JobQueue, running: dict[Any, AttemptJob], on_start: OnStart,
                    on_done: OnDone) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        placement = Placement(self.per_node)
        where: dict[Any, tuple[Node, Demand]] = {}
        refresh_at = 0.0
        while queue or running:
            if time.monotonic() >= refresh_at:
                placement.update(self._nodes.ready(ray, panel, _stderr))
                refresh_at = time.monotonic() + NODE_REFRESH_S
            while queue and len(running) < self.workers:
                need = demand(panel.tasks[queue[0].item.task], self.cpus)
                node = placement.pick(need)
                if node is None:
                    break
                job = queue.popleft()
                on_start(job)
                placement.hold(node, need)
                ref = remote.options(
                    num_cpus=need.cpus, memory=need.memory or None, max_retries=0,
                    retry_exceptions=False,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id,
                                                                       soft=False),
                ).remote(config, job)
                running[ref], where[ref] = job, (node, need)
            if not running:
                if not placement.nodes and not self._nodes.pending:
                    raise FireExpError(
                        "executor=ray: no node of the cluster can take the attempts still "
                        "owed (every node lost or unprepared); what finished is recorded: "
                        "resume the run when nodes are back")
                time.sleep(0.25)
                refresh_at = 0.0
                continue
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.25)
            for ref in ready:
                job = running.pop(ref)
                node, need = where.pop(ref)
                placement.release(node.node_id, need)
                record = _collect(ray, ref, job, panel, node.name)
                if record is not None and record.cause in INFRASTRUCTURE_CAUSES:
                    # A lost worker or engine: the node checks its engine again before
                    # it takes more work, and the driver looks at the nodes again.
                    self._nodes.prepared.pop(node.node_id, None)
                    refresh_at = 0.0
                if record is not None:
                    on_done(job, record)


NODE_REFRESH_S = 5.0  # how often the driver looks for nodes that joined or died


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class NodePool:
    """The nodes prepared for this panel, and the preparations under way (driver side)."""

    def __init__(self) -> None:
        self.prepared: dict[str, Node] = {}  # node id -> node
        self.engines: set[str] = set()  # engines whose task images are prepared
        self.pending: dict[Any, Node] = {}  # preparation ref -> node
        self.left_out: dict[str, str] = {}  # node id -> why its last preparation failed

    def _launch(self, ray: Any, panel: Panel, node: Node) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return ray.remote(prepare_node).options(
            num_cpus=0, max_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
        ).remote(panel.config, panel_digest(panel), frozenset(self.engines))

    def prepare(self, ray: Any, panel: Panel, nodes: list[Node], report: Report,
                wait: bool) -> None:
        """Prepare ``nodes`` (all at once); ``wait``: refuse if any cannot run the panel,
        else report the failure and leave the node out."""
        for node in nodes:
            if node.node_id not in self.prepared and node not in self.pending.values():
                self.pending[self._launch(ray, panel, node)] = node
        if wait:
            while self.pending:
                self._settle(ray, report, refuse=True, timeout=None)

    def _settle(self, ray: Any, report: Report, refuse: bool, timeout: float | None) -> None:
        done, _ = ray.wait(list(self.pending), num_returns=1 if timeout is None else
                           len(self.pending), timeout=timeout)
        for ref in done:
            node = self.pending.pop(ref)
            try:
                ready: NodeReady = ray.get(ref)
            except ray.exceptions.RayError as exc:
                ready = NodeReady(engine="", lines=(), error=f"{type(exc).__name__}: {exc}")
            for line in ready.lines:
                report(f"node {node.name}: {line}")
            if ready.error is not None:
                if refuse:
                    raise PreflightError(f"node {node.name}: {ready.error}",
                                         "fix that node, or stop it (ray stop on it)")
                if self.left_out.get(node.node_id) != ready.error:  # say it once
                    report(f"node {node.name}: left out: {ready.error}")
                self.left_out[node.node_id] = ready.error
                continue
            self.left_out.pop(node.node_id, None)
            self.engines.add(ready.engine)
            self.prepared[node.node_id] = node

    def ready(self, ray: Any, panel: Panel, report: Report) -> list[Node]:
        """The live, prepared nodes; a node that joined starts its preparation now, a node
        that died is dropped with its preparation."""
        if self.pending:
            self._settle(ray, report, refuse=False, timeout=0)
        alive = alive_nodes(ray)
        ids = {n.node_id for n in alive}
        for ref, node in list(self.pending.items()):
            if node.node_id not in ids:  # a task pinned to a dead node may never end
                del self.pending[ref]
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001, S110 - the node is gone; nothing to stop
                    pass
                report(f"node {node.name}: left out: the node died")
        self.prepare(ray, panel, [n for n in alive if n.node_id not in self.prepared],
                     report, wait=False)
        return [n for n in alive if n.node_id in self.prepared]


def _collect(ray: Any, ref: Any, job: AttemptJob, panel: Panel, node: str = ""
             ) -> AttemptRecord | None:
    """The attempt's record, its logs unpacked into the run folder; None if cancelled. On a
    cluster (``node``) the record names the node that ran it."""
    on = f" (node {node})" if node else ""
    try:
        result = ray.get(ref)
    except ray.exceptions.TaskCancelledError:
        return None
    except ray.exceptions.RayTaskError as exc:
        if isinstance(getattr(exc, "cause", None), ProtocolError):
            raise exc.cause from None  # the run stops (run_attempt)
        record = harness_failure(panel, job, f"the Ray task failed{on}: {exc}")
    except ray.exceptions.RayError as exc:  # worker or node died, object lost
        record = harness_failure(
            panel, job, f"the Ray worker was lost{on}: {type(exc).__name__}: {exc}")
    else:
        record = received(panel, job, *result)
    return record.model_copy(update={"node": node}) if node else record


def received(panel: Panel, job: AttemptJob, record_json: dict[str, Any] | None,
             load_error: str | None, logs: bytes) -> AttemptRecord:
    """The record of what :func:`ray_attempt` returned, its logs unpacked into the run
    folder; a worker that could not build the panel gives an invalid harness failure."""
    if record_json is None:
        return harness_failure(panel, job, str(load_error),
                               invalid_reason=f"{LOAD_FAILED}: {load_error}")
    _unpack(logs, Path(job.attempt_dir))
    return AttemptRecord.model_validate(record_json)


def _abandon(ray: Any, running: dict[Any, AttemptJob], panel: Panel, on_done: OnDone) -> None:
    """Cancel the tasks in flight, wait for them; record those that had finished."""
    for ref in running:
        ray.cancel(ref, force=False)  # KeyboardInterrupt in the task: it stops its env
    pending = list(running)
    while pending:
        try:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=CANCEL_WAIT_S)
            break
        except KeyboardInterrupt:
            continue  # a second Ctrl-C: keep waiting, the attempts are stopping
    for ref, job in running.items():
        if ref in pending:
            continue
        record = _collect(ray, ref, job, panel)
        if record is not None and record.cause is not Cause.CANCELLED:
            on_done(job, record)  # it finished before it saw the interrupt


def _sweeper(ray: Any, config: Any, digest: str) -> Callable[[], None]:
    """Runs :func:`sweep_node` once on every live node of the cluster."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    def sweep() -> None:
        refs = [ray.remote(sweep_node).options(
            num_cpus=0, max_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
        ).remote(config, digest) for node in ray.nodes() if node.get("Alive")]
        ray.wait(refs, num_returns=len(refs), timeout=60)

    return sweep
