"""Run one array-valued computation in a forked child while the caller goes on.

A large analysis spends about a second drawing bootstrap resamples (both cores) and as long
again building tables in pandas (one core, holding the GIL). Threads would queue behind
the GIL; a forked child does not. The child writes its array into anonymous shared memory
and exits; ``result()`` waits for it and returns a copy.

The child is used only where forking is safe: on POSIX, in a process with no other Python
thread (a web server's handler thread analyses in-process). If the child fails or is
killed, the computation runs again in-process, so the result never depends on the child.
"""

from __future__ import annotations

import mmap
import os
import signal
import threading
import weakref
from collections.abc import Callable

import numpy as np

__all__ = ["can_fork", "in_child"]


def can_fork() -> bool:
    """Whether this process may fork a worker: POSIX and no other Python thread."""
    return hasattr(os, "fork") and threading.active_count() == 1


class _Child:
    """A forked computation: call it for the array (waits once, then cached)."""

    def __init__(self, compute: Callable[[], np.ndarray], shape: tuple[int, ...]) -> None:
        self._compute = compute
        self._buffer = mmap.mmap(-1, max(1, int(np.prod(shape)) * 8))  # shared with the child
        self._shape = shape
        self._value: np.ndarray | None = None
        self._pid = os.fork()
        if self._pid == 0:  # the child: compute, write, leave without running any cleanup
            status = 1
            try:
                out = np.frombuffer(self._buffer, dtype=np.float64, count=int(np.prod(shape)))
                out[:] = np.asarray(compute(), dtype=np.float64).ravel()
                status = 0
            finally:
                os._exit(status)
        # A child never waited for (the caller raised first) is stopped and reaped.
        self._reaper = weakref.finalize(self, _stop, self._pid)

    def __call__(self) -> np.ndarray:
        if self._value is None:
            self._reaper.detach()
            _, status = os.waitpid(self._pid, 0)
            if os.waitstatus_to_exitcode(status) == 0:
                self._value = np.frombuffer(self._buffer, dtype=np.float64,  # a copy: the
                                            count=int(np.prod(self._shape))  # view goes
                                            ).reshape(self._shape).copy()
            else:  # the child failed or was killed: compute here instead
                self._value = np.asarray(self._compute(), dtype=np.float64)
            self._buffer.close()
        return self._value


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def in_child(compute: Callable[[], np.ndarray], shape: tuple[int, ...], *,
             fork: bool = True) -> Callable[[], np.ndarray]:
    """Start ``compute`` (returning a float array of ``shape``) in a forked child when
    ``fork`` is asked and that is safe, else run it now; either way the returned callable
    gives the array."""
    if fork and can_fork():
        try:
            return _Child(compute, shape)
        except OSError:  # no process or memory to fork with: compute here
            pass
    value = compute()
    return lambda: value
