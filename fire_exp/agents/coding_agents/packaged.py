"""The coding-agent CLIs as Python dependencies: their binaries in installed wheels.

``pip install 'fire-exp[codex]'`` brings ``openai-codex-cli-bin`` (the static ``codex``
binary in ``codex_cli_bin/bin``); ``'fire-exp[claude-code]'`` brings ``claude-agent-sdk``
(Claude Code's glibc binary in ``claude_agent_sdk/_bundled``). An agent with no
``binary:`` setting finds its CLI here first, then on PATH; in Docker the same file is
mounted read-only into the box (``install.host_binary``), so no registry is needed.

The binary's identity (its ``--version`` line and SHA-256) is what the preregistration
manifest freezes (:func:`binary_identity`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WHEELS", "BinaryIdentity", "binary_identity", "binary_sha256", "host_binary",
           "wheel_binary"]

# agent name -> (the wheel's top-level package, the binary's path inside it, the extra)
WHEELS: dict[str, tuple[str, str, str]] = {
    "codex": ("codex_cli_bin", "bin/codex", "codex"),
    "claude-code": ("claude_agent_sdk", "_bundled/claude", "claude-code"),
}
_CHUNK = 1 << 20
_VERSION_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class BinaryIdentity:
    """What the preregistration freezes of a CLI: where its binary is on this machine, the
    first line of its ``--version``, and the file's SHA-256."""

    path: str
    version: str
    sha256: str


def wheel_binary(agent: str) -> str | None:
    """The CLI binary an installed wheel ships for ``agent`` (None: no such wheel here).

    The package is located, not imported (``claude_agent_sdk`` imports an SDK we do not
    use)."""
    known = WHEELS.get(agent)
    if known is None:
        return None
    package, inner, _ = known
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / inner
        if path.is_file() and os.access(path, os.X_OK):
            return str(path.resolve())
    return None


def host_binary(agent: str, binary: str | None) -> str | None:
    """The CLI's executable on this machine: ``binary`` when it is a path or a name on
    PATH (an explicit setting wins), else the wheel's, else the default name on PATH."""
    if binary:
        found = shutil.which(binary)
        return str(Path(found).resolve()) if found else None
    return wheel_binary(agent)


def binary_sha256(path: str) -> str:
    """The SHA-256 of the file at ``path`` (cached by path, size and modification time:
    Claude Code's binary is 400 MB)."""
    st = os.stat(path)
    return _sha256(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def binary_identity(path: str) -> BinaryIdentity:
    """The identity of the binary at ``path`` (its version ``unknown`` if ``--version``
    fails: the hash still decides)."""
    sha = binary_sha256(path)
    return BinaryIdentity(str(Path(path).resolve()), _version(path, sha), sha)


@functools.lru_cache(maxsize=16)
def _version(path: str, sha256: str) -> str:
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True,
                              timeout=_VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    line = (proc.stdout.strip().splitlines() or [""])[0]
    return line if proc.returncode == 0 and line else "unknown"
