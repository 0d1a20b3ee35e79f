"""The conformance kit (``environments/conformance.py``), run by every backend: local,
Docker and the one-shot box (``oneshot_box.py``: one-shot exec and file transfer only).

Each check gets a fresh box of the task csv-column-stats.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.config import ComponentConfig
from fire_exp.environments.base import Environment
from fire_exp.environments.conformance import CHECKS, ConformanceError, self_check
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.local import LocalEnvironment
from fire_exp.runner.build import environment_factory

from . import oneshot_box
from .helpers import bundled_task

LEASE_S = 1.0  # the one-shot box's watchdog lease: its check waits this long, not 30 s


def make_box(backend: str, tmp_path: Path, run: str) -> Environment:
    task = bundled_task("csv-column-stats")
    if backend == "docker":
        return DockerEnvironment(task, tmp_path / "a", run)
    if backend == "oneshot":  # through the registry, as a run builds it
        factory = environment_factory(ComponentConfig("oneshot", {"lease_s": LEASE_S}))
        return factory.make(task, tmp_path / "a", run)
    return LocalEnvironment(task, tmp_path / "a", run)


@pytest.fixture(params=["local", "oneshot", pytest.param("docker", marks=pytest.mark.docker)])
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Environment]:
    if request.param == "docker":
        request.getfixturevalue("docker_client")
    with make_box(request.param, tmp_path, "conformance") as env:
        yield env


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_the_backend_passes_the_kit(box: Environment, check: str) -> None:
    CHECKS[check](box)


def test_the_registered_one_shot_box_is_the_one_file_backend(tmp_path: Path) -> None:
    env = make_box("oneshot", tmp_path, "registered")
    env.stop()  # never started: its folder goes all the same
    assert type(env) is oneshot_box.OneShotBox and env.lease_s == LEASE_S
    assert not env.root.exists()


class NoHangup(LocalEnvironment):
    """A backend that breaks one promise: its session's end kills nothing."""

    def end_command_session(self):  # type: ignore[no-untyped-def]
        session, self.session = self.session, None
        assert session is not None
        session.request({"op": "ping"}, 10.0)
        self._host.kill()  # type: ignore[union-attr]
        self._host.wait()  # type: ignore[union-attr]
        self._host = None
        return super().end_command_session()


def test_the_kit_names_a_backend_that_breaks_a_promise(tmp_path: Path) -> None:
    failures = self_check(lambda: NoHangup(bundled_task("csv-column-stats"),
                                           tmp_path / "a", "broken"),
                          ["hangup_ends_attached_work_only", "state_persists_between_commands"])
    assert "survived the hangup" in str(failures["hangup_ends_attached_work_only"])
    assert failures["state_persists_between_commands"] is None
    with _WrongFolder(bundled_task("csv-column-stats"), tmp_path / "b", "wrong") as wrong, \
            pytest.raises(ConformanceError, match="not the working folder"):
        CHECKS["exec_runs_in_the_working_folder"](wrong)


class _WrongFolder(LocalEnvironment):
    def exec(self, command, timeout, *, env=None):  # type: ignore[no-untyped-def]
        return super().exec(f"cd / && {command}", timeout, env=env)


class _NoModes(LocalEnvironment):
    """A backend that breaks one promise: files arrive without their mode."""

    def write_file(self, dest, data, mode=0o644):  # type: ignore[no-untyped-def]
        super().write_file(dest, data, 0o644)


def test_the_kit_names_a_box_whose_hook_spool_cannot_answer(tmp_path: Path) -> None:
    failures = self_check(lambda: _NoModes(bundled_task("csv-column-stats"), tmp_path / "a",
                                           "no-modes"),
                          ["hook_spool_answers_each_call_and_fails_closed"])
    assert "the hook calls' answers" in str(
        failures["hook_spool_answers_each_call_and_fails_closed"])
