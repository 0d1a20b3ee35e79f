"""A Docker engine's part in a panel: the client, the images prepared before the first
attempt (each task's, and each task's with the agent's CLI in it, tried once), and the
containers of dead runs reaped. ``DockerEnvironment``'s class methods call these; the
containers themselves are ``docker.py``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fire_exp.environments.agent_install import AgentInstall
from fire_exp.environments.base import EnvironmentFailure
from fire_exp.environments.docker_install import prepare_cli_image, try_binary
from fire_exp.environments.egress_firewall import HOW_TO_FIX, cannot_confine
from fire_exp.environments.images import ensure_task_image, owner_labels
from fire_exp.errors import PreflightError
from fire_exp.tasks.model import Task


def docker_client() -> Any:
    """``docker.from_env()``, or EnvironmentFailure saying the engine cannot be reached."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001 - any failure here means no engine
        raise EnvironmentFailure(f"cannot reach the Docker engine: {exc}") from exc


def task_image(client: Any, task: Task, base_image: str, bootstrap_base: bool) -> str:
    """The image ``task`` runs in: built from its Dockerfile (cached by content digest), or
    its ``docker_image``, pulled if this engine lacks it. Raises EnvironmentFailure."""
    image = task.environment.docker_image
    if image is None:
        return ensure_task_image(client, task, base_image, bootstrap_base=bootstrap_base)
    import docker.errors

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        try:
            client.images.pull(image)
        except docker.errors.APIError as exc:
            raise EnvironmentFailure(f"task {task.name}: image {image} is not on "
                                     f"this engine and cannot be pulled: {exc}") from exc
    return image


def prepare_cli_images(install: AgentInstall, tasks: Sequence[Task], base_image: str,
                       bootstrap_base: bool) -> None:
    """Install the CLI into every task's image (cached) and run ``command -v BINARY`` in a
    throwaway container of each, so a broken install step stops the panel; a task without
    network needs the egress filter (``egress_firewall.py``) this process can install, or
    the panel stops before its first attempt."""
    if any(task.environment.network_mode != "public" for task in tasks):
        reason = cannot_confine()
        if reason is not None:
            raise PreflightError(f"environment=docker, agent={install.agent}: {reason}",
                                 HOW_TO_FIX)
    client = docker_client()
    tried: set[str] = set()
    try:
        for task in tasks:
            image = prepare_cli_image(client, install.agent,
                                      task_image(client, task, base_image, bootstrap_base),
                                      install.spec)
            if image not in tried:
                try_binary(client, image, install, owner_labels())
                tried.add(image)
    finally:
        client.close()


def prepare_task_images(tasks: Sequence[Task], report: Callable[[str], None],
                        base_image: str, bootstrap_base: bool) -> None:
    """Build (or find cached) every task's image, one progress line each."""
    client = docker_client()
    try:
        for i, task in enumerate(tasks, start=1):
            t0 = time.monotonic()
            image = task_image(client, task, base_image, bootstrap_base)
            report(f"image [{i}/{len(tasks)}] {task.name}: {image} "
                   f"({time.monotonic() - t0:.1f}s)")
    finally:
        client.close()


def reap_orphans(run_dir: Path | None, scratch: Path | None) -> int:
    """Remove the containers of runs provably dead on this engine (see docker_cleanup);
    how many."""
    from fire_exp.environments.docker_cleanup import cleanup

    client = docker_client()
    try:
        return len(cleanup(client, own_run=run_dir, scratch=scratch).containers)
    finally:
        client.close()
