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


def test_an_agent_parameter_out_of_range_is_refused_where_it_enters() -> None:
    with pytest.raises(InputError, match="temperature"):
        panel_from_dict({**PANEL, "declare": {"a": {"agent": {"temperature": -1}}}})


def test_destinations_are_normalized() -> None:
    assert check_file_destination("./a/./b.md") == "a/b.md"


def test_the_paper_arms_are_presets_of_the_same_form() -> None:
    specs = [preset(a) for a in ARMS]
    assert [s.policies for s in specs] == ["real", "sham", "always_verify", "reconsider", "none"]
    assert all(not s.declared and not s.files and not s.agent and not s.instruction
               for s in specs)


def test_a_panel_of_preset_arms_keeps_its_config_hash() -> None:
    panel = panel_from_dict({**PANEL, "arms": list(ARMS)})
    before = asdict(panel)
    before.pop("declare")  # the hash of the same panel before arms could be declared
    for key in ("budget_usd", "budget_attempts"):  # nor spending caps (not the experiment)
        before.pop(key)
    assert panel.as_dict() == before
    declared = panel_from_dict({**PANEL, "declare": {"a": {"instruction": "x"}}})
    assert "declare" in declared.as_dict()
    text = json.dumps(before, sort_keys=True, default=list)
    assert hashlib.sha256(text.encode()).hexdigest() == _panel_hash(panel)


def _panel_hash(panel: PanelConfig) -> str:
    return hashlib.sha256(json.dumps(panel.as_dict(), sort_keys=True, default=list)
                          .encode()).hexdigest()
