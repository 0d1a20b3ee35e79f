"""Before the first attempt: preflight and image preparation refuse a panel that cannot run.

Nothing is recorded when they do: no run folder, no manifest, no attempt.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.docker_engine import docker_client
from fire_exp.errors import PreflightError
from fire_exp.paths import SUITES_DIR
from tests.ci import missing
from tests.runner.runner_helpers import cli

BROKEN = "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo broken on purpose && exit 3\n"


def test_docker_preflight_names_the_unreachable_engine(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(PreflightError) as err:
        DockerEnvironment.preflight()
    assert "cannot reach the Docker engine" in err.value.what
    assert "environment=local" in err.value.how_to_fix


@pytest.mark.docker
def test_a_broken_dockerfile_stops_the_run_before_any_attempt(tmp_path: Path) -> None:
    try:
        docker_client().close()
    except Exception as exc:  # noqa: BLE001
        missing(f"no Docker engine is reachable: {exc}")
    suite = tmp_path / "suite"
    shutil.copytree(SUITES_DIR / "fire-mini" / "csv-column-stats", suite / "broken-image")
    (suite / "broken-image" / "environment" / "Dockerfile").write_text(BROKEN)
    proc = cli("environment=docker", f"panel.suite={suite}", "panel.eligible=[]",
               "panel.silent=[broken-image]", "run=r", results=tmp_path / "results",
               timeout=600)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("fire-exp run:")]
    assert len(errors) == 1 and "image build failed" in errors[0], proc.stderr
    assert "csv-column-stats" in errors[0]
    assert not (tmp_path / "results").exists()
