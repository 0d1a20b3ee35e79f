"""Every attempt's seed, from its own child stream of the panel seed.

An attempt's seed is keyed by its task, arm and replicate, and a replacement's by the same
and its number in the chain (``task/arm/rN#k``), so adding an arm, a task or a replacement
changes no other attempt's seed. The runner draws the seeds (:mod:`fire_exp.runner.schedule`,
:mod:`fire_exp.runner.replacement`); the analysis derives them again from the manifest's
panel seed to check every record against the preregistration. Like
:mod:`fire_exp.manifest`, this module sits at the bottom of the import graph, so the
analysis can do that without importing the runner.

>>> attempt_seed(7, "t", "real", 0) == attempt_seed(7, "t", "real", 0)
True
>>> replacement_seed(7, "t", "real", 0, 0) == attempt_seed(7, "t", "real", 0)
True
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["attempt_seed", "replacement_seed", "stable_key"]


def stable_key(text: str) -> int:
    """A 32-bit key for ``SeedSequence`` spawn keys that does not depend on Python's hash.

    Big-endian, so every frozen schedule keeps its seeds. The analysis keys its resampling
    streams with :func:`fire_exp.stats.seeds.stable_hash32`, the same hash read
    little-endian; each byte order is frozen by what it seeds (preregistered schedules,
    published tables), so neither may change.
    """
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def _seed(panel_seed: int, *spawn_key: int) -> int:
    seq = np.random.SeedSequence(panel_seed, spawn_key=spawn_key)
    return int(seq.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def attempt_seed(panel_seed: int, task: str, arm: str, replicate: int) -> int:
    """The seed of one scheduled attempt, from its own child stream of the panel seed."""
    return _seed(panel_seed, stable_key(task), stable_key(arm), replicate)


def replacement_seed(panel_seed: int, task: str, arm: str, replicate: int,
                     number: int) -> int:
    """The seed of replacement ``number`` of ``task/arm/rN`` (0: the scheduled attempt's)."""
    if number == 0:
        return attempt_seed(panel_seed, task, arm, replicate)
    return _seed(panel_seed, stable_key(task), stable_key(arm), replicate,
                 stable_key("replacement"), number)
