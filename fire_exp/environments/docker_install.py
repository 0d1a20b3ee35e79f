"""Getting a coding-agent CLI into a task's image: once per task image and install spec.

The Docker backend's ``INSTALL_AGENT`` capability (``agent_install.InstallSpec`` says how).
The derived image is tagged ``fire-exp/cli-AGENT:IMAGEID12-SPEC12`` (the task image's id
and the install spec's digest) and labelled ``fire-exp=1``, ``fire-exp.kind=cli``, so the
next attempt, run or machine with that engine reuses it. No key is ever present while an
image is made: the install container gets no variables of ours.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import threading
from typing import Any

from fire_exp.environments.agent_install import AgentInstall, InstallSpec
from fire_exp.environments.archives import tar_file
from fire_exp.environments.failure import EnvironmentFailure
from fire_exp.environments.host_lock import host_lock
from fire_exp.environments.images import LABEL, image_exists, owner_labels, slug

_SCRIPT_PATH = "/tmp/fire-exp-install.sh"
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def mounts(spec: InstallSpec) -> dict[str, dict[str, str]]:
    """The read-only bind mount of a host binary, as docker-py's ``volumes`` (none for the
    other methods)."""
    if not spec.host_binary:
        return {}
    return {spec.host_binary: {"bind": spec.binary_in_box(""), "mode": "ro"}}


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
    with _lock(tag), host_lock(f"image {tag}"):
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
        network_mode=spec.network,
        labels=owner_labels() | {f"{LABEL}.kind": "cli-install"},
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


def try_binary(client: Any, image: str, install: AgentInstall, labels: dict[str, str]) -> None:
    """Run ``command -v BINARY`` in a throwaway container of ``image``. Raises
    EnvironmentFailure naming the install step when the CLI is not there."""
    import docker.errors

    binary = install.spec.binary_in_box(install.binary)
    try:
        client.containers.run(image, ["sh", "-c", f"command -v {shlex.quote(binary)}"],
                              entrypoint=[], remove=True, network_mode="none",
                              volumes=mounts(install.spec) or None,
                              labels=labels | {f"{LABEL}.kind": "preflight"})
    except docker.errors.ContainerError as exc:
        raise EnvironmentFailure(
            f"agent={install.agent}: `{binary}` is not in image {image} (exit "
            f"{exc.exit_status}). Give the agent an install step (agent.install.script, "
            "agent.install.image or agent.install.host_binary; docs/agents.md)") from exc
