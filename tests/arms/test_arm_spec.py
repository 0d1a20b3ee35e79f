"""Declaring arms in the panel config: every field checked where it enters; the paper's
arms are presets; a panel of preset arms hashes as before arms could be declared."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

import pytest

from fire_exp.arms import ArmSpec, arm_specs_from_dict, check_file_destination, preset
from fire_exp.config import PanelConfig, panel_from_dict
from fire_exp.errors import InputError
from fire_exp.policies.arms import ARMS

PANEL = {"name": "p", "suite": "fire-mini", "eligible": ["serve-status-page"], "silent": [],
         "arms": ["a", "b"], "attempts": 1, "portfolio": "fire-core"}


def test_a_declared_arm_reads_every_kind_of_change() -> None:
    specs = arm_specs_from_dict({
        "a": {"description": "d", "policies": "sham", "agent": {"temperature": 0.2},
              "instruction": "Be brief.", "files": {"./AGENTS.md": "arms/x.md"},
              "environment": {"pids_limit": 64}},
        "b": None})
    a = specs["a"]
    assert (a.policies, a.agent, a.instruction, a.files, a.environment) == (
        "sham", {"temperature": 0.2}, "Be brief.", {"AGENTS.md": "arms/x.md"},
        {"pids_limit": 64})
    assert specs["b"] == ArmSpec("b")
    assert specs["b"].policy_source == "baseline"
    assert a.changes() == ["policies: sham", "agent.temperature=0.2",
                           "instruction + 9 characters", "file AGENTS.md from arms/x.md",
                           "environment.pids_limit=64"]
    assert specs["b"].changes() == ["nothing"]


@pytest.mark.parametrize("dest", ["tests/test.sh", "./tests/x", "logs/verifier/reward.txt",
                                  "solution/solve.sh", "/logs/verifier/reward.txt",
                                  "../outside.md", "docs/../../x", ""])
def test_a_file_where_the_verifier_reads_or_outside_the_working_folder_is_refused(dest) -> None:
    with pytest.raises(InputError) as err:
        arm_specs_from_dict({"a": {"files": {dest: "arms/x.md"}}})
    assert err.value.path == "configs/panel"
    assert err.value.field.startswith("declare.a.files")


@pytest.mark.parametrize(("data", "field"), [
    ({"a": {"tools": 1}}, "declare.a.tools"),
    ({"a": {"environment": {"base_image": "x"}}}, "declare.a.environment.base_image"),
    ({"a": {"agent": "strong"}}, "declare.a.agent"),
    ({"a": {"instruction": 3}}, "declare.a.instruction"),
    ({"a b": {}}, "declare.a b"),
    ({"a": {"files": {"AGENTS.md": 7}}}, "declare.a.files.AGENTS.md"),
    ({"a": {"files": {"AGENTS.md": "x", "./AGENTS.md": "y"}}}, "declare.a.files../AGENTS.md"),
])
def test_a_malformed_declaration_is_refused_naming_its_field(data, field) -> None:
    with pytest.raises(InputError) as err:
        arm_specs_from_dict(data)
    assert err.value.field == field


def test_an_agent_parameter_out_of_range_is_refused_where_the_arms_agent_is_built() -> None:
    """The bottom layer knows no agent's keys; the arm's agent is built with the panel,
    its settings checked by the agent's model, naming the arm's path."""
    from fire_exp.config import run_config_from_dict
    from fire_exp.runner.build import build_panel

    panel = {**PANEL, "declare": {"a": {"agent": {"temperature": -1}}, "b": None}}
    config = run_config_from_dict({"panel": panel, "agent": {"name": "openai"},
                                   "environment": {"name": "local"},
                                   "executor": {"name": "local"}, "run": "r"})
    with pytest.raises(InputError) as err:
        build_panel(config)
    assert str(err.value) == (
        "configs/panel: declare.a: configs/agent/openai.yaml: temperature: -1 is below 0 "
        "(set panel.declare.a.agent.temperature to 0 or more)")


def test_destinations_are_normalized() -> None:
    assert check_file_destination("./a/./b.md") == "a/b.md"


def test_the_paper_arms_are_presets_of_the_same_form() -> None:
    specs = [preset(a) for a in ARMS]
    assert [s.policies for s in specs] == ["real", "sham", "always_verify", "reconsider", "none"]
    assert all(not s.declared and not s.files and not s.agent and not s.instruction
               for s in specs)
    assert specs == [ArmSpec(a, policies="none" if a == "baseline" else a, declared=False)
                     for a in ARMS]
    assert all(s.declared is False for s in specs)


def test_a_panel_of_preset_arms_keeps_its_config_hash() -> None:
    panel = panel_from_dict({**PANEL, "arms": list(ARMS)})
    before = asdict(panel)
    before.pop("declare")  # the hash of the same panel before arms could be declared
    for key in ("budget_usd", "budget_attempts"):  # nor spending caps (not the experiment)
        before.pop(key)
    assert before.pop("agent_timeout_multiplier") == 1.0  # the tasks' own time: not hashed
    assert panel.as_dict() == before
    declared = panel_from_dict({**PANEL, "declare": {"a": {"instruction": "x"}}})
    assert "declare" in declared.as_dict()
    text = json.dumps(before, sort_keys=True, default=list)
    assert hashlib.sha256(text.encode()).hexdigest() == _panel_hash(panel)


def _panel_hash(panel: PanelConfig) -> str:
    return hashlib.sha256(json.dumps(panel.as_dict(), sort_keys=True, default=list)
                          .encode()).hexdigest()


# ---------------------------------------------------------------- each field and message
def test_every_field_of_a_declaration_is_read_into_the_spec() -> None:
    spec = arm_specs_from_dict({"x.1-a_b": {
        "description": "d", "policies": "real", "portfolio": "p", "controls": "c",
        "agent_config": "nop", "agent": {"tier": "weak"}, "instruction": "I.",
        "files": {"a/b.md": "arms/b.md"}, "environment": {"public_network": True}}})["x.1-a_b"]
    assert spec == ArmSpec(name="x.1-a_b", policies="real", portfolio="p", controls="c",
                           agent_config="nop", agent={"tier": "weak"}, instruction="I.",
                           files={"a/b.md": "arms/b.md"},
                           environment={"public_network": True}, description="d",
                           declared=True)
    assert spec.settings() == {"name": "x.1-a_b", "policies": "real", "portfolio": "p",
                               "controls": "c", "agent_config": "nop",
                               "agent": {"tier": "weak"}, "instruction": "I.",
                               "files": {"a/b.md": "arms/b.md"},
                               "environment": {"public_network": True}, "description": "d"}
    assert spec.settings_json() == json.dumps(spec.settings(), sort_keys=True,
                                              separators=(",", ":"))
    assert spec.changes() == ["policies: real", "portfolio: p", "controls: c", "agent: nop",
                              "agent.tier=weak", "instruction + 2 characters",
                              "file a/b.md from arms/b.md", "environment.public_network=True"]
    assert spec.policy_source == "real"


def test_empty_fields_mean_the_panels_defaults() -> None:
    spec = arm_specs_from_dict({"x": {"policies": "", "portfolio": "", "controls": None,
                                      "agent_config": "", "agent": None, "files": None,
                                      "environment": None, "instruction": None,
                                      "description": None}})["x"]
    assert spec == ArmSpec("x")
    assert (spec.policies, spec.policy_source) == ("none", "baseline")
    assert arm_specs_from_dict(None) == {}


def test_changes_are_listed_in_a_fixed_order() -> None:
    spec = ArmSpec("x", agent={"b": 2, "a": 1}, files={"z.md": "s1", "m.md": "s2"},
                   environment={"pids_limit": 9, "public_network": False})
    assert spec.changes() == ["agent.a=1", "agent.b=2", "file m.md from s2", "file z.md from s1",
                              "environment.pids_limit=9", "environment.public_network=False"]


@pytest.mark.parametrize(("data", "message"), [
    ({"-a": {}}, "declare.-a: an arm's name may hold letters, digits, '_', '.' and '-' and "
                 "starts with a letter or digit (rename the arm)"),
    ({"a": 3}, "declare.a: expected a mapping, got 3"),
    ({"a": {1: "x"}}, "declare.a: expected a mapping, got {1: 'x'}"),
    ({"a": {"tools": 1, "zz": 2}}, "declare.a.tools: not a field of an arm (use some of "
                                   "description, policies, portfolio, controls, agent_config, "
                                   "agent, instruction, files, environment)"),
    ({"a": {"files": {"AGENTS.md": " "}}}, "declare.a.files.AGENTS.md: expected a source file "
                                           "path"),
    ({"a": {"files": ["AGENTS.md"]}}, "declare.a.files: expected a mapping, got ['AGENTS.md']"),
    ({"a": {"environment": {"image": 1, "base_image": 2}}},
     "declare.a.environment.base_image: not an environment setting an arm may change (an arm "
     "may change pids_limit, public_network)"),
    ({"a": {"files": {"x.md": "s", "./x.md": "t"}}}, "declare.a.files../x.md: places x.md twice "
                                                     "(give each file one destination)"),
    ({"a": {"policies": 1}}, "declare.a.policies: expected text, got 1"),
    ({"a": {"portfolio": []}}, "declare.a.portfolio: expected text, got []"),
    ({"a": {"controls": 2}}, "declare.a.controls: expected text, got 2"),
    ({"a": {"agent_config": 3}}, "declare.a.agent_config: expected text, got 3"),
    ({"a": {"description": 4}}, "declare.a.description: expected text, got 4"),
    ({"a": {"agent": [1]}}, "declare.a.agent: expected a mapping, got [1]"),
    ({"a": {"environment": 5}}, "declare.a.environment: expected a mapping, got 5"),
    ("arms", "declare: expected a mapping, got 'arms'"),
])
def test_each_malformed_field_is_refused_with_its_message(data, message) -> None:
    with pytest.raises(InputError) as err:
        arm_specs_from_dict(data)
    assert str(err.value) == f"configs/panel: {message}"


@pytest.mark.parametrize(("dest", "message"), [
    ("", "files.: a placed file must be a relative path inside the task's working folder "
         "(write it as e.g. AGENTS.md or docs/NOTES.md)"),
    ("  ", "files.  : a placed file must be a relative path inside the task's working folder "
           "(write it as e.g. AGENTS.md or docs/NOTES.md)"),
    (".", "files..: a placed file must be a relative path inside the task's working folder "
          "(write it as e.g. AGENTS.md or docs/NOTES.md)"),
    ("/etc/x", "files./etc/x: a placed file must be a relative path inside the task's working "
               "folder (write it as e.g. AGENTS.md or docs/NOTES.md)"),
    ("a/../../x", "files.a/../../x: a placed file must be a relative path inside the task's "
                  "working folder (write it as e.g. AGENTS.md or docs/NOTES.md)"),
    ("./logs/x", "files../logs/x: an arm may not place files under logs/ (the verifier's tests, "
                 "logs and reward files are the same in every arm) (place it elsewhere in the "
                 "working folder)"),
    ("solution", "files.solution: an arm may not place files under solution/ (the verifier's "
                 "tests, logs and reward files are the same in every arm) (place it elsewhere "
                 "in the working folder)"),
])
def test_each_bad_destination_is_refused_with_its_message(dest: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        check_file_destination(dest)
    assert str(err.value) == f"configs/panel: {message}"


@pytest.mark.parametrize(("dest", "normalized"), [("a.md", "a.md"), ("./a/b.md", "a/b.md"),
                                                  ("testsuite/x", "testsuite/x"),
                                                  ("docs/tests/x", "docs/tests/x")])
def test_a_destination_beside_the_verifiers_folders_is_kept(dest: str, normalized: str) -> None:
    assert check_file_destination(dest, "declare.a.files") == normalized


def test_sources_and_agent_configs_resolve_under_configs_then_as_paths(tmp_path, monkeypatch
                                                                       ) -> None:
    from fire_exp.arms import resolve_agent_config, resolve_source
    from fire_exp.paths import CONFIG_DIR

    bundled = next(p for p in sorted((CONFIG_DIR / "arms").rglob("*")) if p.is_file())
    assert resolve_source(str(bundled.relative_to(CONFIG_DIR))) == bundled.resolve()
    own = tmp_path / "mine.md"
    own.write_text("x")
    assert resolve_source(str(own)) == own.resolve()
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_source("~/mine.md") == own.resolve()
    with pytest.raises(InputError) as err:
        resolve_source("arms/none-such.md")
    assert str(err.value) == (f"configs/panel: files: arms/none-such.md: no such file (put it "
                              f"under {CONFIG_DIR}/ or give a path to it)")
    assert resolve_agent_config("nop", "a") == (CONFIG_DIR / "agent" / "nop.yaml").resolve()
    (tmp_path / "agent.yaml").write_text("name: nop\n")
    assert resolve_agent_config(str(tmp_path / "agent.yaml"), "a") == \
        (tmp_path / "agent.yaml").resolve()
    assert resolve_agent_config("~/agent.yaml", "a") == (tmp_path / "agent.yaml").resolve()
    known = ", ".join(sorted(p.stem for p in (CONFIG_DIR / "agent").glob("*.yaml")))
    with pytest.raises(InputError) as err:
        resolve_agent_config("nopp", "arm7")
    assert str(err.value) == (f"configs/panel: declare.arm7.agent_config: no agent config "
                              f"'nopp' (use one of {known}, or a path to a YAML file)")


def test_only_the_process_and_network_settings_are_safe() -> None:
    from fire_exp.arms import FORBIDDEN_FOLDERS, NO_POLICIES, SAFE_ENVIRONMENT_PARAMS

    assert SAFE_ENVIRONMENT_PARAMS == {"pids_limit", "public_network"}
    assert FORBIDDEN_FOLDERS == ("tests", "logs", "solution")
    assert NO_POLICIES == "none"
