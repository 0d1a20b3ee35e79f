"""configs/agent/{openai,claude-code,codex}.yaml build their agents through the registry."""

from __future__ import annotations

import pytest
import yaml

from fire_exp.paths import CONFIG_DIR
from fire_exp.registry import REGISTRY


@pytest.mark.parametrize("name", ["openai", "claude-code", "codex"])
def test_agent_config_builds(name: str) -> None:
    params = yaml.safe_load((CONFIG_DIR / "agent" / f"{name}.yaml").read_text())
    assert params.pop("name") == name
    agent = REGISTRY.get("agent", name)(**params)
    assert agent.name == name
    assert not any("key" in k.lower() and not k.endswith("_env") for k in params)
