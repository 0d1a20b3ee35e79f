"""Tar archives of host files and folders: how files cross into and out of a box.

Every backend moves files as archives (``Environment.put_archive`` / ``get_archive``);
these build and unpack them.
"""

from __future__ import annotations

import io
import tarfile
import time
from pathlib import Path


def tar_directory(src: Path, dest: str, executable_suffixes: tuple[str, ...] = (".sh",)
                  ) -> bytes:
    """A tar of ``src`` whose members land under ``dest`` when extracted at ``/``.

    Every parent folder of ``dest`` is in the archive, so ``put_archive(container, "/")``
    needs no ``mkdir`` first; ``*.sh`` files become executable (``chmod +x``).
    """
    buf = io.BytesIO()
    root = dest.strip("/")
    with tarfile.open(fileobj=buf, mode="w") as tar:
        parts = root.split("/")
        for i in range(1, len(parts) + 1):
            info = tarfile.TarInfo("/".join(parts[:i]))
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
            tar.addfile(info)
        for path in sorted(src.rglob("*")):
            if "__pycache__" in path.parts:
                continue
            info = tar.gettarinfo(str(path), arcname=f"{root}/{path.relative_to(src).as_posix()}")
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if path.suffix in executable_suffixes:
                info.mode |= 0o111
            if path.is_file():
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
    return buf.getvalue()


def tar_file(data: bytes, dest: str, mode: int = 0o644) -> bytes:
    """A tar with one file at ``dest`` (and its parent folders)."""
    buf = io.BytesIO()
    parts = dest.strip("/").split("/")
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for i in range(1, len(parts)):
            info = tarfile.TarInfo("/".join(parts[:i]))
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        info = tarfile.TarInfo("/".join(parts))
        info.size, info.mode, info.mtime = len(data), mode, int(time.time())
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def tar_path(src: Path) -> bytes:
    """A tar of the file or folder ``src``, its members named from ``src``'s own name (as
    ``docker cp`` and ``container.get_archive`` name them)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(src), arcname=src.name)
    return buf.getvalue()


def single_file(data: bytes) -> bytes:
    """The content of the one regular file in the tar ``data``."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            if member.isfile():
                fh = tar.extractfile(member)
                if fh is not None:
                    return fh.read()
    raise FileNotFoundError("the archive holds no file")


def extract_into(data: bytes, dest: Path) -> None:
    """Extract the tar ``data`` under the host folder ``dest`` (safe members only); folders
    that already exist are left as they are (their owner and mode are not ours to change)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        members = [m for m in tar.getmembers()
                   if not (m.isdir() and (dest / m.name.lstrip("/")).is_dir())]
        tar.extractall(dest, members=members, filter="data")
