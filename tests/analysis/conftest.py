import pytest

from fire_exp.analysis import load_plan
from tests.analysis.analysis_helpers import REPO


@pytest.fixture
def plan():
    return load_plan(REPO / "analysis" / "default.yaml")


@pytest.fixture
def fast_plan(plan):
    return plan.model_copy(update={
        "bootstrap": plan.bootstrap.model_copy(update={"n_resamples": 500}),
        "permutation": plan.permutation.model_copy(update={"n_resamples": 2000})})
