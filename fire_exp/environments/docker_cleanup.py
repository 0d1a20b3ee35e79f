"""Find and remove what fire-exp left on the Docker engine (run starts, ``fire-exp cleanup``).

Every container, image and network fire-exp makes carries the label ``fire-exp=1``. An
attempt's container also names its owner (``fire-exp.owner-host``, ``fire-exp.owner-pid``,
``fire-exp.owner-start``: its start time, as a pid is used again once the pids wrap),
its run (``fire-exp.run``, ``fire-exp.run-dir``) and whether it is kept for inspection
(``fire-exp.keep``). A container is *provably dead* only when it was made on this host, its
owning process is gone, and its run folder's lock (``attempts.lock``) is free. Everything
else is kept: another host's containers (its pids mean nothing here), a live run's, and
``keep_container`` ones, which only ``fire-exp cleanup --run RUN`` or ``--all`` removes.
Engines shared by several panels are therefore safe: a run start removes only the dead.

On a Ray node the owner is the node's Ray worker, which outlives its attempts, so a dead
owner is not the only proof: an attempt there makes its scratch folder before its container
and removes it once the attempt has ended (``runner/ray_executor.py``), so a container whose
scratch folder is gone is an ended attempt's, whatever its owner (``scratch=``).

Networks (the shared ``fire-exp-egress``) belong to no run: a live run may be between two
attempts, with no container on the network yet about to start one. Only ``--all`` removes
them, and only those with fire-exp's label and no container attached (inspected one by one:
a listing of networks does not say which containers use them); a run start and a plain
``fire-exp cleanup`` keep them and say so.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path
from typing import Any

from fire_exp.environments.images import LABEL, image_exists
from fire_exp.environments.inbox.procs import is_alive, start_time
from fire_exp.environments.upkeep import CleanupReport

__all__ = ["CleanupReport", "cleanup", "lock_free", "remove_idle_networks", "remove_runtimes",
           "why_kept"]


def lock_free(run_dir: Path) -> bool:
    """Whether no process holds the run folder's lock (a missing lock file is free)."""
    try:
        fd = os.open(run_dir / "attempts.lock", os.O_RDONLY)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # cannot tell: not provably dead
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def why_kept(labels: dict[str, str], *, own_run: Path | None = None,
             scratch: Path | None = None) -> str | None:
    """Why a container is not provably dead (None: it is, and may go).

    Args:
        labels: the container's labels.
        own_run: the run folder the caller holds the lock of; containers of that run made
            by another (dead) process are a dead driver's, as in ``runner.cleanup.reap``.
        scratch: a Ray node's scratch root; a container whose run folder lay in a scratch
            folder under it that is gone belongs to an attempt that has ended.
    """
    host = labels.get(f"{LABEL}.owner-host")
    if host != socket.gethostname():
        return f"made on host {host or 'unknown'}, not this one"
    if scratch is not None and labels.get(f"{LABEL}.keep") != "1" and \
            _scratch_gone(labels.get(f"{LABEL}.run-dir"), scratch):
        return None
    try:
        pid = int(labels.get(f"{LABEL}.owner-pid", ""))
    except ValueError:
        return "its owner is unknown"
    # The pid with its start time names one process; a container made before owners
    # carried it (no label) is judged by the pid alone, alive if any process has it.
    start = labels.get(f"{LABEL}.owner-start")
    if pid == os.getpid() or (is_alive(pid) and (not start or start_time(pid) == start)):
        return f"its run is alive (pid {pid})"
    if labels.get(f"{LABEL}.keep") == "1":
        return "kept for inspection (keep_container)"
    run_dir = labels.get(f"{LABEL}.run-dir")
    if run_dir and own_run is not None and Path(run_dir) == own_run.resolve():
        return None
    if run_dir and not lock_free(Path(run_dir)):
        return f"its run folder {run_dir} is locked by a live run"
    return None


def _scratch_gone(run_dir: str | None, scratch: Path) -> bool:
    """Whether ``run_dir`` lay in an attempt's scratch folder under ``scratch`` that is gone."""
    if not run_dir:
        return False
    try:
        folder = Path(run_dir).relative_to(scratch.resolve()).parts[0]
    except (ValueError, IndexError):
        return False  # not a scratch folder of this node
    return not (scratch / folder).exists()


