"""Capabilities are the contract: a task that needs what its box cannot give is refused
before the panel's first attempt, naming the task, its task.toml field and the fix; local's
network runs such a task only when the user says so (``environment.allow_network``), and
each record then names the policy that was not kept (``network_not_enforced``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fire_exp.config import ComponentConfig, PanelConfig, RunConfig
from fire_exp.environments.base import Capability
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.local import LocalEnvironment
from fire_exp.errors import InputError, PreflightError
from fire_exp.paths import SUITES_DIR
from fire_exp.records import read_records, record_to_line
from fire_exp.runner.build import build_panel, prepare_panel
from fire_exp.runner.execute import build_attempt
from fire_exp.runner.job_records import harness_failure
from fire_exp.runner.model import job_for
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.model import Task
from tests.conftest import run_cli

TASK = "csv-column-stats"  # bundled: network_mode = "no-network"


class NoServices(LocalEnvironment):
    """A backend whose boxes end everything with the agent's session."""

    name = "no-services"
    capabilities = LocalEnvironment.capabilities - {Capability.SERVICES}


def task_copy(tmp: Path, *, network: str = "no-network", extra: str = "") -> Task:
    """The bundled task with its network_mode (and ``extra`` [environment] lines) changed."""
    dest = tmp / "suite" / TASK
    shutil.copytree(SUITES_DIR / "fire-mini" / TASK, dest)
    toml = dest / "task.toml"
    text = toml.read_text().replace('network_mode = "no-network"',
                                    f'network_mode = "{network}"\n{extra}')
    toml.write_text(text)
    return load_task(dest)


def config(tmp: Path, environment: dict[str, object]) -> RunConfig:
    return RunConfig(
        panel=PanelConfig(name="caps", suite="fire-mini", eligible=(), silent=(TASK,),
                          arms=("baseline",), attempts=1, portfolio="fire-core",
                          analysis="demo"),
        agent=ComponentConfig("nop"), environment=ComponentConfig("local", environment),
        executor=ComponentConfig("local", {"workers": 1}), seed=0, run="r",
        results_dir=str(tmp))


def test_a_no_network_task_on_local_is_refused_before_the_panel(tmp_path: Path) -> None:
    panel = build_panel(config(tmp_path, {"allow_network": False}))
    with pytest.raises(PreflightError) as refused:
        prepare_panel(panel, report=lambda line: None)
    what, fix = refused.value.what, refused.value.how_to_fix
    assert f"task {TASK}: task.toml [environment] network_mode = \"no-network\"" in what
    assert "environment=local cannot enforce" in what
    assert "environment.allow_network=true" in fix and "network_policy" in fix


@pytest.mark.slow
def test_the_local_default_config_says_so_and_the_run_refuses_without_it(
        tmp_path: Path) -> None:
    """``fire-exp run panel=demo`` as a user types it, the setting turned off: refused
    before an attempt is recorded. Slow (about 3 s): the demo's config is composed and its
    panel built through the command line, which is what is tested."""
    proc = run_cli("run", "panel=demo", "panel.attempts=1", "environment.allow_network=false",
                   f"results_dir={tmp_path}", "run=refused")
    assert proc.returncode != 0
    assert "network_mode" in proc.stderr and "allow_network=true" in proc.stderr
    assert not (tmp_path / "demo" / "refused" / "attempts.jsonl").exists()


def test_with_allow_network_each_record_names_the_unenforced_policy(tmp_path: Path) -> None:
    panel = build_panel(config(tmp_path, {"allow_network": True}))
    lines: list[str] = []
    prepare_panel(panel, report=lines.append)
    assert any("allow_network=true" in line for line in lines)  # said before the panel
    job = job_for(panel, tmp_path / "run", panel.schedule[0])
    record = build_attempt(panel, job).run()
    assert record.network_not_enforced == "no-network"
    assert json.loads(record_to_line(record))["network_not_enforced"] == "no-network"
    # A record fire-exp writes for an attempt it could not run says so too.
    assert harness_failure(panel, job, "lost").network_not_enforced == "no-network"


def test_a_box_that_keeps_the_policy_adds_no_field(tmp_path: Path) -> None:
    public = task_copy(tmp_path, network="public")
    assert LocalEnvironment(public, tmp_path / "a", "a").network_not_enforced is None
    no_network = load_task(SUITES_DIR / "fire-mini" / TASK)
    assert DockerEnvironment(no_network, tmp_path / "b", "b").network_not_enforced is None
    LocalEnvironment.check_tasks([public])  # nothing to waive: not refused
    # A record of a run that was valid before has the same keys as before.
    old = read_records(Path(__file__).parents[1] / "report" / "data" / "demo_run" /
                       "attempts.jsonl").finished[0]
    assert "network_not_enforced" not in json.loads(record_to_line(old))


def test_a_task_needing_services_is_refused_where_they_die_with_the_session(
        tmp_path: Path) -> None:
    task = task_copy(tmp_path, network="public", extra="services = true")
    assert task.environment.services
    LocalEnvironment.check_tasks([task])  # local keeps detached work
    with pytest.raises(PreflightError) as refused:
        NoServices.check_tasks([task])
    assert f"task {TASK}: task.toml [environment] services = true" in refused.value.what
    assert "environment=no-services" in refused.value.what
    assert "services capability" in refused.value.how_to_fix


def test_a_services_key_that_is_not_a_boolean_is_refused_where_it_enters(
        tmp_path: Path) -> None:
    with pytest.raises(InputError, match="environment.services.*expected a boolean"):
        task_copy(tmp_path, extra='services = "yes"')


def test_the_manifest_names_the_tasks_whose_network_is_not_enforced(tmp_path: Path) -> None:
    from fire_exp.runner.prereg import panel_hashes

    waived = panel_hashes(build_panel(config(tmp_path, {"allow_network": True})))
    assert waived["network_not_enforced"]["path"] == (
        f"environment=local does not enforce the network_mode of 1 tasks: {TASK}")
    kept = panel_hashes(build_panel(config(tmp_path, {"allow_network": False})))
    assert kept["environment_config"] != waived["environment_config"]  # frozen either way
