"""``fire-exp freeze power_table=DIR`` records what the preregistration could detect."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from fire_exp.cli import main as fire_exp_main
from fire_exp.config import RunConfig, run_config_from_dict
from fire_exp.errors import InputError
from fire_exp.paths import CONFIG_DIR
from fire_exp.power.manifest import power_record
from fire_exp.runner.build import build_panel
from fire_exp.runner.prereg import verify_manifest


def _compose(*overrides: str) -> RunConfig:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return run_config_from_dict(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]


SMALL = ["tasks=[3,10]", "attempts=[2]", "effects=[0,30]", "n_sims=200", "max_tasks=40"]


def test_freeze_records_the_power_table_and_the_run_still_verifies(cli, tmp_path: Path,
                                                                   ) -> None:
    out, prereg = tmp_path / "power", tmp_path / "demo.prereg.json"
    assert fire_exp_main(["power", "panel=demo", f"out={out}", *SMALL]) == 0
    done = cli("freeze", "panel=demo", f"prereg={prereg}", f"power_table={out}")
    assert done.returncode == 0, done.stderr
    power = json.loads(prereg.read_text())["power"]
    assert power["power_csv_sha256"] == hashlib.sha256((out / "power.csv").read_bytes()
                                                       ).hexdigest()
    assert [r["n_tasks"] for r in power["mde"]] == [3, 10]
    assert "+20 points" in power["sentence"] and power["primary"] == "real - sham"
    panel = build_panel(_compose("panel=demo", f"prereg={prereg}"))
    assert verify_manifest(panel, prereg)["power"] == power  # hashes untouched
    # A table made for another panel is refused before any manifest is written.
    other = tmp_path / "other.json"
    bad = cli("freeze", "panel=fire-mini", f"prereg={other}", f"power_table={out}")
    assert bad.returncode == 2 and "computed for 'demo'" in bad.stderr
    assert not other.exists()


def test_power_record_refuses_a_folder_without_power_output(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a fire-exp power output"):
        power_record(tmp_path, panel="demo", plan_sha256="x")