def _removable(container: Any, run: str | None, everything: bool,
               own_run: Path | None, scratch: Path | None) -> str | None:
    labels = container.labels or {}
    if everything:
        return None
    reason = why_kept(labels, own_run=own_run, scratch=scratch)
    named = run is not None and labels.get(f"{LABEL}.run") == run
    if named and reason == "kept for inspection (keep_container)":
        return None  # --run RUN asks for this run's kept containers too
    return reason


def cleanup(client: Any, *, everything: bool = False, images: bool = False,
            base: bool = False, run: str | None = None,
            own_run: Path | None = None, scratch: Path | None = None) -> CleanupReport:
    """Remove fire-exp's provably dead containers (or all), then networks and images.

    Args:
        client: a Docker client.
        everything: remove every fire-exp container, live or not, of any host.
        images, base: also remove the task images / the base images.
        run: only containers of the run of this name (``fire-exp.run``).
        own_run: the caller's locked run folder (a run start).
        scratch: a Ray node's scratch root (see :func:`why_kept`).
    """
    import docker.errors

    report = CleanupReport()
    filters = [f"{LABEL}=1"] + ([f"{LABEL}.run={run}"] if run is not None else [])
    # ignore_removed: another panel may remove its container between the listing and the
    # inspection of each (two panels on one engine); that container is simply gone.
    for container in client.containers.list(all=True, filters={"label": filters},
                                            ignore_removed=True):
        reason = _removable(container, run, everything, own_run, scratch)
        if reason is not None:
            report.kept.append((container.name, reason))
            continue
        try:
            container.remove(force=True)
            report.containers.append(container.name)
        except docker.errors.NotFound:
            continue  # removed meanwhile by its own panel (or its --rm): simply gone
        except docker.errors.APIError as exc:
            if exc.status_code == 409 and "already in progress" in str(exc):
                continue  # another panel's cleanup is removing it right now
            report.errors.append(f"container {container.name}: {exc}")
        except Exception as exc:  # noqa: BLE001 - reported, the rest goes on
            report.errors.append(f"container {container.name}: {exc}")
    if run is None and own_run is None and scratch is None:  # the user's, not a run's
        if everything:
            remove_idle_networks(client, report)
        else:
            report.kept_networks += [(n.name, "shared by fire-exp's runs") for n in
                                     client.networks.list(filters={"label": f"{LABEL}=1"})]
        _images(client, report, images=images, base=base)
    return report


def remove_idle_networks(client: Any, report: CleanupReport,
                         labels: tuple[str, ...] = ()) -> None:
    """Remove the networks with fire-exp's label (and ``labels``) that no container uses.

    Each network is inspected afresh: a listing leaves ``Containers`` empty.
    """
    import docker.errors

    for network in client.networks.list(filters={"label": [f"{LABEL}=1", *labels]}):
        try:
            network.reload()
        except docker.errors.NotFound:
            continue  # removed meanwhile by someone else
        attached = network.attrs.get("Containers") or {}
        if attached:
            names = sorted(str(c.get("Name", key)) for key, c in attached.items())
            report.kept_networks.append((network.name, f"in use by {', '.join(names)}"))
            continue
        try:
            network.remove()
            report.networks.append(network.name)
        except docker.errors.NotFound:
            continue
        except Exception as exc:  # noqa: BLE001 - reported, the rest goes on
            report.errors.append(f"network {network.name}: {exc}")


def remove_runtimes(client: Any, report: CleanupReport, *, base: bool = False) -> None:
    """Remove the box runtimes (``docker_runtime.py``) made from a base image that is gone,
    or every one with ``base``; one a container uses stays (the engine refuses)."""
    import docker.errors

    from fire_exp.environments.docker_runtime import runtime_volumes

    for volume in runtime_volumes(client):
        made_from = (volume.attrs.get("Labels") or {}).get(f"{LABEL}.base", "")
        if not base and made_from and image_exists(client, made_from):
            continue
        try:
            volume.remove()
            report.volumes.append(volume.name)
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # 409: in use by a container now
                report.errors.append(f"volume {volume.name}: {exc}")


def _images(client: Any, report: CleanupReport, *, images: bool, base: bool) -> None:
    if images or base:
        kinds = {"task", "cli"} | ({"base"} if base else set())
        for image in client.images.list(filters={"label": f"{LABEL}=1"}):
            if image.labels.get(f"{LABEL}.kind") not in kinds:
                continue
            name = image.tags[0] if image.tags else image.short_id
            try:
                client.images.remove(image.id, force=True)
                report.images.append(name)
            except Exception as exc:  # noqa: BLE001
                report.errors.append(f"image {name}: {exc}")
    remove_runtimes(client, report, base=base)
