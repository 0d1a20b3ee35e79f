"""The preregistration in process: what the manifest holds, item by item, and the refusal
of each kind of change with its exact message (the same code ``fire-exp freeze`` and
``fire-exp run`` call, which tests/runner/test_prereg.py drives through the command).

Everything runs on copies in a temporary folder (portfolio, suite, plan); the harness's own
sources are never edited: their refusal is exercised by editing the manifest instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from fire_exp import __version__
from fire_exp.config import RunConfig, run_config_from_dict
from fire_exp.errors import InputError, PreregistrationError
from fire_exp.manifest import FORMAT
from fire_exp.paths import CONFIG_DIR, PACKAGE_DIR, PORTFOLIOS_DIR, SUITES_DIR
from fire_exp.runner.build import Panel, build_panel
from fire_exp.runner.prereg import (
    build_manifest,
    config_files,
    declared_arms,
    harness_file_hashes,
    record_power,
    task_file_hashes,
    verify_manifest,
    write_manifest,
)
from fire_exp.runner.schedule import schedule_digest

TASKS = ("enumerate-lock-codes", "log-error-summary")
PLAN = ("name: freezing\nseed: 1\nprimary: {contrast: real - baseline, cohort: eligible}\n"
        "bootstrap: {n_resamples: 200}\npermutation: {n_resamples: 200}\n")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compose_run(*overrides: str) -> RunConfig:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return run_config_from_dict(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]


@dataclasses.dataclass
class Inputs:
    root: Path
    portfolio: Path
    controls: Path
    suite: Path
    plan: Path
    manifest: Path

    def panel(self, *extra: str) -> Panel:
        return build_panel(compose_run(
            "panel=fire-mini", f"panel.portfolio={self.portfolio}",
            f"panel.controls={self.controls}", f"panel.suite={self.suite}",
            f"panel.analysis={self.plan}", f"panel.eligible=[{TASKS[0]}]",
            f"panel.silent=[{TASKS[1]}]", "panel.arms=[real,baseline]", "panel.attempts=2",
            *extra))

    def refusal(self) -> str:
        with pytest.raises(PreregistrationError) as err:
            verify_manifest(self.panel(), self.manifest)
        return str(err.value)

    def edit(self, change: Any) -> None:
        """Rewrite the manifest through ``change(manifest)``."""
        data = json.loads(self.manifest.read_text())
        change(data)
        self.manifest.write_text(json.dumps(data))


@pytest.fixture
def inputs(tmp_path: Path) -> Inputs:
    """A small fire-mini panel on copies of its inputs, frozen into ``inputs.manifest``."""
    got = Inputs(tmp_path, tmp_path / "portfolio", tmp_path / "controls", tmp_path / "suite",
                 tmp_path / "plan.yaml", tmp_path / "frozen" / "prereg.json")
    shutil.copytree(PORTFOLIOS_DIR / "fire-core", got.portfolio)
    shutil.copytree(PORTFOLIOS_DIR / "controls", got.controls)
    for task in TASKS:
        shutil.copytree(SUITES_DIR / "fire-mini" / task, got.suite / task)
    got.plan.write_text(PLAN)
    write_manifest(got.panel(), got.manifest)
    return got


# ---------------------------------------------------------------- what is frozen
def test_the_manifest_holds_every_item_with_its_path_and_hash(inputs: Inputs) -> None:
    panel = inputs.panel()
    manifest = json.loads(inputs.manifest.read_text())
    assert (manifest["format"], manifest["panel"], manifest["harness_version"],
            manifest["seed"], manifest["config_hash"], manifest["n_attempts"]) == (
        FORMAT, "fire-mini", __version__, panel.config.seed, panel.config.config_hash(),
        len(panel.schedule))
    assert manifest["n_attempts"] == 2 * 2 * 2  # tasks x arms x attempts
    assert manifest["schedule"] == [dataclasses.asdict(s) for s in panel.schedule]
    assert "arms" not in manifest  # preset arms only
    hashes = manifest["hashes"]
    for task in TASKS:
        path = inputs.suite / task
        assert hashes[f"task:{task}"] == {"path": str(path), "sha256": panel.tasks[task].digest}
        assert manifest["task_files"][task] == task_file_hashes(path)
    for kind, folder in (("policy", inputs.portfolio), ("control", inputs.controls)):
        for file in folder.iterdir():
            assert hashes[f"{kind}:{file.name}"] == {"path": str(file),
                                                     "sha256": sha(file.read_bytes())}
    assert hashes["analysis_plan"] == {"path": str(inputs.plan),
                                       "sha256": sha(inputs.plan.read_bytes())}
    for group, name in (("config", "config.yaml"), ("panel", "panel/fire-mini.yaml"),
                        ("agent", "agent/simulated.yaml"),
                        ("environment", "environment/local.yaml")):
        path = CONFIG_DIR / name
        assert hashes[f"config_file:{group}"] == {"path": str(path),
                                                  "sha256": sha(path.read_bytes())}
    cfg = panel.config
    for key, value, group in (("agent_config", dataclasses.asdict(cfg.agent), "agent"),
                              ("environment_config", dataclasses.asdict(cfg.environment),
                               "environment"),
                              ("panel_config", cfg.panel.as_dict(), "panel")):
        text = json.dumps(value, sort_keys=True, default=list)
        assert hashes[key] == {"path": f"{CONFIG_DIR / group / f'{getattr(cfg, group).name}.yaml'}"
                                       " (values as composed, overrides included)",
                               "sha256": sha(text.encode())}
    assert hashes["schedule"] == {"path": f"schedule (seed {cfg.seed})",
                                  "sha256": schedule_digest(panel.schedule)}
    files = harness_file_hashes()
    assert manifest["harness_files"] == files
    listing = "".join(f"{name} {digest}\n" for name, digest in sorted(files.items()))
    assert hashes["harness"] == {"path": f"fire-exp {__version__} ({len(files)} source files)",
                                 "sha256": sha(listing.encode())}
    expected = {f"task:{t}" for t in TASKS} | {
        f"policy:{f.name}" for f in inputs.portfolio.iterdir()} | {
        f"control:{f.name}" for f in inputs.controls.iterdir()} | {
        "analysis_plan", "config_file:config", "config_file:panel", "config_file:agent",
        "config_file:environment", "agent_config", "environment_config", "panel_config",
        "schedule", "harness",
        "network_not_enforced"}  # local does not enforce the bundled tasks' no-network
    assert set(hashes) == expected


def test_the_manifest_is_written_whole_as_indented_json(inputs: Inputs) -> None:
    text = inputs.manifest.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=1) + "\n"
    assert [p.name for p in inputs.manifest.parent.iterdir()] == [inputs.manifest.name]


def test_the_harness_is_every_py_and_sh_file_of_the_package_but_the_suites() -> None:
    files = harness_file_hashes()
    root = PACKAGE_DIR.parent
    expected = sorted(f.relative_to(root).as_posix() for f in PACKAGE_DIR.rglob("*")
                      if f.suffix in (".py", ".sh") and "__pycache__" not in f.parts
                      and "suites" not in f.relative_to(PACKAGE_DIR).parts
                      and "_data" not in f.relative_to(PACKAGE_DIR).parts)
    assert list(files) == expected
    assert any(name.endswith(".sh") for name in files)
    assert files["fire_exp/runner/prereg.py"] == sha((PACKAGE_DIR / "runner" / "prereg.py")
                                                     .read_bytes())
    assert not any(name.startswith("fire_exp/suites/") for name in files)


def test_the_config_files_follow_hydras_choices() -> None:
    cfg = compose_run("panel=demo", "agent=nop")
    files = config_files(cfg)
    assert files == {"config": CONFIG_DIR / "config.yaml",
                     "panel": CONFIG_DIR / "panel" / "demo.yaml",
                     "agent": CONFIG_DIR / "agent" / "nop.yaml",
                     "environment": CONFIG_DIR / "environment" / f"{cfg.environment.name}.yaml"}
    chosen = dataclasses.replace(cfg, choices={"panel": "fire-mini", "agent": "simulated"})
    assert config_files(chosen)["panel"] == CONFIG_DIR / "panel" / "fire-mini.yaml"
    assert config_files(chosen)["agent"] == CONFIG_DIR / "agent" / "simulated.yaml"


def test_a_power_record_leaves_the_hashes_and_verification_alone(inputs: Inputs) -> None:
    before = json.loads(inputs.manifest.read_text())
    after = record_power(inputs.manifest, {"n": 40, "power": 0.8})
    assert after == {**before, "power": {"n": 40, "power": 0.8}}
    # written whole, in the manifest's own format, nothing left beside it
    assert inputs.manifest.read_text(encoding="utf-8") == json.dumps(after, indent=1) + "\n"
    assert [p.name for p in inputs.manifest.parent.iterdir()] == [inputs.manifest.name]
    assert verify_manifest(inputs.panel(), inputs.manifest) == after


def test_an_invalid_plan_is_never_frozen(inputs: Inputs) -> None:
    inputs.plan.write_text(PLAN.replace("real - baseline", "real - sham"))
    target = inputs.root / "other.json"
    with pytest.raises(InputError) as err:
        write_manifest(inputs.panel(), target)
    assert str(err.value).startswith(f"{inputs.plan}: arms: the panel's arm(s) ['baseline'] "
                                     "are not in the plan")
    assert not target.exists()
    with pytest.raises(InputError, match=r"\[.baseline.\] are not in the plan"):
        verify_manifest(inputs.panel(), inputs.manifest)


def test_declared_arms_describe_what_each_arm_changes(inputs: Inputs, tmp_path: Path) -> None:
    assert declared_arms(inputs.panel()) == {}
    inputs.plan.write_text(PLAN.replace("real - baseline", "brief - baseline"))
    panel = inputs.panel("panel.arms=[brief,baseline]",
                         "+panel.declare={brief: {instruction: Be brief., description: short}}")
    arms = declared_arms(panel)["arms"]
    assert arms["brief"] == {"description": "short",
                             "changes": ["instruction + 9 characters"],
                             "settings": panel.setup_for("brief").spec.settings()}
    assert arms["baseline"] == {"description": "no policy", "changes": ["nothing"],
                                "settings": panel.setup_for("baseline").spec.settings()}
    manifest = build_manifest(panel)
    assert manifest["arms"] == {"arms": arms}["arms"]
    assert manifest["hashes"]["arm:brief"]["sha256"] == sha(
        panel.setup_for("brief").spec.settings_json().encode())


# ---------------------------------------------------------------- what is refused
def test_an_unchanged_panel_verifies_and_returns_its_manifest(inputs: Inputs) -> None:
    assert verify_manifest(inputs.panel(), inputs.manifest) == \
        json.loads(inputs.manifest.read_text())


def frozen_and_now(message: str) -> tuple[str, str]:
    head = message.split("frozen sha256 ")[1]
    return head[:16], head.split("now ")[1][:16]


@pytest.mark.parametrize(("how", "state"), [("edit", "changed"), ("add", "added"),
                                            ("delete", "removed")])
def test_a_task_file_changed_added_or_removed_is_named_with_both_hashes(
        inputs: Inputs, how: str, state: str) -> None:
    task = inputs.suite / TASKS[1]
    old = json.loads(inputs.manifest.read_text())["hashes"][f"task:{TASKS[1]}"]["sha256"]
    name = {"edit": "tests/check.py", "add": "tests/zz_extra.py", "delete": "tests/check.py"}[how]
    if how == "delete":
        (task / name).unlink()
    else:
        (task / name).write_text("# edited after freezing\n")
    message = inputs.refusal()
    new = inputs.panel().tasks[TASKS[1]].digest
    assert message == (
        f"{inputs.manifest}: {task}/{name} ({state}) changed since freezing "
        f"(task:{TASKS[1]}): frozen sha256 {old[:16]}…, now {new[:16]}…. Restore it, or "
        "re-freeze the panel (a new preregistration) before running")


def test_a_task_hash_edited_in_the_manifest_names_the_task_folder(inputs: Inputs) -> None:
    """Every file of the task still matches: the refusal names the task, not a file."""
    inputs.edit(lambda m: m["hashes"][f"task:{TASKS[0]}"].update(sha256="0" * 64))
    assert inputs.refusal().startswith(f"{inputs.manifest}: {inputs.suite / TASKS[0]} changed "
                                       f"since freezing (task:{TASKS[0]}): frozen sha256 "
                                       "0000000000000000…")


def test_a_task_change_without_the_files_recorded_names_the_task(inputs: Inputs) -> None:
    inputs.edit(lambda m: m.pop("task_files"))
    (inputs.suite / TASKS[0] / "instruction.md").write_text("Changed.\n")
    assert inputs.refusal().startswith(f"{inputs.manifest}: {inputs.suite / TASKS[0]} changed "
                                       f"since freezing (task:{TASKS[0]})")


def test_a_changed_policy_source_or_plan_is_named(inputs: Inputs) -> None:
    source = inputs.portfolio / "enumeration.py"
    source.write_text(source.read_text() + "\n# edited\n")
    assert inputs.refusal().startswith(f"{inputs.manifest}: {source} changed since freezing "
                                       "(policy:enumeration.py): frozen sha256 ")
    source.write_text(source.read_text()[:-len("\n# edited\n")])
    inputs.plan.write_text(PLAN + "# edited\n")
    assert inputs.refusal().startswith(f"{inputs.manifest}: {inputs.plan} changed since "
                                       "freezing (analysis_plan)")


def test_an_item_added_after_freezing_or_no_longer_in_the_panel_is_named(
        inputs: Inputs) -> None:
    late = inputs.portfolio / "late_notes.md"
    late.write_text("a note\n")
    assert inputs.refusal() == (
        f"{inputs.manifest}: policy:late_notes.md ({late}) is not in the preregistration "
        "(added after freezing); re-freeze the panel to include it")
    late.unlink()
    inputs.edit(lambda m: m["hashes"].update(zzz={"path": "/gone", "sha256": "0" * 64}))
    assert inputs.refusal() == (f"{inputs.manifest}: zzz (/gone) was frozen but is no longer "
                                "part of the panel")


def test_a_changed_harness_is_refused_naming_its_first_changed_file(inputs: Inputs) -> None:
    files = harness_file_hashes()
    first = sorted(files)[3]

    def change(m: dict[str, Any]) -> None:
        m["hashes"]["harness"]["sha256"] = "0" * 64
        m["harness_files"][first] = "1" * 64
        m["harness_files"]["fire_exp/zz_gone.py"] = "2" * 64

    inputs.edit(change)
    message = inputs.refusal()
    assert message.startswith(f"{inputs.manifest}: {first} (changed) changed since freezing "
                              "(harness): frozen sha256 0000000000000000…, now ")
    inputs.edit(lambda m: m["harness_files"].update({first: files[first]}))
    assert inputs.refusal().startswith(f"{inputs.manifest}: fire_exp/zz_gone.py (removed) "
                                       "changed since freezing (harness)")
    inputs.edit(lambda m: m["harness_files"].pop(sorted(files)[0]))
    assert inputs.refusal().startswith(f"{inputs.manifest}: {sorted(files)[0]} (added) changed")
    inputs.edit(lambda m: m.pop("harness_files"))
    assert inputs.refusal().startswith(
        f"{inputs.manifest}: fire-exp {__version__} ({len(files)} source files) changed since "
        "freezing (harness)")


@pytest.mark.parametrize(("change", "where"), [
    (lambda s: s[1].update(arm="ghost"), "schedule[1]"),
    (lambda s: s.pop(), "schedule[7]"),
    (lambda s: s.append(dict(s[0])), "schedule[8]"),
    (lambda s: s.insert(0, dict(s[3])), "schedule[0]"),
])
def test_a_schedule_list_edited_by_hand_is_refused_naming_the_entry(
        inputs: Inputs, change: Any, where: str) -> None:
    inputs.edit(lambda m: change(m["schedule"]))
    assert inputs.refusal() == (
        f"{inputs.manifest}: {where} differs from the schedule the manifest hashes (edited by "
        "hand?); restore the manifest, or re-freeze the panel before running")


def test_a_schedule_that_is_not_a_list_is_refused(inputs: Inputs) -> None:
    inputs.edit(lambda m: m.update(schedule={"0": 1}))
    assert inputs.refusal().startswith(f"{inputs.manifest}: schedule differs from the schedule")
    inputs.edit(lambda m: m.pop("schedule"))
    assert inputs.refusal().startswith(f"{inputs.manifest}: schedule differs from the schedule")


def test_an_arm_with_its_own_agent_freezes_that_agent_as_composed(inputs: Inputs) -> None:
    inputs.plan.write_text(PLAN.replace("real - baseline", "strong - baseline"))
    panel = inputs.panel("panel.arms=[strong,baseline]",
                         "+panel.declare={strong: {agent: {tier: strong}}}")
    agent = panel.arm_agents["strong"]
    hashes = build_manifest(panel)["hashes"]
    composed = json.dumps({"name": agent.name, "params": dict(agent.params)}, sort_keys=True,
                          default=list)
    assert hashes["arm_agent:strong"] == {
        "path": f"{CONFIG_DIR / 'panel' / 'fire-mini.yaml'} (agent {agent.name}, values as "
                "composed)", "sha256": sha(composed.encode())}
    assert dict(agent.params)["tier"] == "strong"
    assert "arm_agent:baseline" not in hashes and "arm_agent_file:strong" not in hashes


def test_an_arm_with_its_own_folders_freezes_their_sources_and_notes(inputs: Inputs) -> None:
    """Each ``.py`` and ``.md`` file of an arm's own portfolio and controls is frozen under
    ``arm_policy:ARM:FOLDER/FILE``; other files are not; the panel's own folders add
    nothing (an arm of the panel's portfolio and its own controls: the controls only);
    editing one refuses the run naming it."""
    own_core, own_controls = inputs.root / "own-core", inputs.root / "own-controls"
    shutil.copytree(inputs.portfolio, own_core)
    shutil.copytree(inputs.controls, own_controls)
    (own_core / "notes.txt").write_text("not a source\n")
    inputs.plan.write_text(PLAN.replace("real - baseline", "own - baseline").replace(
        "primary:", "secondary: [panel - baseline, mixed - baseline]\nprimary:"))
    declare = (f"+panel.declare={{own: {{policies: real, portfolio: {own_core}, "
               f"controls: {own_controls}}}, panel: {{policies: real, "
               f"portfolio: {inputs.portfolio}, controls: {inputs.controls}}}, "
               f"mixed: {{policies: real, portfolio: {inputs.portfolio}, "
               f"controls: {own_controls}}}}}")
    panel = inputs.panel("panel.arms=[own,panel,mixed,baseline]", declare)
    hashes = build_manifest(panel)["hashes"]
    expected = {f"arm_policy:own:{folder.name}/{f.name}": {"path": str(f),
                                                           "sha256": sha(f.read_bytes())}
                for folder in (own_core, own_controls) for f in folder.iterdir()
                if f.suffix in (".py", ".md")} | {
        f"arm_policy:mixed:own-controls/{f.name}": {"path": str(f), "sha256": sha(f.read_bytes())}
        for f in own_controls.iterdir()}
    assert "arm_policy:own:own-controls/sham_text.md" in expected
    assert {k: v for k, v in hashes.items() if k.startswith("arm_policy:")} == expected
    target = inputs.root / "arms.json"
    write_manifest(panel, target)
    source = own_core / "enumeration.py"
    old = sha(source.read_bytes())
    source.write_text(source.read_text() + "\n# edited\n")
    with pytest.raises(PreregistrationError) as err:
        verify_manifest(inputs.panel("panel.arms=[own,panel,mixed,baseline]", declare), target)
    assert str(err.value) == (
        f"{target}: {source} changed since freezing (arm_policy:own:own-core/"
        f"enumeration.py): frozen sha256 {old[:16]}…, now {sha(source.read_bytes())[:16]}…. "
        "Restore it, or re-freeze the panel (a new preregistration) before running")


def test_a_sequential_plan_on_an_arm_the_panel_lacks_is_never_frozen(inputs: Inputs) -> None:
    """The sequential test of ``real - sham`` on a panel without ``sham`` could never stop:
    refused at freezing and at the run, naming the plan and its primary contrast."""
    plan = ("name: freezing\nseed: 1\nprimary: {contrast: real - sham, cohort: eligible}\n"
            "secondary: [real - baseline]\n"
            "bootstrap: {n_resamples: 200}\npermutation: {n_resamples: 200}\n")
    inputs.plan.write_text(plan)
    write_manifest(inputs.panel(), inputs.root / "plain.json")  # without sequential: fine
    inputs.plan.write_text(plan + "sequential: {method: agrapa, alpha: 0.05}\n")
    expected = (f"{inputs.plan}: primary.contrast: the sequential test needs arm(s) ['sham'], "
                "which the panel does not run (add them to the panel's arms or drop the "
                "plan's sequential: section)")
    target = inputs.root / "sequential.json"
    with pytest.raises(InputError) as err:
        write_manifest(inputs.panel(), target)
    assert str(err.value) == expected
    assert not target.exists()
    with pytest.raises(InputError) as err:
        verify_manifest(inputs.panel(), inputs.manifest)
    assert str(err.value) == expected
    inputs.plan.write_text(plan.replace("real - sham", "real - baseline").replace(
        "[real - baseline]", "[]") + "sequential: {method: agrapa, alpha: 0.05}\n")
    write_manifest(inputs.panel(), target)  # the panel runs both arms: frozen
    assert target.exists()


def test_the_manifest_records_when_it_was_frozen_into_any_new_folder(inputs: Inputs) -> None:
    """``frozen_at`` (what the report and the archive name show) is the freezing time in
    UTC; a manifest path under folders that do not exist yet creates them."""
    from datetime import UTC, datetime

    target = inputs.root / "new" / "deeper" / "prereg.json"
    before = datetime.now(UTC)
    manifest = write_manifest(inputs.panel(), target)
    frozen = datetime.fromisoformat(manifest["frozen_at"])
    assert before <= frozen <= datetime.now(UTC) and frozen.utcoffset() is not None
    assert json.loads(target.read_text())["frozen_at"] == manifest["frozen_at"]
    assert [p.name for p in target.parent.iterdir()] == ["prereg.json"]


def test_a_declared_arm_without_a_description_is_described_by_nothing(inputs: Inputs) -> None:
    inputs.plan.write_text(PLAN.replace("real - baseline", "brief - baseline"))
    panel = inputs.panel("panel.arms=[brief,baseline]",
                         "+panel.declare={brief: {instruction: Be brief.}}")
    arms = declared_arms(panel)["arms"]
    assert (arms["brief"]["description"], arms["baseline"]["description"]) == ("", "no policy")


def test_the_harness_leaves_out_task_suites_installed_data_and_caches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a package tree of every kind of file (``_data`` is where a wheel installs the
    portfolios, hashed as policies instead): only its own ``.py`` and ``.sh`` files."""
    import fire_exp.runner.prereg as prereg

    package = tmp_path / "fire_exp"
    files = {"a.py": b"a", "run/b.sh": b"b", "notes.txt": b"c", "suites/t/x.py": b"d",
             "_data/portfolios/y.py": b"e", "__pycache__/z.py": b"f", "run/__pycache__/w.py": b"g"}
    for name, data in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_bytes(data)
    monkeypatch.setattr(prereg, "PACKAGE_DIR", package)
    assert harness_file_hashes() == {"fire_exp/a.py": sha(b"a"), "fire_exp/run/b.sh": sha(b"b")}
