"""The sign-flip test of ``analyze``, vectorised over many simulated panels.

A simulated panel gives each task an integer difference ``a_i = s_A − s_B`` of successes out
of K attempts per arm, so the per-task difference of pass rates ``a_i / K`` lies on the
1/K lattice and ``fire_exp.stats.sign_flip_test`` (method ``auto``) computes its exact
lattice null. That null depends only on how many non-zero tasks have each magnitude, and the
p-value only on that count vector and |Σ a_i|. Here each distinct count vector's null is
computed once (cached across designs) as ``sign_flip_test`` computes it and turned into a
table of p by |S|, so the test of a whole batch of panels is a few array lookups. Up to 62
non-zero tasks both count sign vectors in int64 and every p is the same float as the one
``analyze`` reports; beyond, both convolve the same floating-point binomials but sum the
tail in a different order, and p agrees to 1e-14 relative (far below any level's grain).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from math import comb

import numpy as np
from scipy import stats as _st

__all__ = ["LatticeSignFlip", "holm_rows"]

_EXACT_TASKS = 62  # as sign_flip_test: counts of sign vectors fit int64 up to 62 tasks


@functools.cache
def _piece(v: int, n_v: int, exact: bool) -> np.ndarray:
    """The null of n_v tasks of magnitude v: Binomial(n_v, 1/2) counts at stride v."""
    part = np.zeros(v * n_v + 1, dtype=np.int64 if exact else float)
    if exact:
        part[::v] = [comb(n_v, j) for j in range(n_v + 1)]
    else:
        part[::v] = _st.binom.pmf(np.arange(n_v + 1), n_v, 0.5)
    part.flags.writeable = False
    return part


@functools.cache
def _convolved(mags: tuple[int, ...], counts: tuple[int, ...], exact: bool) -> np.ndarray:
    # The same steps, in the same order, as permutation._lattice_p (ascending magnitudes);
    # prefixes are cached, and a prefix's product is the same array either way.
    if not mags:
        return np.ones(1, dtype=np.int64 if exact else float)
    out = np.convolve(_convolved(mags[:-1], counts[:-1], exact),
                      _piece(mags[-1], counts[-1], exact))
    out.flags.writeable = False
    return out


def _p_table(mags: tuple[int, ...], counts: tuple[int, ...]) -> np.ndarray:
    """p for every observed |S| = 0..Σ|a| under the exact null of this count vector."""
    m = sum(counts)
    exact = m <= _EXACT_TASKS
    pmf = _convolved(mags, counts, exact)
    total = pmf.size - 1
    upper = np.cumsum(pmf[::-1])[::-1]  # upper[j] = P(S* >= 2j − total)
    # |S*| >= s > 0 is S* >= s or (by symmetry, as likely) S* <= −s.
    tail = 2 * upper[(total + np.arange(total + 1) + 1) // 2]
    tail[0] = upper[0]
    # int64 -> float64 rounds as Python's int / int does: the same p as sign_flip_test.
    table: np.ndarray = np.minimum(1.0, tail / 2.0 ** m if exact else tail)
    return table


@dataclass
class LatticeSignFlip:
    """Exact two-sided sign-flip p-values for rows of integer task differences.

    Keeps a cache of null tables keyed by count vector, so reuse one instance across the
    designs of a power grid.

    >>> LatticeSignFlip().p_values(np.array([[2, 1, 2, 1, 2, 0, 0]]), attempts=2).tolist()
    [0.0625]
    """

    _cache: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict)

    def table(self, key: tuple[int, ...]) -> np.ndarray:
        """p by |S| for the key (gcd, count of magnitude 1, ..., count of magnitude K)."""
        if key not in self._cache:
            g, counts = key[0], key[1:]
            present = [(v // g, n) for v, n in enumerate(counts, start=1) if n > 0]
            self._cache[key] = (_p_table(tuple(v for v, _ in present),
                                         tuple(n for _, n in present))
                                if present else np.ones(1))
        return self._cache[key]

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
    """Holm step-down adjusted p-values along each row (as ``fire_exp.stats.holm``).

    >>> holm_rows(np.array([[0.01, 0.04, 0.03]])).tolist()
    [[0.03, 0.06, 0.06]]
    """
    p = np.asarray(p, dtype=float)
    if p.ndim != 2:
        raise ValueError("p must be 2-d (simulations x contrasts)")
    m = p.shape[1]
    order = np.argsort(p, axis=1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=1) * (m - np.arange(m))
    adj = np.minimum(1.0, np.maximum.accumulate(ranked, axis=1))
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=1)
    return out
