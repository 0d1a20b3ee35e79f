import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fire_exp.stats import pass_at_k, pass_curve, pass_hat_k


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n),
                                                      st.integers(1, n))))
def test_matches_math_comb(nck):
    n, c, k = nck
    at = 1 - math.comb(n - c, k) / math.comb(n, k)
    hat = math.comb(c, k) / math.comb(n, k)
    assert abs(pass_at_k([n], [c], k)[0] - at) < 1e-12
    assert abs(pass_hat_k([n], [c], k)[0] - hat) < 1e-12
    assert pass_hat_k([n], [c], k)[0] <= pass_at_k([n], [c], k)[0] + 1e-15


def test_n_less_than_k_raises():
    with pytest.raises(ValueError, match="fewer than k=3"):
        pass_at_k([2, 5], [1, 1], 3)
    with pytest.raises(ValueError, match="fewer than k=3"):
        pass_hat_k([2], [2], 3)


def test_bad_counts_raise():
    with pytest.raises(ValueError):
        pass_at_k([2], [3], 1)
    with pytest.raises(ValueError):
        pass_at_k([2], [1], 0)


def test_curve_published_definitions():
    # pass@2 = share of tasks with a success; pass^2 = share with both (n = 2).
    curve = pass_curve([2, 2, 2, 2], [0, 1, 2, 2])
    assert curve.pass_at_k == (0.625, 0.75)
    assert curve.pass_hat_k == (0.625, 0.5)
    assert curve.consistency == pytest.approx(0.8)


def test_k1_is_mean_success_rate():
    n, c = np.array([3, 4, 5]), np.array([1, 4, 0])
    assert np.allclose(pass_at_k(n, c, 1), c / n)
    assert np.allclose(pass_hat_k(n, c, 1), c / n)
