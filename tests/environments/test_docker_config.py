"""``configs/environment/docker.yaml`` builds a DockerEnvironment through the registry."""

from __future__ import annotations

from pathlib import Path

import yaml

from fire_exp.environments.docker import DockerEnvironment
from fire_exp.paths import CONFIG_DIR
from fire_exp.registry import REGISTRY

from .helpers import bundled_task


def test_docker_config_builds_the_environment(tmp_path: Path) -> None:
    params = yaml.safe_load((CONFIG_DIR / "environment" / "docker.yaml").read_text())
    assert params.pop("name") == "docker"
    factory = REGISTRY.get("environment", "docker")
    env = factory(bundled_task("csv-column-stats"), tmp_path / "a", "config-test", **params)
    assert isinstance(env, DockerEnvironment)
    assert env.base_image == "fire-exp/base:bookworm" and env.public_network == "bridge"
    assert env.paths.workdir == "/app" and env.paths.logs == "/logs"
    env.stop()  # never started: nothing to remove, and no error
