"""The box runtime's volumes on the engine: made from a base image with python3 and bash,
refused from one without, listed by ``fire-exp images list``, and removed by ``fire-exp
cleanup`` once their base image is gone."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from fire_exp.environments.base import EnvironmentFailure
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.docker_cleanup import CleanupReport, remove_runtimes
from fire_exp.environments.docker_runtime import KIND, ensure_runtime, volume_name
from fire_exp.environments.images import BASE_IMAGE, LABEL, image_exists

from .minimal_image import minimal_image

pytestmark = pytest.mark.docker


def test_the_runtime_is_made_from_the_base_image_and_listed(docker_client: Any) -> None:
    volume = ensure_runtime(docker_client, BASE_IMAGE)
    base_id = image_exists(docker_client, BASE_IMAGE)
    assert base_id is not None and volume == volume_name(base_id)
    labels = docker_client.volumes.get(volume).attrs["Labels"]
    assert labels == {LABEL: "1", f"{LABEL}.kind": KIND, f"{LABEL}.base": base_id}
    listed = {(e.kind, e.tag) for e in DockerEnvironment.list_images()}
    assert (KIND, volume) in listed and ("base", BASE_IMAGE) in listed


def test_an_image_without_python3_makes_no_runtime(docker_client: Any) -> None:
    image = minimal_image(docker_client)
    with pytest.raises(EnvironmentFailure, match="the base image has no python3"):
        ensure_runtime(docker_client, image)
    image_id = image_exists(docker_client, image)
    assert image_id is not None
    assert not docker_client.volumes.list(filters={"name": volume_name(image_id)})


def test_cleanup_removes_the_runtimes_whose_base_image_is_gone(docker_client: Any) -> None:
    gone = f"sha256:{secrets.token_hex(32)}"  # an image id no engine has
    stale = docker_client.volumes.create(
        name=f"fire-exp-runtime-test-{secrets.token_hex(4)}",
        labels={LABEL: "1", f"{LABEL}.kind": KIND, f"{LABEL}.base": gone})
    live = ensure_runtime(docker_client, BASE_IMAGE)
    try:
        # What fire-exp cleanup does for volumes (the whole cleanup would also reap other
        # tests' deliberately dead containers).
        report = CleanupReport()
        remove_runtimes(docker_client, report)
        assert stale.name in report.volumes and live not in report.volumes
        assert docker_client.volumes.list(filters={"name": live})
        assert not docker_client.volumes.list(filters={"name": stale.name})
    finally:
        try:
            stale.remove()
        except Exception:  # noqa: BLE001, S110 - removed by the cleanup, as it should
            pass
