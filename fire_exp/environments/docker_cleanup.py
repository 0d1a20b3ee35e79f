"""Find and remove what fire-exp left on the Docker engine (``fire-exp cleanup``).

Every container, image and network fire-exp makes carries the label ``fire-exp=1``.
A container also names its owner (``fire-exp.owner-host``, ``fire-exp.owner-pid``): one
whose owner still runs on this host belongs to a live run and is kept unless ``everything``
is asked for. Task images are removed on request (they are a cache); the base image only
when asked by name, since rebuilding it needs the Debian mirror.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any

from fire_exp.environments.images import LABEL
from fire_exp.environments.session_host import is_alive


@dataclass
class CleanupReport:
    """What ``cleanup`` removed, kept and could not remove."""

    containers: list[str] = field(default_factory=list)
    kept_live: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def owner_alive(labels: dict[str, str]) -> bool:
    """Whether the process that made a container still runs (on this host)."""
    if labels.get(f"{LABEL}.owner-host") != socket.gethostname():
        return False
    try:
        pid = int(labels.get(f"{LABEL}.owner-pid", ""))
    except ValueError:
        return False
    return pid == os.getpid() or is_alive(pid)


def cleanup(client: Any, *, everything: bool = False, images: bool = False,
            base: bool = False) -> CleanupReport:
    """Remove fire-exp's containers (of dead owners, or all), then networks and images."""
    report = CleanupReport()
    for container in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}):
        if not everything and owner_alive(container.labels):
            report.kept_live.append(container.name)
            continue
        try:
            container.remove(force=True)
            report.containers.append(container.name)
        except Exception as exc:  # noqa: BLE001 - reported, the rest goes on
            report.errors.append(f"container {container.name}: {exc}")
    for network in client.networks.list(filters={"label": f"{LABEL}=1"}):
        try:
            network.remove()
            report.networks.append(network.name)
        except Exception as exc:  # noqa: BLE001
            report.errors.append(f"network {network.name}: {exc}")
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
    return report
