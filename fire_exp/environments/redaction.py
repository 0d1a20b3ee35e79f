"""Keeping the user's secrets out of what an attempt writes.

A secret is the value of an environment variable of the harness whose name says it is one
(``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``) and that is long
enough not to be an ordinary word. Command output returned to the agent and every file
under an attempt's folder pass through the same redaction as the transcript: each secret,
and each encoding of it the harness can recognise, becomes ``***``.

The encodings (:func:`secret_forms`): the secret itself; its URL-encodings (``quote``,
``quote_plus``); its hex (either case); and its base64, standard and URL-safe alphabets,
at each of the three alignments a secret can have inside a longer base64 stream (only the
characters that depend on the secret alone are matched, so a copy with or without padding,
or in the middle of a longer encoded text, is found), line breaks allowed between the
characters (``base64`` wraps at 76 columns). A base64 copy loses its first and last
character or two to the mask's alignment: those carry at most 10 bits of the secret.

Each attempt has one :class:`Redactor` (``Environment.redactor``), applied wherever the
attempt's logs are written: to command output, to what a box hands back, to a CLI's output
and, at the end, to every file of the attempt's folder (:func:`redact_tree`: binary-safe,
each file rewritten atomically; names and link targets too, each change named in the
record's ``withheld``) and to its record. It knows the harness's secrets and the
values handed to the attempt (a CLI's passed-through key).

What remains: a secret the agent transformed otherwise (reversed, split, encrypted, another
encoding) is not recognised; files larger than 64 MB are not rewritten (archives and images,
not text an agent echoed). Only Docker isolates a hostile model: in the local environment
commands run as the user, so this keeps secrets out of the record, not out of a determined
model's reach.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import secrets as _secrets
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote, quote_plus

__all__ = ["MASK", "Redactor", "redact_bytes", "redact_names", "redact_text", "redact_tree",
           "secret_forms", "secret_values"]

MASK = "***"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_MIN_LENGTH = 8
_MAX_FILE = 64 << 20  # larger files (archives, images) are not text the agent echoed
_WRAP = "(?:\\r?\\n)?"  # a line break base64 may put between two characters


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values to redact, longest first (so a secret containing another goes whole).

    >>> secret_values({"OPENAI_API_KEY": "sk-abcdefgh12", "HOME": "/home/me-long-path"})
    ['sk-abcdefgh12']
    """
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_LENGTH}
    return sorted(values, key=len, reverse=True)


def _base64_cores(secret: bytes) -> set[str]:
    """The base64 characters that depend on ``secret`` alone, at each alignment."""
    cores = set()
    for lead in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * lead + secret).decode().rstrip("=")
            # Character i holds bits [6i, 6i + 6); the secret's are [8 lead, 8 (lead + n)).
            first = -(-8 * lead // 6)
            last = 8 * (lead + len(secret)) // 6
            cores.add(text[first:last])
    return cores


def secret_forms(secret: str) -> tuple[set[str], set[str]]:
    """The literal forms of ``secret`` and its base64 cores (matched across line breaks).

    >>> plain, cores = secret_forms("sk-abcdefgh12")
    >>> sorted(plain)[:3]
    ['736B2D61626364656667683132', '736b2d61626364656667683132', 'sk-abcdefgh12']
    >>> "c2stYWJjZGVmZ2gxM" in cores  # base64.b64encode(b"sk-abcdefgh12") is c2stYWJjZGVmZ2gxMg==
    True
    """
    raw = secret.encode()
    plain = {secret, quote(secret, safe=""), quote(secret), quote_plus(secret),
             raw.hex(), raw.hex().upper()}
    return plain, _base64_cores(raw)


@functools.lru_cache(maxsize=64)
def _pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    """One alternation of every form of every secret, longest first (a secret containing
    another is masked whole)."""
    alternatives: dict[str, int] = {}
    for secret in secrets:
        if len(secret) < _MIN_LENGTH:
            continue
        plain, cores = secret_forms(secret)
        for form in plain:
            alternatives[re.escape(form)] = len(form)
        for core in cores:
            alternatives[_WRAP.join(re.escape(c) for c in core)] = len(core)
    if not alternatives:
        return None
    ordered = sorted(alternatives, key=lambda a: (-alternatives[a], a))
    return re.compile("|".join(ordered))


@functools.lru_cache(maxsize=64)
def _bytes_pattern(secrets: tuple[str, ...]) -> re.Pattern[bytes] | None:
    pattern = _pattern(secrets)
    return None if pattern is None else re.compile(pattern.pattern.encode())


def _key(secrets: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(secrets)))


