"""Which plan analyses a run: the one frozen with it, unless one is given; said and recorded."""

from __future__ import annotations

import json
import shutil

import pytest

from fire_exp.analysis import analyze, choose_plan, read_run
from fire_exp.errors import InputError
from tests.analysis.analysis_helpers import REPO

DEMO_RUN = REPO / "tests" / "report" / "data" / "demo_run"


@pytest.fixture
def run(tmp_path):
    shutil.copytree(DEMO_RUN, tmp_path / "run")
    return tmp_path / "run"


def _freeze(run, path, sha):
    manifest = json.loads((run / "prereg.json").read_text())
    manifest["hashes"]["analysis_plan"] = {"path": str(path), "sha256": sha}
    (run / "prereg.json").write_text(json.dumps(manifest))


def test_the_frozen_plan_is_found_by_its_hash_wherever_the_run_moved(run):
    sha = json.loads((run / "prereg.json").read_text())["hashes"]["analysis_plan"]["sha256"]
    _freeze(run, "/elsewhere/analysis/demo.yaml", sha)
    choice = choose_plan(read_run(run), None)
    assert choice.source == "frozen" and choice.plan.name == "demo"
    assert choice.path == REPO / "analysis" / "demo.yaml" and choice.matches_frozen


def test_a_vanished_frozen_plan_is_refused_and_named(run):
    _freeze(run, "/elsewhere/analysis/gone.yaml", "cd" * 32)
    with pytest.raises(InputError, match="gone.yaml no longer exists") as err:
        analyze(run)
    assert err.value.field == "hashes.analysis_plan" and "--plan" in err.value.fix


def test_without_a_manifest_only_a_given_plan_and_it_says_so(run):
    (run / "prereg.json").unlink()
    with pytest.raises(InputError, match="no preregistration manifest") as err:
        analyze(run)
    assert "--plan" in err.value.fix
    result = analyze(run, "default")
    assert result.metadata["plan"] == "default" and result.metadata["plan_source"] == "given"
    assert "NO PREREGISTRATION" in str(result.metadata["plan_used"])
    assert result.prereg.empty and result.status.scheduled is None


def test_a_given_plan_is_compared_with_the_frozen_one(run):
    same = choose_plan(read_run(run), REPO / "analysis" / "demo.yaml")
    other = choose_plan(read_run(run), "default")
    assert (same.source, same.matches_frozen) == ("given", True)
    assert (other.source, other.matches_frozen) == ("given", False)
    assert "DIFFERS FROM" in other.describe()
