"""The sign-flip test of ``analyze``, vectorised over many simulated panels.

A simulated panel gives each task an integer difference ``a_i = s_A − s_B`` of successes out
of K attempts per arm, so the per-task difference of pass rates ``a_i / K`` lies on the
1/K lattice and ``fire_exp.stats.sign_flip_test`` (method ``auto``) computes its exact
lattice null. That null depends only on how many non-zero tasks have each magnitude, and the
p-value only on that count vector and |Σ a_i|. Here each distinct count vector's table of p
by |S| comes from the same kernel (``fire_exp.stats.permutation.lattice_p_by_sum``) once and
is cached across designs, so the test of a whole batch of panels is a few array lookups. Up
to 62 non-zero tasks every p is the same float as the one ``analyze`` reports; beyond, the
kernel sums the tail in another order, and p agrees to 1e-14 relative (far below any
level's grain).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fire_exp.stats.multiplicity import holm
from fire_exp.stats.permutation import EXACT_TASKS, lattice_null, lattice_p_by_sum

__all__ = ["LatticeSignFlip", "holm_rows"]


@dataclass
class LatticeSignFlip:
    """Exact two-sided sign-flip p-values for rows of integer task differences.

    Keeps the tables of p by count vector, and the nulls they share prefixes of, so reuse
    one instance across the designs of a power grid. The cache holds at most ``max_bytes``
    (it starts afresh beyond): many tasks make nearly every panel's count vector new.

    >>> LatticeSignFlip().p_values(np.array([[2, 1, 2, 1, 2, 0, 0]]), attempts=2).tolist()
    [0.0625]
    """

    max_bytes: int = 256 * 2**20
    _tables: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict)
    _bytes: int = 0
    # lattice_null(mags, counts), memoized (prefixes included) where a lookup costs least
    _null: Callable[[tuple[int, ...], tuple[int, ...], bool], np.ndarray] = field(
        init=False, repr=False)

    def __post_init__(self) -> None:
        self._null = functools.lru_cache(maxsize=None)(self._extend)

    def _extend(self, mags: tuple[int, ...], counts: tuple[int, ...], exact: bool,
                ) -> np.ndarray:
        """The null of ``mags``/``counts``: its prefix's null, one magnitude further."""
        start = self._null(mags[:-1], counts[:-1], exact) if len(mags) > 1 else None
        null = lattice_null(mags[-1:], counts[-1:], exact=exact, start=start)
        self._bytes += null.nbytes
        return null

    def table(self, key: tuple[int, ...]) -> np.ndarray:
        """p by |S| for the key (gcd, count of magnitude 1, ..., count of magnitude K)."""
        if key not in self._tables:
            if self._bytes > self.max_bytes:
                self._tables.clear()
                self._null.cache_clear()  # type: ignore[attr-defined]
                self._bytes = 0
            g, counts = key[0], key[1:]
            mags = tuple(v // g for v, n in enumerate(counts, start=1) if n)
            present = tuple(n for n in counts if n)
            m = sum(present)
            null = self._null(mags, present, m <= EXACT_TASKS) if m else np.ones(1, np.int64)
            self._tables[key] = lattice_p_by_sum(null, m)
            self._bytes += self._tables[key].nbytes
        return self._tables[key]

    def p_values(self, diffs: np.ndarray, *, attempts: int) -> np.ndarray:
        """p for each row of ``diffs`` (simulations x tasks), integers in [−K, K].

        Args:
            diffs: successes of arm A minus successes of arm B per task, K attempts each.
            attempts: K.

        Returns:
            One p per row, that of ``sign_flip_test(row / K)`` (method ``auto``): the same
            float up to 62 non-zero tasks, within 1e-14 relative beyond (where both sum
            floats in a different order); 1 for a row without a non-zero difference.
        """
        a = np.asarray(diffs)
        if a.ndim != 2 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError("diffs must be a 2-d integer array (simulations x tasks)")
        k = int(attempts)
        if k < 1 or np.any(np.abs(a) > k):
            raise ValueError(f"differences must lie in [-{k}, {k}] for {k} attempts")
        mags = np.arange(1, k + 1)
        counts = np.stack([np.count_nonzero(np.abs(a) == v, axis=1) for v in mags], axis=1)
        # sign_flip_test works on the coarsest lattice the data allow: divide by the gcd.
        g = np.gcd.reduce(np.where(counts > 0, mags, k), axis=1)
        s_obs = np.abs(a.sum(axis=1)) // g
        uniq, inverse = np.unique(np.column_stack([g, counts]), axis=0, return_inverse=True)
        tables = [self.table(row) for row in map(tuple, uniq.tolist())]
        offsets = np.cumsum([0] + [t.size for t in tables[:-1]])
        p: np.ndarray = np.concatenate(tables)[offsets[inverse.ravel()] + s_obs]
        return p


def holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values along each row: ``fire_exp.stats.holm`` of a 2-d
    array (one family of contrasts per simulated panel).

    >>> holm_rows(np.array([[0.01, 0.04, 0.03]])).tolist()
    [[0.03, 0.06, 0.06]]
    """
    p = np.asarray(p, dtype=float)
    if p.ndim != 2:
        raise ValueError("p must be 2-d (simulations x contrasts)")
    return holm(p)
