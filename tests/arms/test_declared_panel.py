"""A panel of declared arms: built and checked before anything runs, frozen in the manifest
(a change to anything an arm changes refuses the run, naming it), and run fairly (files
in the working folder only, the instruction the agent receives, the verifier untouched)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from fire_exp.agents.base import AgentOutcome
from fire_exp.agents.session import AgentSession
from fire_exp.arms import arm_specs_from_dict
from fire_exp.config import ComponentConfig, PanelConfig, RunConfig
from fire_exp.errors import InputError, PreregistrationError
from fire_exp.paths import CONFIG_DIR
from fire_exp.registry import REGISTRY
from fire_exp.runner.build import build_panel
from fire_exp.runner.execute import build_attempt
from fire_exp.runner.model import job_for
from fire_exp.runner.prereg import verify_manifest, write_manifest

TASK = "csv-column-stats"
SEEN: dict[str, dict[str, object]] = {}


class Recorder:
    """Records what its attempt gave it: instruction, context, the placed file's text."""

    name = "recorder"
    tier: str | None = None

    def __init__(self, **_: object) -> None:
        pass

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        session.begin()
        text = session.bash("cat AGENTS.md 2>/dev/null || echo absent").output
        SEEN[session.context.arm] = {"instruction": session.instruction,
                                     "task_text": session.task_text,
                                     "files": session.context.files, "agents_md": text}
        session.stop()
        return AgentOutcome()


@pytest.fixture(scope="module", autouse=True)
def _recorder() -> None:
    if "recorder" not in REGISTRY.names("agent"):
        REGISTRY.register("agent", "recorder", Recorder)


def _config(tmp: Path, declare: dict, arms: tuple[str, ...] = ("file", "none"),
            agent: str = "recorder", plan: str = "demo") -> RunConfig:
    source = tmp / "AGENTS.md"
    if not source.exists():
        source.write_text("Skip the header row.\n")
    return RunConfig(
        panel=PanelConfig(name="arms", suite="fire-mini", eligible=(), silent=(TASK,),
                          arms=arms, attempts=2, portfolio="fire-core", analysis=plan,
                          declare=arm_specs_from_dict(declare)),
        agent=ComponentConfig(agent), environment=ComponentConfig("local"),
        executor=ComponentConfig("local", {"workers": 1}), seed=3, run="r",
        results_dir=str(tmp))


def _declare(tmp: Path) -> dict:
    return {"file": {"files": {"AGENTS.md": str(tmp / "AGENTS.md")},
                     "instruction": "Work carefully."},
            "none": {}}


def _run(panel, arm: str, tmp: Path):  # type: ignore[no-untyped-def]
    item = next(s for s in panel.schedule if s.arm == arm)
    return build_attempt(panel, job_for(panel, tmp / "run", item)).run()


def test_the_schedule_randomizes_over_the_declared_arms(tmp_path: Path) -> None:
    panel = build_panel(_config(tmp_path, _declare(tmp_path), arms=("file", "none", "real")))
    assert list(panel.arms) == ["file", "none", "real"]
    assert Counter(s.arm for s in panel.schedule) == {"file": 2, "none": 2, "real": 2}
    assert not panel.arms["file"].policy_arm and panel.arms["real"].policy_arm


def test_an_arm_neither_declared_nor_registered_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown arm 'other'.*declare it"):
        build_panel(_config(tmp_path, _declare(tmp_path), arms=("file", "other")))
    with pytest.raises(InputError, match="a registered arm's name"):
        build_panel(_config(tmp_path, {"real": {}}, arms=("real",)))
    with pytest.raises(InputError) as err:
        build_panel(_config(tmp_path, {"x": {"policies": "shamm"}}, arms=("x",)))
    assert err.value.field == "declare.x.policies"


def test_a_file_named_like_a_verifier_file_is_refused_at_build(tmp_path: Path) -> None:
    declare = {"file": {"files": {"check.py": str(tmp_path / "AGENTS.md")}}, "none": {}}
    with pytest.raises(InputError, match="where the verifier reads"):
        build_panel(_config(tmp_path, declare))


def test_each_arm_gets_its_files_and_instruction_and_the_verifier_is_untouched(
        tmp_path: Path) -> None:
    panel = build_panel(_config(tmp_path, _declare(tmp_path)))
    task = panel.tasks[TASK]
    with_file, without = _run(panel, "file", tmp_path), _run(panel, "none", tmp_path)
    assert SEEN["file"]["agents_md"] == "Skip the header row.\n"
    assert SEEN["file"]["files"] == ("AGENTS.md",)
    assert SEEN["file"]["instruction"] == f"{task.instruction.rstrip()}\n\nWork carefully."
    assert SEEN["file"]["task_text"] == task.instruction  # what the policies decide on
    assert SEEN["none"]["agents_md"].strip() == "absent"
    assert SEEN["none"]["instruction"] == task.instruction and SEEN["none"]["files"] == ()
    for record in (with_file, without):  # the verifier ran on its own files, same verdict
        assert record.cause is None and record.reward == 0.0
        stdout = Path(tmp_path / "run" / "attempts" / record.attempt_id / "logs" / "verifier"
                      / "test-stdout.txt").read_text()
        assert "summary.json" in stdout


