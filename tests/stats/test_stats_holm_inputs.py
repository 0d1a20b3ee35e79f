"""Holm's inputs: p-values in [0, 1] (both ends included), one family or one a row; anything
else is refused with the same message, whatever else is in the list."""

from __future__ import annotations

import numpy as np
import pytest

from fire_exp.stats import holm


@pytest.mark.parametrize("p", [[0.2, np.nan], [np.inf], [-np.inf, 0.5], [-0.01], [1.01],
                               [0.5, 2.0], [np.nan, 1.5]])
def test_p_values_outside_the_unit_interval_are_refused(p: list[float]) -> None:
    with pytest.raises(ValueError, match=r"^p_values must lie in \[0, 1\]$"):
        holm(p)


@pytest.mark.parametrize("p", [[[[0.1, 0.2]]], 0.3])
def test_p_values_of_more_than_two_dimensions_or_none_are_refused(p: object) -> None:
    with pytest.raises(ValueError, match=r"^p_values must be 1-d \(one family\) or 2-d "
                                         r"\(one family a row\)$"):
        holm(p)


def test_each_row_of_a_matrix_is_a_family_of_its_own() -> None:
    rows = [[0.01, 0.04, 0.03], [0.5, 0.2, 0.01], [1.0, 0.0, 0.02]]
    assert holm(rows).tolist() == [holm(row).tolist() for row in rows]


@pytest.mark.parametrize(("p", "adjusted"), [
    ([0.0, 1.0], [0.0, 1.0]), ([1.0], [1.0]), ([0.3], [0.3]), ([1, 0], [1.0, 0.0]),
    ([0.02, 0.02, 0.5], [0.06, 0.06, 0.5]), ([], []),
])
def test_the_ends_of_the_interval_and_ties_are_adjusted(p: list[float],
                                                        adjusted: list[float]) -> None:
    assert holm(p).tolist() == pytest.approx(adjusted, abs=1e-15)
