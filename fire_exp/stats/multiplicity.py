"""Multiplicity adjustment across the secondary contrasts declared in the analysis plan."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["holm"]


def holm(p_values: ArrayLike) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values, in the input order.

    The i-th smallest p is multiplied by (m − i + 1); adjusted values are made monotone by
    a running maximum and capped at 1. Controls the family-wise error rate. A 2-d array is
    many families, one a row (simulated panels), each adjusted on its own.

    >>> holm([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    >>> holm([[0.01, 0.04, 0.03], [0.5, 0.2, 0.01]]).tolist()
    [[0.03, 0.06, 0.06], [0.5, 0.4, 0.03]]
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim not in (1, 2):
        raise ValueError("p_values must be 1-d (one family) or 2-d (one family a row)")
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p_values must lie in [0, 1]")
    m = p.shape[-1]
    if m == 0:
        return p.copy()
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = (m - np.arange(m)) * np.take_along_axis(p, order, axis=-1)
    adjusted = np.minimum(1.0, np.maximum.accumulate(ranked, axis=-1))
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, axis=-1)
    return out
