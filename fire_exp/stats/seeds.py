"""Child random streams keyed by what they serve.

Every random draw of the analysis comes from ``SeedSequence(root, spawn_key=keys)`` where
the keys are stable 32-bit hashes of names (a contrast, a metric, a cohort). A stream
therefore depends only on its own name: adding an arm or a contrast to a plan changes no
other number.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["child_rng", "child_seed_sequence", "stable_hash32"]


def stable_hash32(name: str) -> int:
    """A 32-bit hash of ``name`` that is the same on every machine and Python run.

    Python's ``hash`` is salted per process; SHA-256 is not.

    >>> stable_hash32("real - sham")
    3504849607
    """
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "little")


def child_seed_sequence(root: int, *keys: str) -> np.random.SeedSequence:
    """The ``SeedSequence`` for the stream named by ``keys`` under the plan's ``root`` seed.

    >>> child_seed_sequence(7, "real - sham", "success", "eligible").spawn_key[:1]
    (3504849607,)
    """
    if not isinstance(root, int | np.integer) or root < 0:
        raise ValueError(f"root seed must be a non-negative integer, got {root!r}")
    return np.random.SeedSequence(int(root), spawn_key=tuple(stable_hash32(k) for k in keys))


def child_rng(root: int, *keys: str) -> np.random.Generator:
    """A ``numpy.random.Generator`` (PCG64) on the child stream named by ``keys``.

    >>> a = child_rng(7, "x").random(); b = child_rng(7, "x").random(); a == b
    True
    """
    return np.random.Generator(np.random.PCG64(child_seed_sequence(root, *keys)))
