"""Base images without a registry: build a Debian root file system and ``docker import`` it.

Nothing can be pulled on fire-exp's machines, so the bundled tasks build ``FROM`` an image
that this module makes from Debian packages alone: ``mmdebstrap`` (preferred) or
``debootstrap`` writes a minimal bookworm tree with the tools the tasks need, and the
Docker engine imports it as ``fire-exp/base:bookworm`` with the ``fire-exp=1`` label.
Both tools read the machine's configured apt sources, so this works wherever
``apt-get install`` does.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from fire_exp.environments.failure import EnvironmentFailure
from fire_exp.environments.host_lock import host_lock
from fire_exp.environments.inbox.procs import start_time
from fire_exp.environments.upkeep import BootstrapResult
from fire_exp.errors import FireExpError
from fire_exp.files import load_yaml
from fire_exp.tasks.model import Task, task_digest

BASE_IMAGE = "fire-exp/base:bookworm"
SUITE = "bookworm"
# What the bundled tasks need, and what an agent expects of a terminal.
PACKAGES = ("python3", "bash", "coreutils", "procps", "sqlite3", "curl", "ca-certificates",
            "git", "jq", "file", "netcat-openbsd", "iproute2")
LABEL = "fire-exp"
_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
_IMAGE_CONFIG = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["/bin/bash"]',
)


class BootstrapError(FireExpError):
    """The base image could not be built."""


def find_tool() -> str:
    """``mmdebstrap`` or ``debootstrap``, whichever is installed (mmdebstrap first)."""
    for tool in ("mmdebstrap", "debootstrap"):
        if shutil.which(tool):
            return tool
    raise BootstrapError("neither mmdebstrap nor debootstrap is installed "
                         "(run: apt-get install mmdebstrap)")


def _mirror_args() -> list[str]:
    """The machine's apt sources as mmdebstrap mirror arguments (deb822 or one-line)."""
    if _SOURCES.is_file():
        return [str(_SOURCES)]
    legacy = Path("/etc/apt/sources.list")
    return [str(legacy)] if legacy.is_file() and legacy.read_text().strip() else []


def _first_mirror() -> str:
    """debootstrap wants one mirror URL: the first of the machine's apt sources."""
    for path in (_SOURCES, Path("/etc/apt/sources.list")):
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            words = line.split()
            if words[:1] == ["URIs:"] and len(words) > 1:
                return words[1]
            if words[:1] == ["deb"]:
                urls = [w for w in words[1:] if "://" in w]
                if urls:
                    return urls[0]
    return "http://deb.debian.org/debian"


def _run(cmd: list[str], log: Path) -> None:
    with open(log, "wb") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-1500:]
        raise BootstrapError(f"{cmd[0]} exited {proc.returncode}:\n{tail}")


def build_rootfs(tool: str, out_tar: Path, suite: str = SUITE,
                 packages: tuple[str, ...] = PACKAGES) -> None:
    """Write a minimal Debian root file system as a tarball."""
    log = out_tar.with_suffix(".log")
    if tool == "mmdebstrap":
        _run(["mmdebstrap", "--variant=minbase", f"--include={','.join(packages)}",
              "--aptopt=Acquire::Retries \"3\"", suite, str(out_tar), *_mirror_args()], log)
        return
    root = out_tar.parent / "rootfs"
    _run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", suite,
          str(root), _first_mirror()], log)
    with tarfile.open(out_tar, "w") as tar:
        for child in sorted(root.iterdir()):
            tar.add(child, arcname=child.name)


def image_exists(client: Any, tag: str) -> str | None:
    """The id of image ``tag``, or None."""
    import docker.errors

    try:
        return str(client.images.get(tag).id)
    except docker.errors.ImageNotFound:
        return None


def bootstrap_base_image(tag: str = BASE_IMAGE, *, force: bool = False, client: Any = None,
                         suite: str = SUITE, packages: tuple[str, ...] = PACKAGES
                         ) -> BootstrapResult:
    """Build and import the base image unless it exists (``force``: rebuild it anyway).

    Raises:
        BootstrapError: no bootstrap tool, the tool failed, or the import failed.
    """
    import docker

    client = client or docker.from_env()
    existing = image_exists(client, tag)
    if existing and not force:
        return BootstrapResult(tag=tag, image_id=existing, built=False)
    tool = find_tool()
    start = time.monotonic()
    repository, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "")
    changes = [*_IMAGE_CONFIG, f"LABEL {LABEL}=1 {LABEL}.kind=base {LABEL}.suite={suite}"]
    with tempfile.TemporaryDirectory(prefix="fire-exp-base-") as tmp:
        out = Path(tmp) / "rootfs.tar"
        build_rootfs(tool, out, suite, packages)
        try:
            client.api.import_image_from_file(str(out), repository=repository,
                                              tag=version or "latest", changes=changes)
        except docker.errors.APIError as exc:
            raise BootstrapError(f"docker import of {tag} failed: {exc}") from exc
    image_id = image_exists(client, tag)
    if image_id is None:
        raise BootstrapError(f"docker import reported success but {tag} is not there")
    return BootstrapResult(tag=tag, image_id=image_id, built=True, tool=tool,
                           seconds=round(time.monotonic() - start, 1))


# Task images ---------------------------------------------------------------------------

_BUILD_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def _lock_for(key: str) -> threading.Lock:
    with _LOCKS_LOCK:
        return _BUILD_LOCKS.setdefault(key, threading.Lock())


