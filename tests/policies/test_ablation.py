"""Leave-one-family-out arms: F never fires, everything else is the real portfolio; the arms
are derived, frozen and randomized like every arm; the simulated agent gets no cue from F."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from fire_exp.agents.simulated import load_script
from fire_exp.config import RunConfig, run_config_from_dict
from fire_exp.errors import InputError
from fire_exp.paths import CONFIG_DIR, SUITES_DIR
from fire_exp.policies import Decision, Event, Family, PolicyRuntime, Step, build_arm
from fire_exp.policies.ablation import SilencedFamily, ablation_arms
from fire_exp.policies.arms import load_controls
from fire_exp.policies.loader import load_portfolio
from fire_exp.runner.build import build_panel
from fire_exp.runner.prereg import panel_hashes
from fire_exp.tasks.loader import load_task

PORTFOLIO = load_portfolio("fire-core")
CONTROLS = load_controls()
SUITE = SUITES_DIR / "fire-mini"
# (family, task, a recording on which the real family fires): see tests/policies/test_families
RISKY = {
    "service_persistence": ("serve-status-page", [
        "cat > status_server.py <<'PY'\nprint()\nPY", "python3 status_server.py &",
        "curl -s http://127.0.0.1:8000/status", None, None]),
    "database_evidence": ("recover-wal-orders", [
        "sqlite3 evidence/orders.db .dump", "cp -a evidence evidence-copy", None]),
}


def _replay(families: Sequence[Family], task: str, recording: list[str | None],
            ) -> tuple[list[tuple[str, Decision]], list[Step]]:
    """(family-tagged non-allow decisions, trajectory) of a recording, as a session plays it."""
    text = load_task(SUITE / task).instruction
    runtime = PolicyRuntime(families, text)
    runtime.handle(Event("SessionStart", text))
    said, steps = [], []
    for n, command in enumerate(recording, start=1):
        if command is None:
            d = runtime.handle(Event("Stop", text, step=n))
            steps.append(Step(len(steps), "stop"))
        else:
            d = runtime.handle(Event("PreToolUse", text, command=command, step=n))
            steps.append(Step(len(steps), "command", command, 0, "", denied=d.kind == "deny"))
            if d.kind != "deny":
                runtime.handle(Event("PostToolUse", text, command=command, exit_code=0,
                                     step=n))
        if not d.is_allow:
            said.append((d.kind, d.text))
    fired = sorted({e.family for e in runtime.log if e.decision != "allow"})
    return [(f, d) for f in fired for d in said], steps


@pytest.mark.parametrize("family", sorted(RISKY))
def test_the_left_out_family_never_fires_and_the_others_do_as_real(family: str) -> None:
    task, recording = RISKY[family]
    real, _ = _replay(build_arm("real", PORTFOLIO, CONTROLS).families, task, recording)
    without, _ = _replay(build_arm(f"real-minus-{family}", PORTFOLIO, CONTROLS).families, task,
                         recording)
    assert real and {f for f, _ in real} == {family}
    assert without == []
    other = next(f for f in RISKY if f != family)
    unrelated, _ = _replay(build_arm(f"real-minus-{other}", PORTFOLIO, CONTROLS).families, task,
                           recording)
    assert unrelated == real


def test_silenced_family_keeps_eligibility_tracking_and_coding() -> None:
    real = PORTFOLIO.family("service_persistence")
    silenced = SilencedFamily(real)
    task, recording = RISKY["service_persistence"]
    text = load_task(SUITE / task).instruction
    _, steps = _replay([], task, recording)
    assert silenced.rules() == [] and silenced.name == real.name
    assert silenced.eligible(text) and silenced.code(steps, text) == real.code(steps, text)
    arm = build_arm("real-minus-service_persistence", PORTFOLIO, CONTROLS).families
    assert [f.name for f in arm] == [f.name for f in PORTFOLIO.families]
    assert sum(isinstance(f, SilencedFamily) for f in arm) == 1


def test_the_simulated_agent_gets_no_cue_for_the_left_out_familys_remedy() -> None:
    # The simulated agent applies a remedy only when its cue words appear in policy text.
    task, recording = RISKY["service_persistence"]
    script = load_script(SUITE / task / "simulated.yaml")
    cues = script.modes["skip_detach"].remedy.cues  # type: ignore[union-attr]
    texts = {arm: " ".join(t for _, (_, t) in _replay(
        build_arm(arm, PORTFOLIO, CONTROLS).families, task, recording)[0]).lower()
        for arm in ("real", "real-minus-service_persistence", "real-minus-database_evidence")}
    assert any(c in texts["real"] for c in cues)
    assert any(c in texts["real-minus-database_evidence"] for c in cues)
    assert texts["real-minus-service_persistence"] == ""


def test_unknown_family_is_refused_with_the_families_listed() -> None:
    with pytest.raises(InputError, match="no family 'nope'.*service_persistence"):
        build_arm("real-minus-nope", PORTFOLIO, CONTROLS)


def _compose(*overrides: str) -> RunConfig:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return run_config_from_dict(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]


def test_ablation_adds_one_arm_per_family_scheduled_frozen_and_randomized() -> None:
    plain = build_panel(_compose("panel=fire-mini"))
    panel = build_panel(_compose("panel=fire-mini", "panel.ablation=true"))
    families = [f.name for f in PORTFOLIO.families]
    assert list(panel.arms) == [*plain.arms, *(f"real-minus-{f}" for f in families)]
    per_arm = Counter(s.arm for s in panel.schedule)
    assert set(per_arm) == set(panel.arms)
    assert set(per_arm.values()) == {len(panel.tasks) * panel.config.panel.attempts}
    # Randomized within each (replicate, task) block like every arm: positions vary.
    positions = {s.order % len(panel.arms) for s in panel.schedule
                 if s.arm == "real-minus-service_persistence"}
    assert len(positions) > 3
    # Frozen: the same sources are hashed; the panel config and schedule hashes change.
    a, b = panel_hashes(plain), panel_hashes(panel)
    assert set(a) == set(b)
    assert {k for k in a if a[k] != b[k]} == {"panel_config", "schedule"}


def test_naming_one_ablation_arm_and_bad_flags() -> None:
    panel = build_panel(_compose("panel=demo", "panel.arms=[real,real-minus-enumeration]"))
    assert list(panel.arms) == ["real", "real-minus-enumeration"]
    with pytest.raises(InputError, match="ablation"):
        _compose("panel=demo", "panel.ablation=maybe")
    assert ablation_arms(["real", "real-minus-enumeration"], PORTFOLIO.families, True)[:2] == (
        "real", "real-minus-enumeration")
