"""Unbiased pass@k (Chen et al. 2021) and pass^k (Yao et al. 2024, tau-bench).

For one task with ``n`` attempts of which ``c`` succeeded:

- pass@k = 1 - C(n-c, k) / C(n, k), unbiased for 1 - (1 - p)^k, the chance that at least
  one of k fresh attempts succeeds;
- pass^k = C(c, k) / C(n, k), unbiased for p^k, the chance that all k succeed.

The panel statistic is the mean over tasks (the task is the unit of analysis). ``n < k``
is an error, never a silent clamp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["PassKCurve", "pass_at_k", "pass_curve", "pass_hat_k"]


def _passk_iv(n: ArrayLike, c: ArrayLike, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    n_arr = np.atleast_1d(np.asarray(n))
    c_arr = np.atleast_1d(np.asarray(c))
    if n_arr.shape != c_arr.shape:
        raise ValueError(f"n and c must have the same shape, got {n_arr.shape} and {c_arr.shape}")
    for name, arr in (("n", n_arr), ("c", c_arr)):
        if arr.size and not np.all(np.equal(np.mod(arr, 1), 0)):
            raise ValueError(f"{name} must hold whole numbers of attempts")
    n_arr, c_arr = n_arr.astype(np.int64), c_arr.astype(np.int64)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise ValueError("need 0 <= c <= n for every task")
    if np.any(n_arr < k):
        bad = int(n_arr[n_arr < k][0])
        raise ValueError(f"a task has n={bad} attempts, fewer than k={k}: pass@k and pass^k "
                         "need at least k attempts per task")
    return n_arr, c_arr, int(k)


def _per_task(n: np.ndarray, c: np.ndarray, k: int, hat: bool) -> np.ndarray:
    # Exact integer binomials, one rounding at the division; computed once per distinct
    # (n, c) pair, since panels repeat few attempt counts over thousands of tasks.
    width = int(n.max()) + 1 if n.size else 1
    keys, inverse = np.unique(n * width + c, return_inverse=True)
    values = np.empty(keys.size, dtype=float)
    for i, (ni, ci) in enumerate(zip((keys // width).tolist(), (keys % width).tolist(),
                                     strict=True)):
        if hat:
            values[i] = math.comb(ci, k) / math.comb(ni, k)
        else:
            values[i] = 1.0 - math.comb(ni - ci, k) / math.comb(ni, k)
    out: np.ndarray = values[np.ravel(inverse)].reshape(n.shape)
    return out


def pass_at_k(n: ArrayLike, c: ArrayLike, k: int) -> np.ndarray:
    """Per-task unbiased pass@k.

    Args:
        n: attempts per task.
        c: successes per task.
        k: number of attempts the metric asks about.

    Returns:
        One value per task; average over tasks for the panel's pass@k.

    Raises:
        ValueError: ``n < k`` for some task, or ``c`` outside ``[0, n]``.

    >>> pass_at_k([2, 2, 2], [0, 1, 2], 2).tolist()
    [0.0, 1.0, 1.0]
    """
    n_arr, c_arr, k = _passk_iv(n, c, k)
    return _per_task(n_arr, c_arr, k, hat=False)


def pass_hat_k(n: ArrayLike, c: ArrayLike, k: int) -> np.ndarray:
    """Per-task unbiased pass^k (all k attempts succeed).

    >>> pass_hat_k([2, 2, 3], [1, 2, 2], 2).tolist()
    [0.0, 1.0, 0.3333333333333333]
    """
    n_arr, c_arr, k = _passk_iv(n, c, k)
    return _per_task(n_arr, c_arr, k, hat=True)


@dataclass(frozen=True)
class PassKCurve:
    """Task-averaged pass@k and pass^k for k = 1..K.

    Attributes:
        k: the k values.
        pass_at_k: mean over tasks of per-task pass@k.
        pass_hat_k: mean over tasks of per-task pass^k.
        consistency: pass^K / pass^1 (1.0 when pass^1 is 0: nothing to be inconsistent).
        n_tasks: number of tasks averaged.
    """

    k: tuple[int, ...]
    pass_at_k: tuple[float, ...]
    pass_hat_k: tuple[float, ...]
    consistency: float
    n_tasks: int


def pass_curve(n: ArrayLike, c: ArrayLike, k_max: int | None = None) -> PassKCurve:
    """pass@k and pass^k averaged over tasks, for k = 1..k_max (default: min attempts).

    >>> pass_curve([2, 2], [1, 2]).pass_hat_k
    (0.75, 0.5)
    """
    n_arr = np.atleast_1d(np.asarray(n))
    if n_arr.size == 0:
        raise ValueError("pass_curve needs at least one task")
    k_max = int(n_arr.min()) if k_max is None else k_max
    ks = tuple(range(1, k_max + 1))
    at = tuple(float(pass_at_k(n, c, k).mean()) for k in ks)
    hat = tuple(float(pass_hat_k(n, c, k).mean()) for k in ks)
    consistency = hat[-1] / hat[0] if hat[0] > 0 else 1.0
    return PassKCurve(k=ks, pass_at_k=at, pass_hat_k=hat, consistency=consistency,
                      n_tasks=int(n_arr.size))