def slug(text: str, limit: int = 60) -> str:
    """``text`` as a Docker name component (lower case, ``[a-z0-9_.-]``)."""
    out = re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.")
    return (out or "task")[:limit]


def context_digest(task: Task) -> str:
    """The content digest of what the task's image is built from (``environment/``).

    Only the build context goes into the image, so a change to ``tests/`` or
    ``solution/`` does not rebuild it; any change to ``environment/`` does.
    """
    return task_digest(task.environment_dir)


def task_image_tag(task: Task, base_image: str) -> str:
    """``fire-exp/task-NAME:DIGEST12``: the build context's digest and the base image."""
    key = f"{context_digest(task)}\0{base_image}"
    return f"fire-exp/task-{slug(task.name)}:{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _build_log_tail(log: Any, limit: int = 1500) -> str:
    lines = []
    for chunk in log or []:
        if isinstance(chunk, dict):
            lines.append(str(chunk.get("stream") or chunk.get("error") or "").rstrip())
    return "\n".join(ln for ln in lines if ln)[-limit:]


def ensure_task_image(client: Any, task: Task, base_image: str, *,
                      bootstrap_base: bool = True) -> str:
    """The task's image tag, built from ``environment/Dockerfile`` unless already cached.

    Raises:
        EnvironmentFailure: the build failed, timed out, or its base image is missing.
    """
    tag = task_image_tag(task, base_image)
    with _lock_for(tag), host_lock(f"image {tag}"):  # built once, by one process
        if image_exists(client, tag):
            return tag
        context, dockerfile = build_context(task)
        _ensure_base(client, base_image, context / dockerfile, bootstrap_base)
        _build(client, task, tag, base_image, context, dockerfile)
    return tag


def build_context(task: Task) -> tuple[Path, str]:
    """The build context and Dockerfile of a task: ``environment/Dockerfile``, or the
    ``build`` of service ``main`` in ``environment/docker-compose.yaml``."""
    env_dir = task.environment_dir
    if (env_dir / "Dockerfile").is_file():
        return env_dir, "Dockerfile"
    for name in ("docker-compose.yaml", "docker-compose.yml"):
        compose = env_dir / name
        if compose.is_file():
            main = ((load_yaml(compose) or {}).get("services") or {}).get("main")
            build = main.get("build") if isinstance(main, dict) else None
            if isinstance(build, str):
                return (env_dir / build).resolve(), "Dockerfile"
            if isinstance(build, dict):
                return ((env_dir / str(build.get("context", "."))).resolve(),
                        str(build.get("dockerfile", "Dockerfile")))
            raise EnvironmentFailure(f"task {task.name}: {name} has no service 'main' with "
                                     "a build section")
    raise EnvironmentFailure(f"task {task.name}: no environment/Dockerfile and no "
                             "[environment].docker_image")


def _ensure_base(client: Any, base_image: str, dockerfile: Path, bootstrap: bool) -> None:
    if "BASE_IMAGE" in dockerfile.read_text(errors="replace"):
        ensure_base_image(client, base_image, bootstrap)


def ensure_base_image(client: Any, base_image: str, bootstrap: bool) -> None:
    """``base_image`` on the engine: there already, or bootstrapped when it is fire-exp's
    own and ``bootstrap`` allows. Raises EnvironmentFailure otherwise."""
    if image_exists(client, base_image):
        return
    if bootstrap and base_image == BASE_IMAGE:
        with _lock_for(base_image), host_lock(f"image {base_image}"):
            try:
                bootstrap_base_image(base_image, client=client)
            except BootstrapError as exc:
                raise EnvironmentFailure(f"base image {base_image}: {exc}") from exc
        return
    raise EnvironmentFailure(f"base image {base_image} is not on this Docker engine "
                             "(run: fire-exp images bootstrap)")


def _build(client: Any, task: Task, tag: str, base_image: str, context: Path,
           dockerfile: str) -> None:
    import docker.errors

    outcome: dict[str, BaseException] = {}

    def build() -> None:
        try:
            client.images.build(
                path=str(context), dockerfile=dockerfile, tag=tag,
                buildargs={"BASE_IMAGE": base_image},
                labels={LABEL: "1", f"{LABEL}.kind": "task", f"{LABEL}.task": task.name,
                        f"{LABEL}.digest": context_digest(task)},
                rm=True, forcerm=True, pull=False)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = exc

    worker = threading.Thread(target=build, daemon=True, name=f"build-{tag}")
    worker.start()
    worker.join(task.environment.build_timeout_sec)
    if worker.is_alive():
        raise EnvironmentFailure(f"task {task.name}: image build timed out after "
                                 f"{task.environment.build_timeout_sec:.0f} s")
    exc = outcome.get("error")
    if isinstance(exc, docker.errors.BuildError):
        raise EnvironmentFailure(f"task {task.name}: image build failed: {exc.msg}\n"
                                 f"{_build_log_tail(exc.build_log)}") from exc
    if exc is not None:
        raise EnvironmentFailure(f"task {task.name}: image build failed: "
                                 f"{type(exc).__name__}: {exc}") from exc


def owner_labels() -> dict[str, str]:
    """Labels naming the process that owns a container (``fire-exp cleanup`` checks it):
    its host, pid and start time (a pid is used again once the pids wrap)."""
    return {LABEL: "1", f"{LABEL}.owner-host": socket.gethostname(),
            f"{LABEL}.owner-pid": str(os.getpid()),
            f"{LABEL}.owner-start": start_time(os.getpid()) or ""}
