"""What a coding-agent CLI needs installed in a box: the agent config's ``install`` block.

A backend with the ``INSTALL_AGENT`` capability takes an :class:`AgentInstall` and puts
the CLI into the box (Docker: ``docker_install.py``). The block says how (exactly one of
these, or none of them):

- ``script``: a shell script run as root in a container of the task's image (on
  ``network``, default ``bridge``, so it can reach a package registry); the container is
  then committed as the derived image. For a machine that can reach the CLI's registry.
- ``image`` + ``paths``: an image that already holds the CLI; the paths are copied into
  the task's image (``COPY --from``). For a machine without the registry: build or load
  that image once elsewhere (``docker save`` / ``docker load``).
- ``host_binary``: an executable on this machine, bind-mounted read-only into every
  container at ``/opt/fire-exp/cli/<name>`` (a static binary such as Codex's); no image.
- none of them: the task's image must already have ``binary`` on its PATH.

No key is ever present while a CLI is installed: the install step gets no variables of ours.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.settings import Seconds, Settings

CLI_MOUNT = "/opt/fire-exp/cli"


class InstallSettings(Settings):
    """An agent config's ``install`` block as written (its keys, types and ranges; the
    agent's settings model checks it when the panel is built). :class:`InstallSpec` is
    what :meth:`InstallSpec.from_config` makes of it."""

    script: str | None = None
    image: str | None = None
    paths: list[str] = []
    host_binary: str | None = None
    network: str | None = "bridge"  # null: the default
    timeout_s: Seconds | None = 900.0  # null: the default


_INSTALL = InstallSettings()
_NETWORK, _TIMEOUT_S = str(_INSTALL.network), float(_INSTALL.timeout_s or 0)


@dataclass(frozen=True)
class InstallSpec:
    """How the CLI gets into the container (see the module docstring)."""

    script: str | None = None
    image: str | None = None
    paths: tuple[str, ...] = ()
    host_binary: str | None = None
    network: str = _NETWORK
    timeout_s: float = _TIMEOUT_S

    @classmethod
    def from_config(cls, raw: Any, where: str) -> InstallSpec:
        """Read an agent config's ``install`` block (its keys and types checked by the
        agent's settings model when the panel was built); refuse a malformed one by name."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise InputError(where, "install", "must be a mapping",
                             "give one of script, image (+ paths) or host_binary")
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
                   network=str(raw.get("network") or _NETWORK),
                   timeout_s=float(raw.get("timeout_s") or _TIMEOUT_S))

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



@dataclass(frozen=True)
class AgentInstall:
    """A coding-agent CLI a box must hold: the agent's name (part of a derived image's tag),
    its executable and how it is installed."""

    agent: str
    binary: str
    spec: InstallSpec
