import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from fire_exp.stats import mcnemar_exact, mcnemar_pooled, mcnemar_stratified


@pytest.mark.parametrize("b", range(0, 13, 3))
@pytest.mark.parametrize("c", range(0, 13, 4))
def test_matches_statsmodels_exact(b, c):
    ref = mcnemar(np.array([[5, b], [c, 7]]), exact=True).pvalue
    assert mcnemar_exact(b, c).p_value == pytest.approx(min(1.0, ref), abs=1e-14)


def test_no_discordant_pairs_is_p_one_not_zero():
    r = mcnemar_exact(0, 0)
    assert (r.p_value, r.method) == (1.0, "degenerate")
    assert mcnemar_pooled([0, 0], [0, 0]).p_value == 1.0


def test_pooled_sums_strata():
    assert mcnemar_pooled([3, 4], [1, 0]).p_value == mcnemar_exact(7, 1).p_value


def test_stratified_equal_weights_equals_pooled():
    b, c = [3, 4, 2], [1, 0, 2]
    assert mcnemar_stratified(b, c, [1, 1, 1]).p_value == pytest.approx(
        mcnemar_pooled(b, c).p_value, abs=1e-12)


def test_stratified_weights_matter_and_stay_valid():
    r = mcnemar_stratified([5, 0], [0, 3], [1.0, 0.25])
    assert 0 < r.p_value < 1 and r.statistic == pytest.approx(5 - 0.75)
    assert mcnemar_stratified([5, 0], [0, 3], [1.0, 1.0]).p_value > r.p_value
