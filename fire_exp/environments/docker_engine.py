"""A Docker engine's part in a panel: the client, the engine's identity, the images
prepared before the first attempt (each task's, and each task's with the agent's CLI in
it, tried once), the containers of dead runs reaped, and ``fire-exp cleanup`` and
``fire-exp images`` on it. ``DockerEnvironment``'s class methods call these; the
containers themselves are ``docker.py``'s.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from fire_exp.environments.agent_install import AgentInstall
from fire_exp.environments.base import DEFAULT_FETCH_CAP_MB, Environment, EnvironmentFailure
from fire_exp.environments.docker_install import prepare_cli_image, try_binary
from fire_exp.environments.docker_runtime import KIND, ensure_runtime, runtime_volumes
from fire_exp.environments.egress_firewall import HOW_TO_FIX, cannot_confine
from fire_exp.environments.images import (
    BASE_IMAGE,
    LABEL,
    bootstrap_base_image,
    ensure_base_image,
    ensure_task_image,
    image_exists,
    owner_labels,
)
from fire_exp.environments.upkeep import BootstrapResult, CleanupReport, ImageEntry
from fire_exp.errors import PreflightError
from fire_exp.settings import Settings, ceiling
from fire_exp.tasks.model import Task


class DockerSettings(Settings):
    """``configs/environment/docker.yaml``: the Docker backend's settings, and their
    defaults, in one place (``DockerEnvironment`` and its class methods take them).

    Attributes:
        base_image: passed to a task's Dockerfile as build argument ``BASE_IMAGE``.
        bootstrap_base: build ``fire-exp/base:bookworm`` on first use when it is missing.
        public_network: the Docker network of tasks whose network mode is ``public``.
        pids_limit: the most processes a container may hold (a fork bomb stops there).
        fetch_cap_mb: the most MB of the box's files one attempt brings home.
        keep_container: leave each attempt's container for inspection (debugging only).
    """

    base_image: str = BASE_IMAGE
    bootstrap_base: bool = True
    public_network: str = "bridge"
    pids_limit: Annotated[int, Field(ge=1), ceiling(1_000_000)] = 4096
    fetch_cap_mb: Annotated[int, Field(ge=1)] = DEFAULT_FETCH_CAP_MB
    keep_container: bool = False


DOCKER = DockerSettings()


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
    """Build (or find cached) every task's image, one progress line each, then the box
    runtime (``docker_runtime.py``)."""
    client = docker_client()
    try:
        for i, task in enumerate(tasks, start=1):
            t0 = time.monotonic()
            image = task_image(client, task, base_image, bootstrap_base)
            report(f"image [{i}/{len(tasks)}] {task.name}: {image} "
                   f"({time.monotonic() - t0:.1f}s)")
        t0 = time.monotonic()
        ensure_base_image(client, base_image, bootstrap_base)
        volume = ensure_runtime(client, base_image)
        report(f"box runtime from {base_image}: volume {volume} "
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


def _identity(base_image: str) -> str:
    """The identity of the engine this process reaches: its ID, name and data root. The ID
    alone is not one: engines whose hosts were cloned with one ``/etc/docker/key.json``
    report the same ID, and a node on the second would skip building images it lacks.
    Raises PreflightError when the engine lacks the base image."""
    client = docker_client()
    try:
        if image_exists(client, base_image) is None:
            raise PreflightError(f"base image {base_image} is not on its Docker engine "
                                 f"({os.environ.get('DOCKER_HOST', 'the default socket')})",
                                 "run fire-exp images bootstrap on the node, or docker "
                                 "save | docker load it there")
        info = client.info()
        return f"docker:{info['ID']}:{info.get('Name', '')}:{info.get('DockerRootDir', '')}"
    finally:
        client.close()


def _cleanup(*, everything: bool, images: bool, base: bool,
                   run: str | None) -> CleanupReport:
    """``fire-exp cleanup`` on the engine this process reaches (docker_cleanup.cleanup)."""
    from fire_exp.environments.docker_cleanup import cleanup

    client = docker_client()
    try:
        return cleanup(client, everything=everything, images=images, base=base, run=run)
    finally:
        client.close()


def _images() -> list[ImageEntry]:
    """fire-exp's images on the engine (label ``fire-exp=1``), one entry per tag, and its
    box runtimes (``docker_runtime.py``), one entry per volume."""
    client = docker_client()
    try:
        images = [ImageEntry(kind=image.labels.get(f"{LABEL}.kind", "?"), tag=tag,
                             size_mb=image.attrs.get("Size", 0) / 1e6)
                  for image in client.images.list(filters={"label": f"{LABEL}=1"})
                  for tag in image.tags or [image.short_id]]
        volumes = runtime_volumes(client)
        if volumes:
            sizes = {v["Name"]: (v.get("UsageData") or {}).get("Size", 0)
                     for v in client.df().get("Volumes") or []}
            images += [ImageEntry(kind=KIND, tag=v.name, size_mb=max(sizes.get(v.name, 0), 0)
                                  / 1e6) for v in volumes]
        return images
    finally:
        client.close()


def _bootstrap(tag: str, force: bool) -> BootstrapResult:
    """Build the base image ``tag`` without a registry (images.bootstrap_base_image)."""
    client = docker_client()
    try:
        return bootstrap_base_image(tag, force=force, client=client)
    finally:
        client.close()


class DockerEngine(Environment):
    """The Docker backend's class methods: what it does around a panel's attempts, on the
    engine this process reaches (``DockerEnvironment`` is one attempt's container)."""

    @classmethod
    def prepare_agent(cls, install: AgentInstall, tasks: Sequence[Task], *,
                      base_image: str = DOCKER.base_image,
                      bootstrap_base: bool = DOCKER.bootstrap_base, **params: Any) -> None:
        """Install the CLI into every task's image and try it (:func:`prepare_cli_images`)."""
        prepare_cli_images(install, tasks, base_image, bootstrap_base)

    @classmethod
    def preflight(cls, **params: Any) -> None:
        """The Docker engine must be reachable."""
        try:
            docker_client().close()
        except EnvironmentFailure as exc:
            raise PreflightError(f"environment={cls.name}: {exc}",
                                 "start the Docker engine, or run with environment=local") \
                from exc

    @classmethod
    def prepare(cls, tasks: Sequence[Task], *, report: Callable[[str], None],
                base_image: str = DOCKER.base_image,
                bootstrap_base: bool = DOCKER.bootstrap_base, **params: Any) -> None:
        """Build (or find cached) every task's image before the first attempt."""
        prepare_task_images(tasks, report, base_image, bootstrap_base)

    @classmethod
    def reap_orphans(cls, run_dir: Path | None = None, *, scratch: Path | None = None,
                     **params: Any) -> int:
        """Remove the containers of runs provably dead on this host (see docker_cleanup)."""
        return reap_orphans(run_dir, scratch)

    @classmethod
    def engine_identity(cls, *, base_image: str = DOCKER.base_image, **params: Any) -> str:
        """The engine's ID, name and data root; PreflightError without the base image."""
        return _identity(base_image)

    @classmethod
    def cleanup(cls, *, everything: bool = False, images: bool = False, base: bool = False,
                run: str | None = None, **params: Any) -> CleanupReport:
        """fire-exp's provably dead containers, then networks and images (docker_cleanup)."""
        return _cleanup(everything=everything, images=images, base=base, run=run)

    @classmethod
    def list_images(cls, **params: Any) -> list[ImageEntry]:
        """fire-exp's images on the engine: base, task and CLI images."""
        return _images()

    @classmethod
    def build_base_image(cls, tag: str | None = None, *, force: bool = False,
                         **params: Any) -> BootstrapResult:
        """``fire-exp/base:bookworm`` (or ``tag``) with mmdebstrap or debootstrap (images.py)."""
        return _bootstrap(tag or BASE_IMAGE, force)
