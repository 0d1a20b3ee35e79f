import pytest

from fire_exp.analysis import load_plan
from tests.importers.helpers import REPO


@pytest.fixture
def fast_plan():
    plan = load_plan(REPO / "analysis" / "default.yaml")
    return plan.model_copy(update={
        "bootstrap": plan.bootstrap.model_copy(update={"n_resamples": 2000}),
        "permutation": plan.permutation.model_copy(update={"n_resamples": 5000})})
