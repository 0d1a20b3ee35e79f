"""One process at a time on this host for one Docker object: an image tag being built, the
egress network being created.

A ``threading.Lock`` keeps the threads of one panel from building an image twice; two
processes (two panels started together, a test suite's parallel workers) need a lock both
can see. :func:`host_lock` is an exclusive ``flock`` on a file named after the object under
the temporary folder, one folder per user. Docker 20.10 accepts two networks of one name,
so without it two processes that each find no egress network make one each, and every
later container on that name is refused as ambiguous; two builds of one tag only cost
time, once per process.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["host_lock", "lock_folder"]


def lock_folder() -> Path:
    """This user's folder of host locks (made on first use, private to the user)."""
    folder = Path(tempfile.gettempdir()) / f"fire-exp-locks-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


@contextmanager
def host_lock(name: str) -> Iterator[None]:
    """Hold the host-wide lock called ``name`` (any text: it is hashed into a file name)."""
    path = lock_folder() / (hashlib.sha256(name.encode()).hexdigest()[:24] + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