def test_an_arm_changing_agent_parameters_gets_its_own_agent(tmp_path: Path) -> None:
    declare = {"strong": {"agent": {"tier": "strong"}}, "mid": {}}
    panel = build_panel(_config(tmp_path, declare, arms=("strong", "mid"), agent="simulated"))
    assert panel.agent_for("strong").make().tier == "strong"
    assert panel.agent_for("mid").make().tier == "mid"
    assert _run(panel, "strong", tmp_path).usage.model == "simulated-strong"


def _plan(tmp: Path, contrast: str = "file - none") -> str:
    plan = tmp / "plan.yaml"
    plan.write_text(f"name: p\nseed: 1\nprimary: {{contrast: {contrast}, cohort: silent}}\n"
                    "cohorts: [silent, all]\n")
    return str(plan)


def _freeze(tmp: Path, declare: dict) -> Path:
    path = tmp / "frozen.prereg.json"
    write_manifest(build_panel(_config(tmp, declare, plan=_plan(tmp))), path)
    return path


def test_the_manifest_hashes_every_change_and_names_what_changed(tmp_path: Path) -> None:
    declare = _declare(tmp_path)
    path = _freeze(tmp_path, declare)
    manifest = json.loads(path.read_text())
    hashes = manifest["hashes"]
    assert hashes["arm_file:file:AGENTS.md"]["sha256"] == hashlib.sha256(
        b"Skip the header row.\n").hexdigest()
    assert {"arm:file", "arm:none"} <= set(hashes)
    # a panel composed in code has no configs/panel/arms.yaml: frozen as missing, so one
    # written later refuses the run
    assert hashes["config_file:panel"] == {"path": str(CONFIG_DIR / "panel" / "arms.yaml"),
                                           "sha256": "missing"}
    assert manifest["arms"]["file"]["changes"][-1].startswith("file AGENTS.md")
    plan = _plan(tmp_path)
    verify_manifest(build_panel(_config(tmp_path, declare, plan=plan)), path)  # unchanged
    (tmp_path / "AGENTS.md").write_text("Skip the header row!\n")
    with pytest.raises(PreregistrationError, match=r"AGENTS.md changed since freezing "
                       r"\(arm_file:file:AGENTS.md\)"):
        verify_manifest(build_panel(_config(tmp_path, declare, plan=plan)), path)
    (tmp_path / "AGENTS.md").write_text("Skip the header row.\n")
    changed = {**declare, "file": {**declare["file"], "instruction": "Work fast."}}
    with pytest.raises(PreregistrationError, match=r"declare.file .* changed since freezing "
                       r"\(arm:file\)"):
        verify_manifest(build_panel(_config(tmp_path, changed, plan=plan)), path)


def test_a_plan_naming_an_arm_the_panel_does_not_declare_is_refused(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "file - nonee")
    panel = build_panel(_config(tmp_path, _declare(tmp_path), plan=plan))
    with pytest.raises(InputError, match="'nonee'.*did you mean 'none'"):
        write_manifest(panel, tmp_path / "p.json")
    panel = build_panel(_config(tmp_path, _declare(tmp_path), plan=_plan(tmp_path)))
    write_manifest(panel, tmp_path / "p.json")


def test_an_arm_may_run_another_agent_config(tmp_path: Path) -> None:
    declare = {"nop": {"agent_config": "nop"}, "sim": {}}
    config = _config(tmp_path, declare, arms=("nop", "sim"), agent="simulated",
                     plan=_plan(tmp_path, "nop - sim"))
    panel = build_panel(config)
    assert (panel.agent_for("nop").name, panel.agent_for("sim").name) == ("nop", "simulated")
    assert (_run(panel, "nop", tmp_path).agent, _run(panel, "sim", tmp_path).agent) == (
        "nop", "simulated")
    path = tmp_path / "frozen.json"
    hashes = write_manifest(panel, path)["hashes"]
    nop_yaml = (CONFIG_DIR / "agent" / "nop.yaml").resolve()
    assert hashes["arm_agent_file:nop"] == {
        "path": str(nop_yaml), "sha256": hashlib.sha256(nop_yaml.read_bytes()).hexdigest()}
    assert "arm_agent:sim" not in hashes
    changed = {"nop": {"agent_config": "nop", "agent": {"tier": "x"}}, "sim": {}}
    with pytest.raises(InputError, match="declare.nop"):
        build_panel(_config(tmp_path, changed, arms=("nop", "sim"), agent="simulated"))
    with pytest.raises(InputError, match="no agent config 'nopp'.*nop"):
        build_panel(_config(tmp_path, {"nop": {"agent_config": "nopp"}, "sim": {}},
                            arms=("nop", "sim"), agent="simulated"))
