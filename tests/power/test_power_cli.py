"""``fire-exp power`` as a user runs it: outputs, sources, and loud refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from fire_exp.cli import main as fire_exp_main
from fire_exp.cli.power import power_overrides
from fire_exp.paths import CONFIG_DIR
from fire_exp.power.inputs import pilot_rates, tier_rates
from fire_exp.power.settings import power_settings
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.suites import resolve_suite

REPO = Path(__file__).resolve().parents[2]
FIRE = REPO / "tests" / "analysis" / "data" / "fire_eligible_14x2.csv"
SMALL = ["tasks=[10,14]", "attempts=[2]", "effects=[0,25]", "n_sims=300", "max_tasks=80"]


def test_power_writes_every_output_and_one_line(cli, tmp_path: Path) -> None:
    out = tmp_path / "power"
    done = cli("power", "panel=fire-mini", f"out={out}", *SMALL)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("preregister ")
    grid = pd.read_csv(out / "power.csv")
    assert {"n_tasks", "attempts", "effect_pp", "power", "mc_se"} <= set(grid.columns)
    primary = grid[grid["role"] == "primary"]
    assert len(primary) == 2 * 1 * 2 and set(grid["role"]) == {"primary", "secondary (Holm)"}
    null = primary[primary["effect_pp"] == 0]
    assert (null["power"] <= 0.05 + 3 * null["mc_se"]).all()
    mde = pd.read_csv(out / "mde.csv")
    assert mde["min_attainable_p"].tolist() == [2 / 2 ** 10, 2 / 2 ** 14]
    meta = json.loads((out / "power.json").read_text())
    assert meta["source"].startswith("simulated agent, tier mid")
    assert meta["primary"] == "real - sham" and meta["alpha"] == pytest.approx(0.05)
    for name in ("power.png", "power.pdf", "mde.md"):
        assert (out / name).stat().st_size > 1000 or name == "mde.md"


def test_pilot_drives_the_rates(cli, tmp_path: Path) -> None:
    done = cli("power", "panel=fire-mini", f"pilot={FIRE}", f"out={tmp_path}",
               "target_effect=25", *SMALL)
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "power.json").read_text())
    assert meta["source"] == f"pilot {FIRE.name}: 14 eligible tasks of sham"


@pytest.mark.parametrize(("args", "names"), [
    (["pilot=/no/such/pilot.csv"], "/no/such/pilot.csv"),
    (["source=magic"], "power.source"),
    (["effects=[0,90]", "source=beta"], "outside"),
    (["tasks=[0,10]"], "power.tasks"),
    (["nosuchkey=1"], "nosuchkey"),
])
def test_bad_input_is_refused_in_one_line(capsys: pytest.CaptureFixture[str],
                                          args: list[str], names: str) -> None:
    assert fire_exp_main(["power", "panel=fire-mini", *args]) == 2
    err = capsys.readouterr().err
    assert names in err and len(err.strip().splitlines()) == 1, err


def test_power_group_composes_into_settings() -> None:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=power_overrides(["panel=demo", "n_sims=7"]))
    settings = power_settings(OmegaConf.to_container(cfg.power))  # type: ignore[arg-type]
    assert settings.n_sims == 7 and settings.source == "auto"
    assert settings.grid(3, 2) == ((3, 10, 20, 30, 40, 60, 80, 100), (1, 2, 3, 4),
                                   (0.0, 10.0, 20.0, 30.0, 40.0))


def test_pilot_rates_are_the_comparators_per_task_rates() -> None:
    pool = pilot_rates(FIRE, arm="sham", cohort="eligible")
    assert sorted(pool.rates) == sorted([0, 1, 0, .5, 1, .5, 1, 1, 0, 0, 0, 0, 0, 0])
    shrunk = pilot_rates(FIRE, arm="sham", cohort="eligible", shrink=True)
    assert min(shrunk.rates) == pytest.approx(0.5 / 3) and max(shrunk.rates) < 1


def test_tier_rates_are_the_chance_no_failure_mode_is_drawn() -> None:
    task = load_task(resolve_suite("fire-mini") / "serve-status-page")
    pool = tier_rates({"serve-status-page": task}, "mid")
    assert pool.rates == pytest.approx((np.prod([1 - 0.65, 1 - 0.08]),))