def redact_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """``data`` with every secret, and every recognised encoding of one, replaced by ``***``.

    >>> redact_bytes(b"k=c2stYWJjZGVmZ2gxMg==\\n", ["sk-abcdefgh12"])
    b'k=***g==\\n'
    """
    pattern = _bytes_pattern(_key(secrets))
    return data if pattern is None else pattern.sub(MASK.encode(), data)


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret, and every recognised encoding of one, replaced by ``***``.

    >>> redact_text("key=sk-abcdefgh12 again sk-abcdefgh12", ["sk-abcdefgh12"])
    'key=*** again ***'
    """
    pattern = _pattern(_key(secrets))
    return text if pattern is None else pattern.sub(MASK, text)


def _rewrite(path: Path, data: bytes) -> None:
    """Replace ``path``'s content by ``data`` atomically, keeping its mode."""
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".redacted", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def redact_tree(folder: Path, secrets: Iterable[str] | None = None,
                renamed: list[tuple[Path, str]] | None = None) -> list[Path]:
    """Rewrite every file under ``folder`` that holds a secret (or an encoding of one), in
    place and atomically, then every name and link target that holds one
    (:func:`redact_names`, noted in ``renamed``); returns the files rewritten. Symbolic
    links are not followed."""
    keys = list(secret_values() if secrets is None else secrets)
    changed: list[Path] = []
    if not keys or not folder.is_dir():
        return changed
    for path in sorted(folder.rglob("*")):
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_FILE:
                continue
            data = path.read_bytes()
            clean = redact_bytes(data, keys)
            if clean != data:
                _rewrite(path, clean)
                changed.append(path)
        except OSError:  # a file that vanished or cannot be read is no record of ours
            continue
    notes = redact_names(folder, keys)
    if renamed is not None:
        renamed += notes
    return changed


def redact_names(folder: Path, secrets: Iterable[str]) -> list[tuple[Path, str]]:
    """Rename every file, folder and link under ``folder`` whose name holds a secret (the
    secret becomes ``***``; a name taken gets a ``.N`` suffix) and re-point every symbolic
    link whose target holds one; returns each changed path (as it is now) and what
    changed. Deepest first, so a renamed folder's contents were already handled."""
    keys = list(secrets)
    notes: list[tuple[Path, str]] = []
    for root, dirs, files in os.walk(folder, topdown=False):
        for name in dirs + files:
            path = Path(root) / name
            try:
                if path.is_symlink():
                    target = os.readlink(path)
                    clean = redact_text(target, keys)
                    if clean != target:
                        _relink(path, clean)
                        notes.append((path, "link target redacted: it held a secret"))
                clean = redact_text(name, keys)
                if clean != name:
                    new = _free(path.with_name(clean))
                    os.rename(path, new)
                    notes.append((new, "renamed: its name held a secret"))
            except OSError:  # vanished: nothing of it is left to redact
                continue
    return notes


def _relink(path: Path, target: str) -> None:
    """Point the symbolic link ``path`` at ``target`` atomically."""
    tmp = path.with_name(f".{_secrets.token_hex(6)}.relink")
    os.symlink(target, tmp)
    os.replace(tmp, path)


def _free(path: Path) -> Path:
    """``path``, or ``path.N`` for the first N not taken."""
    n, candidate = 1, path
    while os.path.lexists(candidate):
        candidate, n = path.with_name(f"{path.name}.{n}"), n + 1
    return candidate


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
        # Every name renamed and link re-pointed so far (the record's ``withheld``).
        self.renamed: list[tuple[Path, str]] = []

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
        """Rewrite every file under ``folder`` that holds a secret, rename every name that
        holds one (noted in :attr:`renamed`); returns the files rewritten."""
        return redact_tree(folder, self.secrets(), self.renamed)
