import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from fire_exp.stats import holm


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_matches_statsmodels(ps):
    ours = holm(ps)
    ref = multipletests(ps, method="holm")[1]
    assert np.allclose(ours, ref, atol=1e-12)
    assert np.all(ours >= np.asarray(ps) - 1e-15) and np.all(ours <= 1)


def test_empty():
    assert holm([]).size == 0
