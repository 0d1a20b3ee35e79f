"""Bringing a box's files home without letting what the agent left there harm the harness.

Everything under the agent's folders is the agent's, so nothing in a fetched archive may
make an infrastructure failure (a replaceable attempt) or take the harness's memory:

- **Unsafe members are skipped and named**: links out of the fetched folder (absolute,
  or resolving outside it, lexically or through links already written), devices, FIFOs
  and other special files, absolute names and names with ``..``. The rest is written, each
  member checked again by ``tarfile``'s ``data`` filter against the folder itself.
- **Bounded**: the archive is read as a stream (``tarfile`` stream mode over the engine's
  chunks, never whole in memory) and at most ``cap`` bytes of file content are kept. The
  member that would pass the cap and every member after it are dropped, named, and never
  read: the caller closes the stream, so a 20 GB sparse file costs neither memory nor time.

What was left out is returned (:class:`Fetched`) for the attempt's record (``withheld``).
"""

from __future__ import annotations

import io
import posixpath
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ChunkReader", "Fetched", "extract_stream", "read_single", "unsafe_reason"]


@dataclass
class Fetched:
    """What one fetch kept (bytes of file content) and left out (one line per member)."""

    kept: int = 0
    withheld: list[str] = field(default_factory=list)
    complete: bool = True  # False: the cap stopped the fetch before the archive's end


class ChunkReader(io.RawIOBase):
    """A readable file over an iterator of byte chunks (``container.get_archive``'s)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._view = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._view:
            try:
                self._view = memoryview(next(self._chunks))
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._view))
        buffer[:n] = self._view[:n]
        self._view = self._view[n:]
        return n


def unsafe_reason(member: tarfile.TarInfo) -> str | None:
    """Why ``member`` must not be written (None: it may, subject to the data filter).

    >>> link = tarfile.TarInfo("logs/agent/x"); link.type = tarfile.SYMTYPE
    >>> link.linkname = "/etc/hostname"; unsafe_reason(link)
    'a symbolic link out of the folder (-> /etc/hostname)'
    >>> link.linkname = "../verifier/reward.txt"; unsafe_reason(link) is None
    True
    """
    name = member.name
    parts = name.split("/")
    if name.startswith("/"):
        return "an absolute name"
    if ".." in parts:
        return "a name with .."
    if member.ischr() or member.isblk():
        return "a device"
    if member.isfifo():
        return "a FIFO"
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        return "a special file"
    if member.issym() or member.islnk():
        base = posixpath.dirname(name) if member.issym() else ""
        target = posixpath.normpath(posixpath.join(base, member.linkname))
        kind = "symbolic" if member.issym() else "hard"
        if member.linkname.startswith("/") or target.split("/")[0] != parts[0]:
            return f"a {kind} link out of the folder (-> {member.linkname})"
    return None


def _inside(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """``member`` named relative to the archive's top folder (the fetch's destination)."""
    name = member.name.partition("/")[2]
    if not member.islnk():
        return member.replace(name=name, deep=False)
    return member.replace(name=name, linkname=member.linkname.partition("/")[2], deep=False)


def extract_stream(chunks: Iterable[bytes], dest: Path, *, cap: int,
                   skip: str | None = None) -> Fetched:
    """Write the archive streamed in ``chunks`` (one top file or folder, as ``get_archive``
    makes it) into the host folder ``dest``: safe members only, at most ``cap``
    bytes of file content; members under the top folder's subfolder ``skip`` are passed
    over (fetched on their own). Returns what was kept and left out; the caller closes
    the stream (it may be left unread past the cap)."""
    fetched = Fetched()
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BufferedReader(ChunkReader(chunks)), mode="r|") as tar:
        for member in tar:
            if skip is not None and member.name.split("/")[1:2] == [skip]:
                continue
            reason = unsafe_reason(member)
            if reason is None and member.isreg() and fetched.kept + member.size > cap:
                fetched.withheld.append(
                    f"{member.name} ({member.size} bytes) and every member after it: past "
                    f"what the fetch cap left ({cap} bytes)")
                fetched.complete = False
                return fetched
            if reason is None:
                reason = _write(tar, member, dest)
            if reason is not None:
                fetched.withheld.append(f"{member.name}: {reason}")
            elif member.isreg():
                fetched.kept += member.size
    return fetched


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> str | None:
    """Write one member (None) or say why it could not be. Members under the archive's
    top folder are checked by the data filter against that folder, not ``dest``."""
    top, _, rest = member.name.partition("/")
    try:
        if not rest and member.isdir():
            (dest / top).mkdir(exist_ok=True)
        elif not rest:
            tar.extract(member, dest, filter="data")
        else:
            tar.extract(_inside(member), dest / top, filter="data")
    except tarfile.FilterError as exc:
        return f"refused by the data filter ({type(exc).__name__})"
    except (OSError, KeyError, tarfile.TarError) as exc:
        return f"not written ({type(exc).__name__}: {exc})"
    return None


def read_single(chunks: Iterable[bytes], cap: int) -> tuple[bytes, int] | None:
    """The first ``cap`` bytes of the one regular file in the archive streamed in
    ``chunks`` and its full size (None: the archive holds no file)."""
    with tarfile.open(fileobj=io.BufferedReader(ChunkReader(chunks)), mode="r|") as tar:
        for member in tar:
            if member.isreg():
                fh = tar.extractfile(member)
                if fh is not None:
                    return fh.read(cap), member.size
    return None
