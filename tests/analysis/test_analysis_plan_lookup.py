"""One lookup of an analysis plan, for ``--plan`` and for a panel's ``panel.analysis``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from fire_exp.analysis.run import resolve_plan
from fire_exp.cli._hydra import to_run_config
from fire_exp.errors import InputError
from fire_exp.paths import ANALYSIS_DIR, CONFIG_DIR
from fire_exp.runner.build import build_panel


@pytest.mark.parametrize("text", ["default", "default.yaml", ANALYSIS_DIR / "default.yaml"])
def test_a_name_a_file_name_and_a_path_find_the_same_plan(text: str | Path) -> None:
    assert resolve_plan(text).resolve() == (ANALYSIS_DIR / "default.yaml").resolve()


def test_a_path_as_given_comes_first(tmp_path: Path) -> None:
    mine = tmp_path / "default.yaml"
    mine.write_text((ANALYSIS_DIR / "default.yaml").read_text())
    assert resolve_plan(mine) == mine


def test_an_unknown_plan_names_the_option_and_the_known_plans() -> None:
    with pytest.raises(InputError) as err:
        resolve_plan("no-such-plan", field="panel.analysis")
    assert err.value.field == "panel.analysis" and "default" in err.value.fix


def _panel_plan(*overrides: str) -> Path:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["panel=demo", *overrides])
    return build_panel(to_run_config(cfg)).analysis_plan


def test_the_panel_finds_its_plan_by_the_same_lookup(tmp_path: Path) -> None:
    assert _panel_plan() == (ANALYSIS_DIR / "demo.yaml").resolve()  # demo's own plan
    assert _panel_plan("panel.analysis=default.yaml") == (ANALYSIS_DIR / "default.yaml").resolve()
    mine = tmp_path / "mine.yaml"
    mine.write_text((ANALYSIS_DIR / "demo.yaml").read_text())
    assert _panel_plan(f"panel.analysis={mine}") == mine.resolve()
    with pytest.raises(InputError, match="panel.analysis: no such analysis plan"):
        _panel_plan("panel.analysis=nope")
