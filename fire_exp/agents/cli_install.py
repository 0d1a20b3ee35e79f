"""Getting a coding CLI into a task's image: once per task image and install spec, cached.

An agent config's ``install`` block says how (exactly one of these, or none of them):

- ``script``: a shell script run as root in a container of the task's image (on
  ``network``, default ``bridge``, so it can reach a package registry); the container is
  then committed as the derived image. For a machine that can reach the CLI's registry.
- ``image`` + ``paths``: an image that already holds the CLI; the paths are copied into
  the task's image (``COPY --from``). For a machine without the registry: build or load
  that image once elsewhere (``docker save`` / ``docker load``).
- ``host_binary``: an executable on this machine, bind-mounted read-only into every
  container at ``/opt/fire-exp/cli/<name>`` (a static binary such as Codex's); no image.
- none of them: the task's image must already have ``binary`` on its PATH.

The derived image is tagged ``fire-exp/cli-AGENT:IMAGEID12-SPEC12`` (the task image's id
and the install spec's digest) and labelled ``fire-exp=1``, ``fire-exp.kind=cli``, so the
next attempt, run or machine with that engine reuses it. No key is ever present while an
image is made: the install container gets no variables of ours.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_exp.environments.base import EnvironmentFailure
from fire_exp.environments.docker import owner_labels
from fire_exp.environments.docker_session import tar_file
from fire_exp.environments.images import LABEL, image_exists, slug
from fire_exp.errors import InputError

CLI_MOUNT = "/opt/fire-exp/cli"
_SCRIPT_PATH = "/tmp/fire-exp-install.sh"
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


@dataclass(frozen=True)
class InstallSpec:
    """How the CLI gets into the container (see the module docstring)."""

    script: str | None = None
    image: str | None = None
    paths: tuple[str, ...] = ()
    host_binary: str | None = None
    network: str = "bridge"
    timeout_s: float = 900.0

    @classmethod
    def from_config(cls, raw: Any, where: str) -> InstallSpec:
        """Read an agent config's ``install`` block; refuse a malformed one by name."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise InputError(where, "install", "must be a mapping",
                             "give one of script, image (+ paths) or host_binary")
        known = {"script", "image", "paths", "host_binary", "network", "timeout_s"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise InputError(where, f"install.{unknown[0]}", "unknown key",
                             f"use {', '.join(sorted(known))}")
        chosen = [k for k in ("script", "image", "host_binary") if raw.get(k)]
        if len(chosen) > 1:
            raise InputError(where, "install", f"gives {' and '.join(chosen)}",
                             "give exactly one of script, image or host_binary")
        paths = tuple(str(p) for p in raw.get("paths") or ())
        if raw.get("image") and not paths:
            raise InputError(where, "install.paths", "empty while install.image is set",
                             "list the paths to copy out of the image, e.g. /usr/local/bin/codex")
        if any(not p.startswith("/") for p in paths):
            raise InputError(where, "install.paths", "must be absolute paths")
        binary = raw.get("host_binary")
        if binary and not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            raise InputError(where, "install.host_binary", f"{binary} is not an executable "
                             "file on this machine", "point it at the CLI's binary")
        return cls(script=raw.get("script") or None, image=raw.get("image") or None,
                   paths=paths, host_binary=str(Path(binary).resolve()) if binary else None,
                   network=str(raw.get("network") or "bridge"),
                   timeout_s=float(raw.get("timeout_s") or 900.0))

    @property
    def method(self) -> str:
        """``script``, ``image``, ``host_binary`` or ``none``."""
        return "script" if self.script else "image" if self.image else \
            "host_binary" if self.host_binary else "none"

    def digest(self) -> str:
        """The digest of what goes into the derived image (part of its tag)."""
        body: dict[str, Any] = {"script": self.script, "image": self.image,
                                "paths": list(self.paths)}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def binary_in_box(self, binary: str) -> str:
        """Where the CLI is inside the container: the mount point, or ``binary`` on PATH."""
        if self.host_binary:
            return f"{CLI_MOUNT}/{Path(self.host_binary).name}"
        return binary

    def volumes(self) -> dict[str, dict[str, str]]:
        """The read-only bind mount of a host binary (none for the other methods)."""
        if not self.host_binary:
            return {}
        return {self.host_binary: {"bind": self.binary_in_box(""), "mode": "ro"}}


def _lock(tag: str) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(tag, threading.Lock())


def cli_image_tag(client: Any, agent: str, task_image: str, spec: InstallSpec) -> str:
    """``fire-exp/cli-AGENT:IMAGEID12-SPEC12`` for ``task_image`` and ``spec``."""
    image_id = image_exists(client, task_image)
    if image_id is None:
        raise EnvironmentFailure(f"image {task_image} is not on this Docker engine")
    return f"fire-exp/cli-{slug(agent, 40)}:{image_id.split(':')[-1][:12]}-{spec.digest()[:12]}"


def prepare_cli_image(client: Any, agent: str, task_image: str, spec: InstallSpec) -> str:
    """The image an attempt of ``agent`` runs: ``task_image`` with the CLI installed.

    Cached by task image and spec; concurrent attempts wait for one install. For
    ``host_binary`` and no install step the task image itself is returned.

    Raises:
        EnvironmentFailure: the install script failed or timed out, or the CLI image or
            one of its paths is missing.
    """
    if spec.method in ("none", "host_binary"):
        return task_image
    tag = cli_image_tag(client, agent, task_image, spec)
    with _lock(tag):
        if image_exists(client, tag):
            return tag
        labels = {LABEL: "1", f"{LABEL}.kind": "cli", f"{LABEL}.agent": agent,
                  f"{LABEL}.from": task_image, f"{LABEL}.install": spec.digest()[:12]}
        if spec.method == "script":
            _install_by_script(client, agent, task_image, spec, tag, labels)
        else:
            _install_from_image(client, task_image, spec, tag, labels)
    return tag


def _install_by_script(client: Any, agent: str, task_image: str, spec: InstallSpec, tag: str,
                       labels: dict[str, str]) -> None:
    import docker.errors

    original = client.images.get(task_image).attrs.get("Config") or {}
    container = client.containers.create(
        task_image, entrypoint=["sleep", "infinity"], command=[], detach=True,
        network_mode=spec.network, labels=owner_labels() | {f"{LABEL}.kind": "cli-install"},
        name=f"fire-exp-install-{slug(agent, 20)}-{os.urandom(3).hex()}", environment={})
    try:
        container.start()
        container.put_archive("/", tar_file((spec.script or "").encode(), _SCRIPT_PATH, 0o755))
        code, output = _exec_with_timeout(container, spec.timeout_s)
        if code != 0:
            raise EnvironmentFailure(f"agent={agent}: the install script exited {code} in "
                                     f"{task_image}:\n{output[-1500:]}")
        container.exec_run(["rm", "-f", _SCRIPT_PATH])
        container.stop(timeout=1)
        # A commit cannot clear the install container's entrypoint (an empty one inherits
        # it), so an image without one gets `env`, which runs CMD unchanged.
        entrypoint = original.get("Entrypoint") or ["/usr/bin/env"]
        changes = [f"LABEL {' '.join(f'{k}={shlex.quote(v)}' for k, v in labels.items())}",
                   f"ENTRYPOINT {json.dumps(entrypoint)}",
                   f"CMD {json.dumps(original.get('Cmd') or [])}"]
        repository, _, version = tag.rpartition(":")
        container.commit(repository=repository, tag=version, changes=changes)
    except docker.errors.DockerException as exc:
        raise EnvironmentFailure(f"agent={agent}: installing the CLI into {task_image} "
                                 f"failed: {exc}") from exc
    finally:
        try:
            container.remove(force=True)
        except docker.errors.DockerException:
            pass


def _exec_with_timeout(container: Any, timeout_s: float) -> tuple[int, str]:
    result: dict[str, Any] = {}

    def run() -> None:
        result["r"] = container.exec_run(["sh", "-c", f"{_SCRIPT_PATH} 2>&1"], workdir="/")

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise EnvironmentFailure(f"the install script ran past {timeout_s:.0f} s")
    return int(result["r"].exit_code), result["r"].output.decode(errors="replace")


def _install_from_image(client: Any, task_image: str, spec: InstallSpec, tag: str,
                        labels: dict[str, str]) -> None:
    import docker.errors

    lines = [f"FROM {task_image}"]
    lines += [f"COPY --from={spec.image} {p} {p}" for p in spec.paths]
    try:
        client.images.build(fileobj=io.BytesIO("\n".join(lines).encode()), tag=tag,
                            labels=labels, rm=True, forcerm=True, pull=False)
    except docker.errors.DockerException as exc:
        raise EnvironmentFailure(f"copying {', '.join(spec.paths)} from {spec.image} into "
                                 f"{task_image} failed: {exc}") from exc


def prepare_cli_images(client: Any, agent: str, spec: InstallSpec,
                       task_images: list[str]) -> dict[str, str]:
    """The preflight: make (or find) the CLI image of every task image before a panel.

    Returns task image -> the image attempts will run. Raises EnvironmentFailure on the
    first install that fails, so a broken install step stops the run before any attempt.
    """
    return {image: prepare_cli_image(client, agent, image, spec)
            for image in dict.fromkeys(task_images)}
