"""Every config in configs/ composes and builds (so no config rots)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from fire_exp.config import run_config_from_dict
from fire_exp.errors import InputError
from fire_exp.paths import CONFIG_DIR
from fire_exp.runner.build import agent_factory, build_panel, environment_factory, make_executor


def choices(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def compose_run(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return run_config_from_dict(OmegaConf.to_container(cfg, resolve=True))


@pytest.mark.parametrize("panel", choices("panel"))
def test_every_panel_builds(panel: str) -> None:
    config = compose_run(f"panel={panel}")
    built = build_panel(config)
    assert len(built.schedule) == (len(built.tasks) * len(config.panel.arms)
                                   * config.panel.attempts)
    assert set(built.cohorts.values()) <= {"eligible", "silent"}


@pytest.mark.parametrize("agent", choices("agent"))
def test_every_agent_config_builds(agent: str) -> None:
    config = compose_run(f"agent={agent}")
    assert agent_factory(config.agent).make().name == config.agent.name


@pytest.mark.parametrize("name", choices("environment"))
def test_every_environment_config_builds_the_backend_it_names(name: str) -> None:
    component = compose_run(f"environment={name}").environment
    factory = environment_factory(component)
    assert factory.backend_class is not None and factory.backend_class.name == name
    assert dict(factory.params) == component.params  # every setting reaches the backend


@pytest.mark.parametrize("name", choices("executor"))
def test_every_executor_config_builds_the_executor_it_names(name: str) -> None:
    component = compose_run(f"executor={name}").executor
    executor = make_executor(component)
    assert executor.name == name and executor.workers == component.params["workers"]


def test_overrides_reach_the_typed_config() -> None:
    config = compose_run("seed=7", "executor.workers=1", "panel.attempts=1",
                         "agent.tier=strong")
    assert (config.seed, config.executor.params["workers"], config.panel.attempts,
            config.agent.params["tier"]) == (7, 1, 1, "strong")
    assert "strong" in config.run and "s7" in config.run


@pytest.mark.parametrize(("override", "field"), [
    ("panel.attempts=0", "attempts"),
    ("panel.arms=[]", "arms"),
    ("seed=abc", "seed"),
    ("panel.suite=no-such-suite", "no-such-suite"),
    ("agent.tier=genius", "genius"),
])
def test_bad_config_names_the_field(override: str, field: str) -> None:
    with pytest.raises(InputError, match=field):
        config = compose_run(override)
        build_panel(config)


@pytest.mark.parametrize(("override", "field"), [
    ("+environment.keep_workdri=true", "keep_workdri"),
    ("environment.keep_workdir=maybe", "keep_workdir"),
    ("+agent.tempreature=0.5", "tempreature"),
])
def test_a_bad_component_parameter_fails_the_build(override: str, field: str) -> None:
    with pytest.raises(InputError, match=field) as err:
        build_panel(compose_run(override))
    assert "configs/" in str(err.value)


def test_the_panel_is_built_once_into_objects() -> None:
    panel = build_panel(compose_run("panel=demo"))
    assert panel.plan.name == "demo" and panel.replacement.max_replacements == 2
    assert panel.executor.name == "local" and panel.environment.name == "local"
    assert panel.agent.make().name == "simulated"


@pytest.mark.parametrize(("overrides", "run", "resume"), [
    (("run=a",), "a", None),
    (("resume=b",), "b", "b"),
    (("run=c", "resume=c"), "c", "c"),
])
def test_run_and_resume_are_config(overrides: tuple[str, ...], run: str,
                                   resume: str | None) -> None:
    config = compose_run(*overrides)
    assert (config.run, config.resume) == (run, resume)


def test_run_and_resume_that_disagree_are_refused() -> None:
    with pytest.raises(InputError, match="disagree"):
        compose_run("run=a", "resume=b")


def test_configs_dir_is_the_repository_one() -> None:
    assert CONFIG_DIR == Path(__file__).resolve().parents[1] / "configs"


@pytest.mark.parametrize(("override", "message"), [
    ("panel=Demo", "configs/panel: panel=Demo: no panel config 'Demo' (did you mean 'demo'?"),
    ("environment=nonexistent", "no environment config 'nonexistent' (known: docker, local"),
])
def test_an_unknown_group_option_is_one_line_with_the_option_meant(override: str,
                                                                   message: str) -> None:
    """Hydra's eleven-line message and exit 1 became fire-exp's one line and exit 2."""
    from fire_exp.cli._hydra import check_before_compose

    with pytest.raises(InputError) as err:
        check_before_compose([override])
    assert message in f"{err.value.path}: {err.value.field}: {err.value.problem} ({err.value.fix}"
    check_before_compose(["panel=demo", "environment=local", "-m", "agent=simulated,oracle"])
    with pytest.raises(InputError, match="no agent config 'orcale'"):
        check_before_compose(["-m", "agent=simulated,orcale"])


def test_an_unknown_group_option_on_the_command_line_exits_2() -> None:
    from tests.conftest import run_cli

    proc = run_cli("run", "panel=Demo", "results_dir=/nonexistent")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "did you mean 'demo'?" in proc.stderr


@pytest.mark.parametrize("override", ["+panel.atempts=1", "+panel.eligble=[a]"])
def test_a_panel_key_added_with_plus_that_does_not_exist_is_refused(override: str) -> None:
    """``+panel.atempts=1`` was ignored without a word: 24 attempts ran instead of 12."""
    with pytest.raises(InputError, match="did you mean") as err:
        compose_run(override)
    assert err.value.field == override[len("+panel."):].split("=")[0]


def test_a_config_file_with_a_key_twice_is_refused_before_compose(tmp_path: Path,
                                                                  monkeypatch) -> None:
    import shutil

    import fire_exp.cli._hydra as hydra_cli

    configs = Path(shutil.copytree(CONFIG_DIR, tmp_path / "configs"))
    demo = configs / "panel" / "demo.yaml"
    demo.write_text(demo.read_text() + "\nattempts: 7\n")
    monkeypatch.setattr(hydra_cli, "CONFIG_DIR", configs)
    with pytest.raises(InputError, match=r"demo.yaml: line \d+: key 'attempts' appears twice"):
        hydra_cli.check_before_compose(["panel=demo"])


def test_the_bundled_configs_hold_no_key_twice() -> None:
    from fire_exp.cli._hydra import check_before_compose

    check_before_compose([])
