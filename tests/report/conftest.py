import pytest

from fire_exp.analysis import load_plan
from fire_exp.report.build import build_report
from tests.report.helpers import ANALYSIS_DATA, DEMO_RUN, REPO


@pytest.fixture(scope="session")
def plan():
    return load_plan(REPO / "analysis" / "default.yaml")


@pytest.fixture(scope="session")
def fast_plan(plan):
    return plan.model_copy(update={
        "bootstrap": plan.bootstrap.model_copy(update={"n_resamples": 2000}),
        "permutation": plan.permutation.model_copy(update={"n_resamples": 5000})})


@pytest.fixture(scope="session")
def table3_report(tmp_path_factory, plan):
    """The report of FIRE's Table 3 fixture (30 tasks x 2 attempts x 5 arms)."""
    return build_report(ANALYSIS_DATA / "fire_panel_30x2.csv", plan,
                        tmp_path_factory.mktemp("table3"))


@pytest.fixture(scope="session")
def table4_report(tmp_path_factory, fast_plan):
    """The report of FIRE's Table 4 funnel fixture (eligible attempts with funnels)."""
    return build_report(ANALYSIS_DATA / "fire_eligible_funnel.jsonl", fast_plan,
                        tmp_path_factory.mktemp("table4"))


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory, fast_plan):
    """The report of a real demo run (6 tasks x 5 arms x 2 attempts) with its prereg."""
    return build_report(DEMO_RUN, fast_plan, tmp_path_factory.mktemp("demo"))
