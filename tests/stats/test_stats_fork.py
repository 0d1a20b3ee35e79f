"""The forked worker behind a large bootstrap: same numbers, no process left behind."""

from __future__ import annotations

import gc
import os
import threading
import time

import numpy as np
import pytest

from fire_exp.stats import start_bootstrap_distributions
from fire_exp.stats._fork import _Child, can_fork, in_child
from tests.signals import gone

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork only")



def _exit_codes(monkeypatch) -> list[tuple[int, int]]:
    """(pid, exit code) of every child the fork module waits for, from now on."""
    import fire_exp.stats._fork as fork

    seen: list[tuple[int, int]] = []
    real_waitpid = os.waitpid

    def waitpid(pid: int, options: int) -> tuple[int, int]:
        got, status = real_waitpid(pid, options)
        seen.append((got, os.waitstatus_to_exitcode(status)))
        return got, status

    monkeypatch.setattr(fork.os, "waitpid", waitpid)
    return seen


def test_resamples_drawn_in_a_child_equal_those_drawn_here(monkeypatch):
    import fire_exp.stats._fork as fork

    made: list[int] = []
    exits = _exit_codes(monkeypatch)

    class Recorded(_Child):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self._pid)

    # pytest may run threads of its own; fork here regardless (the child only computes).
    monkeypatch.setattr(fork, "can_fork", lambda: True)
    monkeypatch.setattr(fork, "_Child", Recorded)
    gen = np.random.default_rng(0)
    x, cost = gen.random(2_000), gen.random(2_000)
    columns, ratios = {"x": x, "d": x - 0.5}, {"r": (cost, x)}

    def draw(background: bool) -> tuple[np.ndarray, tuple[float, ...]]:
        pending = start_bootstrap_distributions(columns, ratios=ratios, n_resamples=3_000,
                                                rng=np.random.default_rng(7),
                                                background=background)
        dist = pending.result()
        return dist.dists, dist.estimates

    child, here = draw(True), draw(False)
    assert len(made) == 1 and made[0] != os.getpid()
    # The child computed and wrote the resamples (exit 0): nothing was redone here.
    assert exits == [(made[0], 0)]
    assert np.array_equal(child[0], here[0]) and child[1] == here[1]


def test_a_failed_child_is_redone_in_this_process(monkeypatch):
    import fire_exp.stats._fork as fork

    monkeypatch.setattr(fork, "can_fork", lambda: True)
    exits = _exit_codes(monkeypatch)
    parent = os.getpid()

    def compute() -> np.ndarray:
        if os.getpid() != parent:  # only the child fails
            raise RuntimeError("out of memory in the child")
        return np.arange(6, dtype=float).reshape(2, 3)

    assert np.array_equal(in_child(compute, (2, 3))(), np.arange(6.0).reshape(2, 3))
    # A child was forked, and failed: the array above was computed here.
    assert [(pid != parent, code) for pid, code in exits] == [(True, 1)]


def test_a_child_computes_in_another_process(monkeypatch):
    import fire_exp.stats._fork as fork

    monkeypatch.setattr(fork, "can_fork", lambda: True)
    exits = _exit_codes(monkeypatch)
    (pid,) = in_child(lambda: np.array([float(os.getpid())]), (1,))()
    assert pid != os.getpid() and exits == [(int(pid), 0)]


def test_a_child_never_waited_for_is_stopped_and_reaped():
    def compute() -> np.ndarray:
        time.sleep(60)
        return np.zeros(1)

    child = _Child(compute, (1,))
    pid = child._pid  # noqa: SLF001 (the child's process, to see it reaped)
    assert not gone(pid)
    del child
    gc.collect()
    assert gone(pid)  # killed and reaped: not even a zombie is left


def test_no_fork_while_another_thread_runs():
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert not can_fork()
        parent = os.getpid()
        pids = in_child(lambda: np.array([float(os.getpid())]), (1,))()
        assert pids[0] == parent  # computed right here
    finally:
        stop.set()
        worker.join()


def test_a_fork_that_fails_computes_here(monkeypatch):
    import fire_exp.stats._fork as fork

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(fork, "can_fork", lambda: True)
    monkeypatch.setattr(fork.os, "fork", no_fork)
    parent = os.getpid()
    assert in_child(lambda: np.array([float(os.getpid())]), (1,))()[0] == parent
