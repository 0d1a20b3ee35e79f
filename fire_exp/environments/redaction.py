"""Keeping the user's secrets out of what an attempt writes.

A secret is the value of an environment variable of the harness whose name says it is one
(``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``) and that is long
enough not to be an ordinary word. Command output returned to the agent and every file
under an attempt's folder pass through the same redaction as the transcript
(:func:`fire_exp.agents.chat_client.redact`: each secret becomes ``***``).

Each attempt has one :class:`Redactor` (``Environment.redactor``), applied wherever the
attempt's logs are written: to command output, to what a box hands back, to a CLI's output
and, at the end, to every file of the attempt. It knows the harness's secrets and the values
handed to the attempt (a CLI's passed-through key).

Only Docker isolates a hostile model: in the local environment commands run as the user,
so this keeps secrets out of the record, not out of a determined model's reach.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["MASK", "Redactor", "redact_bytes", "redact_text", "redact_tree", "secret_values"]

MASK = "***"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_MIN_LENGTH = 8
_MAX_FILE = 64 << 20  # larger files (archives, images) are not text the agent echoed


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values to redact, longest first (so a secret containing another goes whole).

    >>> secret_values({"OPENAI_API_KEY": "sk-abcdefgh12", "HOME": "/home/me-long-path"})
    ['sk-abcdefgh12']
    """
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """``data`` with every secret replaced by ``***``."""
    for secret in secrets:
        data = data.replace(secret.encode(), MASK.encode())
    return data


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***`` (longest first).

    >>> redact_text("key=sk-abcdefgh12 again sk-abcdefgh12", ["sk-abcdefgh12"])
    'key=*** again ***'
    """
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact_tree(folder: Path, secrets: Iterable[str] | None = None) -> list[Path]:
    """Rewrite every file under ``folder`` that holds a secret; returns the files rewritten."""
    # Longest first, so a secret that contains another is masked whole.
    keys = sorted(set(secret_values() if secrets is None else secrets), key=len, reverse=True)
    changed: list[Path] = []
    if not keys or not folder.is_dir():
        return changed
    for path in folder.rglob("*"):
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_FILE:
                continue
            data = path.read_bytes()
            clean = redact_bytes(data, keys)
            if clean != data:
                path.write_bytes(clean)
                changed.append(path)
        except OSError:  # a file that vanished or cannot be read is no record of ours
            continue
    return changed


class Redactor:
    """One attempt's redactor: the harness's secrets (read at each use) and the values
    :meth:`add`-ed to it (a CLI's key).

    >>> r = Redactor()
    >>> r.add(["tok-0123456789", "short"])
    >>> r.text("tok-0123456789 and short")
    '*** and short'
    """

    def __init__(self) -> None:
        self._extra: set[str] = set()

    def add(self, values: Iterable[str]) -> None:
        """Redact ``values`` too (those too short to be secrets are ignored)."""
        self._extra |= {v for v in values if len(v) >= _MIN_LENGTH}

    def secrets(self) -> list[str]:
        """Every value redacted, longest first."""
        return sorted(set(secret_values()) | self._extra, key=len, reverse=True)

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        return redact_text(text, self.secrets())

    def tree(self, folder: Path) -> list[Path]:
        """Rewrite every file under ``folder`` that holds a secret; returns those files."""
        return redact_tree(folder, self.secrets())
