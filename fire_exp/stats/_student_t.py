"""Student t quantiles for integer degrees of freedom, without importing scipy.

``scipy.special`` and ``scipy.stats`` take longer to import than a 30-task analysis takes
to run; the paired t interval needs only this one quantile. For integer ν the two-sided
probability A(t | ν) = P(|T| <= t) is a finite series in θ = atan(t / √ν) (Abramowitz &
Stegun 26.7.3-4), monotone in θ, so the quantile is found by bisection on θ.
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["t_quantile"]


def _two_sided(theta: float, nu: int) -> float:
    """A(t | ν) = P(|T| <= t) at θ = atan(t / √ν)."""
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if nu % 2:
        if nu == 1:
            return 2 * theta / math.pi
        j = np.arange(1, (nu - 3) // 2 + 1)
        terms = np.cumprod(2 * j / (2 * j + 1) * c2)
        return 2 / math.pi * (theta + s * math.sqrt(c2) * (1 + float(terms.sum())))
    j = np.arange(1, (nu - 2) // 2 + 1)
    terms = np.cumprod((2 * j - 1) / (2 * j) * c2)
    return s * (1 + float(terms.sum()))


@functools.lru_cache(maxsize=256)  # contrasts of one analysis share ν and the level
def t_quantile(q: float, nu: int) -> float:
    """The q-quantile of Student's t with ν (a positive integer) degrees of freedom.

    >>> round(t_quantile(0.975, 1), 6), round(t_quantile(0.975, 13), 6)
    (12.706205, 2.160369)
    """
    if nu < 1 or int(nu) != nu:
        raise ValueError(f"degrees of freedom must be a positive integer, got {nu!r}")
    if not 0 < q < 1:
        raise ValueError(f"q must lie in (0, 1), got {q!r}")
    if q == 0.5:
        return 0.0
    target = abs(2 * q - 1)
    low, high = 0.0, math.pi / 2
    for _ in range(200):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        if _two_sided(mid, int(nu)) < target:
            low = mid
        else:
            high = mid
    t = math.sqrt(nu) * math.tan((low + high) / 2)
    return t if q > 0.5 else -t
