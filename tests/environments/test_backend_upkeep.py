"""Cleanup, images, orphan reaping and engine identity go through the backend: the command
line and the runner ask the registered backend's class methods, with its settings, and a
Ray node prepares images whenever its engine's identity is new."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fire_exp.cli import cleanup as cleanup_cli
from fire_exp.cli import images as images_cli
from fire_exp.environments import docker_engine
from fire_exp.environments.base import Capability, EnvironmentFailure
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.local import LocalEnvironment
from fire_exp.environments.upkeep import BootstrapResult, CleanupReport, ImageEntry
from fire_exp.errors import PreflightError
from fire_exp.registry import REGISTRY
from fire_exp.runner import build, ray_nodes, worker_panel
from fire_exp.runner.model import EnvironmentFactory
from fire_exp.tasks.model import Task

CALLS: list[tuple[str, dict[str, Any]]] = []


class Upkept(LocalEnvironment):
    """A backend with images and resources of its own, on the engine its setting names."""

    name = "upkept"
    capabilities = LocalEnvironment.capabilities | {Capability.IMAGES}

    def __init__(self, task: Task, attempt_dir: Path, attempt_id: str,
                 engine: str = "a") -> None:
        super().__init__(task, attempt_dir, attempt_id)

    @classmethod
    def cleanup(cls, **options: Any) -> CleanupReport:
        CALLS.append(("cleanup", options))
        return CleanupReport(containers=["box-1"], kept=[("box-2", "its run is alive (pid 7)")])

    @classmethod
    def list_images(cls, **params: Any) -> list[ImageEntry]:
        return [ImageEntry(kind="task", tag="upkept/task-x:abc", size_mb=12.0)]

    @classmethod
    def build_base_image(cls, tag: str | None = None, *, force: bool = False,
                         **params: Any) -> BootstrapResult:
        CALLS.append(("bootstrap", {"tag": tag, "force": force}))
        return BootstrapResult(tag=tag or "upkept/base", image_id="sha256:" + "0" * 64,
                               built=True, tool="mmdebstrap", seconds=3.0)

    @classmethod
    def reap_orphans(cls, run_dir: Path | None = None, *, scratch: Path | None = None,
                     **params: Any) -> int:
        CALLS.append(("reap", params))
        return 0

    @classmethod
    def engine_identity(cls, *, engine: str = "a", **params: Any) -> str:
        return f"upkept:{engine}"


@pytest.fixture(autouse=True)
def _registered() -> None:
    if "upkept" not in REGISTRY.names("environment"):
        REGISTRY.register("environment", "upkept", Upkept)
    CALLS.clear()


def test_cleanup_asks_the_named_backend_and_prints_its_report(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cleanup_cli.main(["--environment", "upkept", "--run", "r1"]) == 0
    assert CALLS == [("cleanup", {"everything": False, "images": False, "base": False,
                                  "run": "r1"})]
    out = capsys.readouterr().out
    assert "removed container box-1" in out
    assert "kept container box-2 (its run is alive (pid 7); --all removes it)" in out
    assert "cleanup of run r1: 1 containers, 0 networks, 0 images removed; 1 containers kept" \
        in out


def test_images_list_and_bootstrap_go_through_the_backend(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert images_cli.main(["--environment", "upkept", "list"]) == 0
    assert "task   upkept/task-x:abc  12 MB" in capsys.readouterr().out
    assert images_cli.main(["--environment", "upkept", "bootstrap", "--tag", "t:1",
                            "--force"]) == 0
    assert CALLS == [("bootstrap", {"tag": "t:1", "force": True})]
    assert "built t:1 (sha256:000000000000) with mmdebstrap in 3 s" in capsys.readouterr().out


def test_a_backend_without_images_says_so() -> None:
    with pytest.raises(EnvironmentFailure, match="environment=local has no images capability"):
        images_cli.main(["--environment", "local", "bootstrap"])


def test_reap_orphans_gets_the_backends_settings(tmp_path: Path) -> None:
    factory = EnvironmentFactory("upkept", Upkept, {"engine": "remote-1"})
    factory.reap_orphans(tmp_path)
    assert CALLS == [("reap", {"engine": "remote-1"})]


@pytest.mark.parametrize("engine,prepared", [("a", False), ("b", True)])
def test_a_node_on_an_engine_not_yet_prepared_prepares_it(
        engine: str, prepared: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    factory = EnvironmentFactory("upkept", Upkept, {"engine": engine})
    monkeypatch.setattr(worker_panel, "worker_panel",
                        lambda config, digest: SimpleNamespace(environment=factory))
    ran: list[str] = []
    monkeypatch.setattr(build, "prepare_environments", lambda panel, report: ran.append("x"))
    ready = ray_nodes.prepare_node(None, "", frozenset({"upkept:a"}))  # type: ignore[arg-type]
    assert ready.error is None and ready.engine == f"upkept:{engine}"
    assert (ran == ["x"]) is prepared
    assert ("images already prepared on this engine" in ready.lines) is not prepared


class Engine:
    """A Docker client as far as the engine's identity goes."""

    def __init__(self, info: dict[str, str], has_base: bool = True) -> None:
        self._info, self._has_base = info, has_base
        self.images = self

    def get(self, tag: str) -> Any:
        import docker.errors

        if not self._has_base:
            raise docker.errors.ImageNotFound(tag)
        return SimpleNamespace(id="sha256:base")

    def info(self) -> dict[str, str]:
        return self._info

    def close(self) -> None:
        pass


def _identity(monkeypatch: pytest.MonkeyPatch, engine: Engine) -> str:
    monkeypatch.setattr(docker_engine, "docker_client", lambda: engine)
    return DockerEnvironment.engine_identity(base_image="fire-exp/base:bookworm")


def test_engines_sharing_one_key_file_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two engines whose hosts were cloned with one /etc/docker/key.json report one ID."""
    same = {"ID": "ABCD:EFGH", "Name": "node-1", "DockerRootDir": "/var/lib/docker"}
    first = _identity(monkeypatch, Engine(same))
    assert _identity(monkeypatch, Engine(dict(same))) == first  # the same engine: once
    assert _identity(monkeypatch, Engine(same | {"Name": "node-2"})) != first
    assert _identity(monkeypatch, Engine(same | {"DockerRootDir": "/srv/docker"})) != first


def test_an_engine_without_the_base_image_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PreflightError, match="base image fire-exp/base:bookworm is not on"):
        _identity(monkeypatch, Engine({"ID": "X"}, has_base=False))
