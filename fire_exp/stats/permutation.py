"""Two-sided paired sign-flip permutation test over tasks.

Under the null of no arm effect, each task's paired difference d_i is equally likely to
have either sign. The statistic is S = Σ d_i (equivalently the mean difference) and

    p = P(|S*| >= |S|),  S* = Σ ε_i d_i,  ε_i = ±1 with probability 1/2.

Zero differences never change p and are dropped (m = the number of non-zero tasks), so the
smallest attainable p is 2 / 2^m. The null is computed

- exactly by integer convolution when every d_i is a multiple of 1/K ("exact-lattice"),
  for any number of tasks;
- exactly by enumerating all 2^m sign vectors when m <= 20 ("exact-enumeration");
- else by Monte Carlo with B random sign vectors, p = (1 + #{|S*| >= |S|}) / (1 + B)
  ("monte-carlo"), with Monte Carlo standard error √(p(1 − p)/B).

For this symmetric null, p equals scipy's ``permutation_test`` two-sided p for exact tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import comb, lcm, ldexp
from typing import overload

import numpy as np
from numpy.typing import ArrayLike

from fire_exp.stats._binom import half_binom_pmf

__all__ = ["EXACT_TASKS", "SignFlipResult", "lattice_null", "lattice_p_by_sum",
           "lattice_resolution", "min_attainable_p", "sign_flip_test"]

# Null statistics within rounding of the observed one count as ties. Rounding is relative to
# the terms summed (Σ|d|), not to |S| as in scipy: an S that is 0 in exact arithmetic is a
# few ulps of Σ|d| in floats, and a tolerance of |S| would miss its ties (p < 1).
_REL_TOL = 1e-14
_MAX_LATTICE_WORK = 300_000_000  # multiply-adds the exact convolution may spend
EXACT_TASKS = 62  # counts of sign vectors fit int64 up to 62 tasks


@dataclass(frozen=True)
class SignFlipResult:
    """Result of ``sign_flip_test``.

    Attributes:
        statistic: mean paired difference over all tasks (zeros included).
        p_value: two-sided p, never 0 and never NaN.
        method: ``exact-lattice``, ``exact-enumeration``, ``monte-carlo`` or
            ``degenerate`` (no non-zero difference: p = 1).
        n_resamples: random sign vectors drawn (0 for exact methods).
        mc_se: Monte Carlo standard error of p (0 for exact methods).
        min_attainable_p: 2 / 2^m (1 when m = 0).
        n_tasks: tasks tested.
        n_nonzero: m, tasks with a non-zero difference.
    """

    statistic: float
    p_value: float
    method: str
    n_resamples: int
    mc_se: float
    min_attainable_p: float
    n_tasks: int
    n_nonzero: int


def lattice_resolution(diffs: ArrayLike, max_denominator: int = 1000) -> int | None:
    """Smallest K such that every difference is a multiple of 1/K, or None.

    >>> lattice_resolution([0.5, -1.0, 0.0]), lattice_resolution([0.1234567])
    (2, None)
    """
    k = 1
    # Lattice data hold few distinct values: test each once, not every task.
    for x in np.unique(np.asarray(diffs, dtype=float).ravel()).tolist():
        f = Fraction(x).limit_denominator(max_denominator)
        if abs(float(f) - x) > 1e-9 * max(1.0, abs(x)):
            return None
        k = lcm(k, f.denominator)
        if k > max_denominator:
            return None
    return k


def _sign_flip_iv(diffs: ArrayLike, n_resamples: int) -> np.ndarray:
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1 or d.size == 0:
        raise ValueError("diffs must be a non-empty 1-d array of per-task differences")
    if not np.all(np.isfinite(d)):
        raise ValueError("diffs must be finite (drop tasks missing from either arm first)")
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    return d


@overload
def min_attainable_p(n_nonzero: int) -> float: ...


@overload
def min_attainable_p(n_nonzero: np.ndarray) -> np.ndarray: ...


def min_attainable_p(n_nonzero: int | np.ndarray) -> float | np.ndarray:
    """2 / 2^m, the smallest two-sided p an exact sign-flip test of m non-zero tasks can
    give (1 for m <= 1); elementwise for an array of m. Never overflows: 2.0 ** m would
    at m = 1,024; beyond m = 1,075 it is 0.

    >>> min_attainable_p(5), min_attainable_p(2_000), min_attainable_p(np.array([0, 3])).tolist()
    (0.0625, 0.0, [1.0, 0.25])
    """
    if isinstance(n_nonzero, np.ndarray):
        smallest: np.ndarray = np.minimum(1.0, np.ldexp(1.0, 1 - n_nonzero))
        return smallest
    return min(1.0, ldexp(1.0, 1 - n_nonzero))


def lattice_null(magnitudes: Sequence[int], counts: Sequence[int], *,
                 exact: bool | None = None, start: np.ndarray | None = None) -> np.ndarray:
    """The exact null of integer task differences: ``counts[j]`` non-zero tasks of
    magnitude ``magnitudes[j]`` (ascending), each of either sign with probability 1/2.

    Entry t is the null's weight of T = Σ|a_i|·b_i = t (b_i ~ Bernoulli(1/2); the sum of
    the differences is S* = 2T − Σ|a_i|): the number of sign vectors in int64 (``exact``,
    by default when there are at most 62 tasks), else the probability (binomials convolved
    in floats, by FFT when long). Convolved by ascending magnitude, as
    :func:`sign_flip_test` does; ``start`` is the null of the smaller magnitudes, already
    convolved (its dtype says whether it is exact), so a caller can share prefixes.

    >>> lattice_null([1, 2], [2, 1]).tolist()  # T of |a| = 1, 1, 2 over 8 sign vectors
    [1, 2, 2, 2, 1]
    """
    if start is not None:
        exact = start.dtype.kind == "i"
    elif exact is None:
        exact = sum(counts) <= EXACT_TASKS
    elif exact and sum(counts) > EXACT_TASKS:
        raise ValueError(f"counts of sign vectors of {sum(counts)} tasks overflow int64")
    pmf = start if start is not None else np.ones(1, dtype=np.int64 if exact else float)
    for v, n_v in zip(magnitudes, counts, strict=True):
        if exact:
            pmf = np.convolve(pmf, _sign_vector_counts(int(v), int(n_v)))
        else:
            part = np.zeros(v * n_v + 1)
            part[::v] = half_binom_pmf(int(n_v))
            pmf = _convolve(pmf, part)
    return pmf


@lru_cache(maxsize=4096)
def _sign_vector_counts(v: int, n: int) -> np.ndarray:
    """C(n, j) at T = j·v: the sign vectors of n tasks of magnitude v (read-only; tiny, as
    n <= 62, and asked for again and again by a power grid)."""
    part = np.zeros(v * n + 1, dtype=np.int64)
    part[::v] = [comb(n, j) for j in range(n + 1)]
    part.setflags(write=False)
    return part


def lattice_p_by_sum(null: np.ndarray, n_tasks: int) -> np.ndarray:
    """The two-sided p of every observable |S| = 0, 1, ..., Σ|a_i|, from the
    :func:`lattice_null` of ``n_tasks`` non-zero tasks: a table to look p up in, for many
    panels of one count vector.

    With an exact null each p is the same float :func:`sign_flip_test` gives; with a
    float null the tail is summed in another order and p agrees to about 1e-14 relative.

    >>> lattice_p_by_sum(lattice_null([1], [3]), 3).tolist()  # S* is ±1 or ±3
    [1.0, 1.0, 0.25, 0.25]
    """
    total = null.size - 1
    upper = np.cumsum(null[::-1])[::-1]  # upper[j] = weight of S* >= 2j − total
    # |S*| >= s > 0 is S* >= s or (by symmetry, as likely) S* <= −s.
    tail = 2 * upper[(total + np.arange(total + 1) + 1) // 2]
    tail[0] = upper[0]
    if null.dtype.kind == "i":  # int64 -> float64 rounds as int / int in sign_flip_test
        return np.minimum(1.0, tail / 2.0 ** n_tasks)
    p: np.ndarray = np.minimum(1.0, tail)
    return p


def _lattice_p(a: np.ndarray) -> float:
    """Exact p for integer differences a (non-zero): convolve binomials of equal |a|."""
    mags, counts = np.unique(np.abs(a), return_counts=True)
    pmf = lattice_null(mags.tolist(), counts.tolist())
    exact = a.size <= EXACT_TASKS
    total = int(mags @ counts)
    s_obs = abs(int(a.sum()))
    support = np.abs(2 * np.arange(total + 1) - total)
    tail = pmf[support >= s_obs].sum()
    return float(min(1.0, int(tail) / 2 ** a.size if exact else tail))


def _convolve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """np.convolve, by FFT for long inputs (error ~1e-16 of the total mass). Floats only:
    exact integer nulls are convolved by np.convolve in :func:`lattice_null`."""
    if x.size * y.size < 4_000_000:
        return np.convolve(x, y)
    n = x.size + y.size - 1
    size = 1 << (n - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(y, size), size)[:n]
    return np.clip(out, 0.0, None)


def _lattice_work(a: np.ndarray) -> int:
    """Multiply-adds of the binomial convolutions (fine lattices with many values are slow)."""
    length, work = 1, 0
    for v, n_v in zip(*np.unique(np.abs(a), return_counts=True), strict=True):
        part = int(v) * int(n_v) + 1
        work += length * part
        length += part - 1
    return work


def _half_sums(d: np.ndarray) -> np.ndarray:
    s = np.zeros(1)
    for x in d:
        s = np.concatenate([s + x, s - x])
    return s


def _enumeration_p(d: np.ndarray) -> float:
    """Exact p over all 2^m sign vectors by meeting in the middle (2^(m/2) x 2^(m/2))."""
    s_obs = abs(d.sum())
    h = d.size // 2
    left, right = _half_sums(d[:h]), _half_sums(d[h:])
    thr = s_obs - _REL_TOL * float(np.abs(d).sum())
    count = 0
    for row in np.array_split(left, max(1, left.size // 256)):
        count += int(np.count_nonzero(np.abs(row[:, None] + right[None, :]) >= thr))
    return min(1.0, ldexp(count, -d.size))


def _monte_carlo_p(d: np.ndarray, n_resamples: int, rng: np.random.Generator,
                   ) -> tuple[float, float]:
    """MC p: 64 signs per raw 64-bit draw; byte lookup tables sum 8 tasks at a time.

    Integer differences (a lattice scaled by K) are summed in int64, so a null sum that
    ties the observed one is counted exactly; others compare within a relative tolerance.
    """
    integer = d.dtype.kind == "i"
    mags = np.abs(d)
    m = mags.size
    n_bytes = -(-m // 8)
    words = -(-n_bytes // 8)
    padded = np.zeros(n_bytes * 8, dtype=mags.dtype)
    padded[:m] = mags
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1,
                         bitorder="little").astype(mags.dtype)  # 256 x 8
    # tables[g, byte] = Σ of |d| over the tasks of group g whose bit is set
    tables = (bits @ padded.reshape(n_bytes, 8).T).T.ravel()
    offsets = (np.arange(n_bytes) * 256).astype(np.intp)
    total, s_obs = mags.sum(), abs(d.sum())
    thr = s_obs if integer else s_obs - _REL_TOL * total
    hits = 0
    chunk = max(1, 262_144 // n_bytes)
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        raw = rng.bit_generator.random_raw(rows * words).reshape(rows, words)
        byts = raw.view(np.uint8)[:, :n_bytes]
        plus = np.take(tables, byts + offsets).sum(axis=1)
        hits += int(np.count_nonzero(np.abs(2 * plus - total) >= thr))
    p = (1 + hits) / (1 + n_resamples)
    return p, float(np.sqrt(p * (1 - p) / n_resamples))


def sign_flip_test(diffs: ArrayLike, *, n_resamples: int = 100_000,
                   max_enumeration: int = 20, lattice: int | None | bool = True,
                   method: str = "auto", rng: np.random.Generator | None = None,
                   ) -> SignFlipResult:
    """Two-sided paired sign-flip test of a zero mean task-level difference.

    Estimand: the mean over tasks of the per-task difference between two arms (each arm's
    per-task value is the mean of its attempts). Unit of analysis: the task.

    Args:
        diffs: per-task differences A − B.
        n_resamples: B for the Monte Carlo method.
        max_enumeration: enumerate all sign vectors when m is at most this.
        lattice: ``True`` detects whether the differences lie on a 1/K lattice; an int
            gives K; ``False``/``None`` never uses the lattice method.
        method: ``"auto"`` (exact whenever possible) or ``"monte-carlo"`` (always draw B
            sign vectors, as the FIRE panel did).
        rng: needed only for the Monte Carlo method.

    Returns:
        SignFlipResult with the method actually used.

    References:
        Fisher (1935), The Design of Experiments, §21; Phipson & Smyth (2010), Permutation
        p-values should never be zero.

    >>> sign_flip_test([1.0, 0.5, 1.0, 0.5, 1.0, 0.0, 0.0]).p_value
    0.0625
    """
    d = _sign_flip_iv(diffs, n_resamples)
    if method not in {"auto", "monte-carlo"}:
        raise ValueError(f"method must be 'auto' or 'monte-carlo', got {method!r}")
    stat = float(d.mean())
    nz = d[d != 0]
    m = int(nz.size)
    min_p = min_attainable_p(m)

    def result(p: float, how: str, b: int = 0, se: float = 0.0) -> SignFlipResult:
        return SignFlipResult(statistic=stat, p_value=p, method=how, n_resamples=b, mc_se=se,
                              min_attainable_p=min_p, n_tasks=int(d.size), n_nonzero=m)

    if m == 0:
        return result(1.0, "degenerate")
    k = lattice_resolution(nz) if lattice is True else (lattice or None)
    scaled = None
    if k is not None:
        a = np.rint(nz * k)
        if np.allclose(a, nz * k, rtol=0, atol=1e-9):
            scaled = a.astype(np.int64)
    if method != "monte-carlo":
        if scaled is not None and _lattice_work(scaled) <= _MAX_LATTICE_WORK:
            return result(_lattice_p(scaled), "exact-lattice")
        if m <= max_enumeration:
            return result(_enumeration_p(nz), "exact-enumeration")
    if rng is None:
        raise ValueError(f"{m} non-zero tasks off any lattice need the Monte Carlo method: "
                         "pass rng=")
    p, se = _monte_carlo_p(nz if scaled is None else scaled, int(n_resamples), rng)
    return result(p, "monte-carlo", int(n_resamples), se)
