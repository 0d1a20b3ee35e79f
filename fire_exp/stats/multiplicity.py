"""Multiplicity adjustment across the secondary contrasts declared in the analysis plan."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["holm"]


def holm(p_values: ArrayLike) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values, in the input order.

    The i-th smallest p is multiplied by (m − i + 1); adjusted values are made monotone by
    a running maximum and capped at 1. Controls the family-wise error rate.

    >>> holm([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise ValueError("p_values must be 1-d")
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p_values must lie in [0, 1]")
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out
