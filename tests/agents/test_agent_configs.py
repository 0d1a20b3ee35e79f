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


@pytest.mark.parametrize("name", ["claude-code", "codex"])
def test_the_endpoint_is_one_line_on_the_command_line(name: str) -> None:
    """``agent.base_url=URL agent.model=NAME agent.api_key_env=VAR`` compose with the
    config (no ``+``) and reach the agent; the endpoint's host:port is allowed out."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from fire_exp.config import run_config_from_dict
    from fire_exp.runner.build import agent_factory

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=[
                "panel=demo", f"agent={name}", "agent.base_url=http://10.1.2.3:8799/v1",
                "agent.model=local-coder", "agent.api_key_env=LOCAL_KEY"])
    finally:
        GlobalHydra.instance().clear()
    data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    agent = agent_factory(run_config_from_dict(data).agent).make()
    assert (agent.base_url, agent.model, agent.api_key_env) == \
        ("http://10.1.2.3:8799/v1", "local-coder", "LOCAL_KEY")
    from fire_exp.environments.egress import parse_endpoint

    assert ("10.1.2.3", 8799) in {parse_endpoint(a) for a in agent.allowed_endpoints({})}


def test_a_base_url_that_is_not_http_is_refused_where_it_enters() -> None:
    from fire_exp.errors import InputError

    with pytest.raises(InputError, match=r"base_url.*not an http:// or https:// URL"):
        REGISTRY.get("agent", "codex")(base_url="127.0.0.1:8799")
