"""The Binomial(n, 1/2) null of sign-flip and McNemar tests, without importing scipy.stats.

Importing ``scipy.stats`` costs most of a small analysis's run time; these two functions
are all the tests need of it. Exact in integers up to ``_EXACT_N``, in log space above.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb, ldexp

import numpy as np

__all__ = ["half_binom_cdf", "half_binom_pmf"]

_EXACT_N = 1000


@lru_cache(maxsize=256)
def half_binom_pmf(n: int) -> np.ndarray:
    """P(K = k) for k = 0..n, K ~ Binomial(n, 1/2) (read-only; cached per n, as one
    analysis asks for the same n in many contrasts).

    >>> half_binom_pmf(2).tolist()
    [0.25, 0.5, 0.25]
    """
    if n <= _EXACT_N:
        # C(n, k) from C(n, k - 1): one multiplication per k, exact in integers.
        counts, c = [1], 1
        for k in range(1, n + 1):
            c = c * (n - k + 1) // k
            counts.append(c)
        pmf = np.array([ldexp(c, -n) for c in counts])
    else:
        j = np.arange(1, n + 1)
        log_c = np.concatenate([[0.0], np.cumsum(np.log((n - j + 1) / j))])
        pmf = np.exp(log_c - n * np.log(2.0))
    pmf.setflags(write=False)
    return pmf


def half_binom_cdf(k: int, n: int) -> float:
    """P(K <= k), K ~ Binomial(n, 1/2), exact in integers for n <= 1000.

    >>> half_binom_cdf(0, 5)
    0.03125
    """
    if k < 0:
        return 0.0
    if n <= _EXACT_N:
        return float(min(1.0, sum(comb(n, j) for j in range(min(k, n) + 1)) / 2 ** n))
    return float(min(1.0, half_binom_pmf(n)[: k + 1].sum()))
