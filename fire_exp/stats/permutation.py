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

from dataclasses import dataclass
from fractions import Fraction
from math import comb, lcm, ldexp

import numpy as np
from numpy.typing import ArrayLike

from fire_exp.stats._binom import half_binom_pmf

__all__ = ["SignFlipResult", "lattice_resolution", "sign_flip_test"]

_REL_TOL = 1e-14  # as scipy: null statistics within rounding of the observed one count
_MAX_LATTICE_WORK = 300_000_000  # multiply-adds the exact convolution may spend


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


def _lattice_p(a: np.ndarray) -> float:
    """Exact p for integer differences a (non-zero): convolve binomials of equal |a|."""
    mags = np.abs(a)
    total = int(mags.sum())
    # T = Σ|a_i|·b_i with b_i ~ Bernoulli(1/2); S* = 2T − Σ|a_i|.
    # Up to 62 tasks the counts of sign vectors fit int64: p is one exact division.
    exact = mags.size <= 62
    pmf = np.ones(1, dtype=np.int64 if exact else float)
    for v, n_v in zip(*np.unique(mags, return_counts=True), strict=True):
        part = np.zeros(int(v) * int(n_v) + 1, dtype=pmf.dtype)
        if exact:
            part[:: int(v)] = [comb(int(n_v), j) for j in range(int(n_v) + 1)]
        else:
            part[:: int(v)] = half_binom_pmf(int(n_v))
        pmf = _convolve(pmf, part)
    s_obs = abs(int(a.sum()))
    support = np.abs(2 * np.arange(total + 1) - total)
    tail = pmf[support >= s_obs].sum()
    return float(min(1.0, int(tail) / 2 ** mags.size if exact else tail))


def _convolve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """np.convolve, by FFT for long float inputs (error ~1e-16 of the total mass)."""
    if x.dtype.kind == "i" or x.size * y.size < 4_000_000:
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
    thr = s_obs - _REL_TOL * s_obs
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
    thr = s_obs if integer else s_obs - _REL_TOL * s_obs
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
    min_p = min(1.0, ldexp(1.0, 1 - m)) if m else 1.0  # no 2.0 ** m: it overflows at 1024

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
