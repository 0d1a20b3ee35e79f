"""The Docker environment on the real engine: bundled tasks, failure causes, containers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fire_exp.agents.base import AgentOutcome, NopAgent, OracleAgent
from fire_exp.agents.session import AgentSession
from fire_exp.environments.base import EnvironmentFailure
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.images import LABEL, task_image_tag
from fire_exp.environments.local import LocalEnvironment
from fire_exp.records import AttemptRecord, Cause
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.model import task_digest

from .helpers import BUNDLED, DOCKERFILE, bundled_task, make_task

Attempt = Callable[..., AttemptRecord]

ENVIRONMENTS = {"local": LocalEnvironment, "docker": DockerEnvironment}


@pytest.mark.parametrize("name", BUNDLED)
@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_bundled_task_passes_with_oracle_and_fails_with_nop(
        backend: str, name: str, attempt: Attempt, request: pytest.FixtureRequest) -> None:
    if backend == "docker":
        request.getfixturevalue("docker_client")
    task = bundled_task(name)
    oracle = attempt(task, ENVIRONMENTS[backend], OracleAgent())
    assert (oracle.cause, oracle.reward) == (None, 1.0), oracle.error
    assert oracle.environment == backend
    nop = attempt(task, ENVIRONMENTS[backend], NopAgent())
    assert (nop.cause, nop.reward, nop.passed) == (None, 0.0, False), nop.error


@pytest.mark.docker
def test_container_has_the_task_limits_labels_and_no_network(
        docker_client: Any, tmp_path: Path) -> None:
    task = bundled_task("kv-http-service")  # memory_mb = 512, cpus = 1, no-network
    env = DockerEnvironment(task, tmp_path / "run" / "attempts" / "t" / "baseline" / "r0",
                            "limits-test")
    with env:
        host = env.container.attrs["HostConfig"]
        assert host["NanoCpus"] == 1_000_000_000 and host["Memory"] == 512 * 2**20
        assert host["NetworkMode"] == "none" and host["Init"] is True
        labels = env.container.labels
        assert labels[LABEL] == "1" and labels[f"{LABEL}.attempt"] == "limits-test"
        assert labels[f"{LABEL}.run"] == "run"
        assert env.exec("ls /sys/class/net", 10).stdout.split() == ["lo"]
        assert env.exec("ls /tests 2>&1; echo $?", 10).stdout.strip().endswith("2")
        name = env.container.name
    assert not docker_client.containers.list(all=True, filters={"name": name})
    env.stop()  # idempotent


@pytest.mark.docker
def test_public_tasks_get_a_network(docker_client: Any, tmp_path: Path) -> None:
    task = make_task(tmp_path, "public-net", environment='network_mode = "public"')
    with DockerEnvironment(task, tmp_path / "a", "public-net") as env:
        assert "eth0" in env.exec("ls /sys/class/net", 10).stdout.split()


@pytest.mark.docker
def test_task_image_is_built_once_per_content_digest(docker_client: Any, tmp_path: Path) -> None:
    task = bundled_task("csv-column-stats")
    tag = task_image_tag(task, "fire-exp/base:bookworm")
    with DockerEnvironment(task, tmp_path / "a", "image-test") as env:
        assert env.image == tag
    image = docker_client.images.get(tag)
    assert image.labels[f"{LABEL}.digest"] == task_digest(task.environment_dir)
    assert tag.startswith("fire-exp/task-csv-column-stats:") and len(tag.split(":")[1]) == 12
    with DockerEnvironment(task, tmp_path / "b", "image-test-2") as env:
        assert docker_client.images.get(env.image).id == image.id  # reused, not rebuilt


def test_image_tag_follows_the_build_context_only(tmp_path: Path) -> None:
    task = make_task(tmp_path, "tagged")
    tag = task_image_tag(task, "fire-exp/base:bookworm")
    (task.path / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    assert task_image_tag(load_task(task.path), "fire-exp/base:bookworm") == tag
    assert task_image_tag(task, "other/base:1") != tag
    (task.environment_dir / "Dockerfile").write_text(DOCKERFILE + "RUN true\n")
    assert task_image_tag(load_task(task.path), "fire-exp/base:bookworm") != tag


@pytest.mark.docker
def test_prebuilt_docker_image_without_environment_folder(docker_client: Any, tmp_path: Path,
                                                          attempt: Attempt) -> None:
    task = make_task(tmp_path, "prebuilt", dockerfile=None,
                     environment='docker_image = "fire-exp/base:bookworm"\nworkdir = "/app"')
    assert not task.environment_dir.exists()
    assert attempt(task, DockerEnvironment, OracleAgent()).reward == 1.0
    assert attempt(task, DockerEnvironment, NopAgent()).reward == 0.0


@pytest.mark.docker
def test_build_failure_is_an_environment_failure(docker_client: Any, tmp_path: Path,
                                                 attempt: Attempt) -> None:
    task = make_task(tmp_path, "broken-build",
                     dockerfile="ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo no-such-luck; exit 3\n")
    record = attempt(task, DockerEnvironment, OracleAgent())
    assert record.cause is Cause.ENVIRONMENT_FAILED and record.reward is None
    assert "image build failed" in (record.error or "")
    assert "no-such-luck" in (record.error or "")


@pytest.mark.docker
def test_missing_prebuilt_image_is_an_environment_failure(docker_client: Any, tmp_path: Path,
                                                          attempt: Attempt) -> None:
    task = make_task(tmp_path, "no-image", dockerfile=None,
                     environment='docker_image = "fire-exp/no-such-image:0"')
    record = attempt(task, DockerEnvironment, OracleAgent())
    assert record.cause is Cause.ENVIRONMENT_FAILED
    assert "fire-exp/no-such-image:0" in (record.error or "")


class _KillsContainer:
    """An agent whose container is killed under it in the middle of a command."""

    name, tier = "killer", None

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        session.begin()
        container = session.env.container  # type: ignore[attr-defined]
        threading.Timer(1.0, container.kill).start()
        session.bash("sleep 30")
        return AgentOutcome()


@pytest.mark.docker
def test_a_container_that_dies_is_an_environment_failure(docker_client: Any, tmp_path: Path,
                                                         attempt: Attempt) -> None:
    task = make_task(tmp_path, "dies")
    record = attempt(task, DockerEnvironment, _KillsContainer())
    assert record.cause is Cause.ENVIRONMENT_FAILED and record.reward is None, record.error
    assert "session died" in (record.error or "")


@pytest.mark.docker
def test_agent_timeout_still_runs_the_verifier(docker_client: Any, tmp_path: Path,
                                               attempt: Attempt) -> None:
    task = make_task(tmp_path, "slow-agent", agent_timeout=2.0,
                     solve="touch /app/started; sleep 20; touch /app/done\n",
                     test="#!/bin/bash\n[ -f /app/started ] && echo 0.5 > /logs/verifier/reward.txt\n")
    record = attempt(task, DockerEnvironment, OracleAgent())
    assert record.cause is Cause.AGENT_TIMEOUT
    assert record.reward == 0.5  # the verifier ran and saw what the agent had done


@pytest.mark.docker
def test_verifier_timeout(docker_client: Any, tmp_path: Path, attempt: Attempt) -> None:
    task = make_task(tmp_path, "slow-verifier", verifier_timeout=1.0,
                     test="#!/bin/bash\nsleep 30\necho 1 > /logs/verifier/reward.txt\n")
    record = attempt(task, DockerEnvironment, OracleAgent())
    assert record.cause is Cause.VERIFIER_TIMEOUT and record.reward is None
    with DockerEnvironment(task, tmp_path / "direct", "slow-verifier-direct") as env:
        env.end_command_session()
        assert env.run_verifier().cause is Cause.VERIFIER_TIMEOUT
        processes = env.container.exec_run(["ps", "-eo", "args"]).output.decode()
        assert "test.sh" not in processes and "sleep 30" not in processes  # killed


@pytest.mark.docker
@pytest.mark.parametrize(("case", "test", "message"), [
    ("none", "#!/bin/bash\necho nothing\n", "no reward.json or reward.txt"),
    ("empty", "#!/bin/bash\ntouch /logs/verifier/reward.txt\n", "reward.txt is empty"),
    ("json-wins", "#!/bin/bash\necho '{\"reward\": 1, \"style\": 0.5}' > "
     "/logs/verifier/reward.json\necho 0 > /logs/verifier/reward.txt\n", None),
])
def test_reward_contract(docker_client: Any, tmp_path: Path, attempt: Attempt, case: str,
                         test: str, message: str | None) -> None:
    task = make_task(tmp_path, f"reward-{case}", test=test)
    record = attempt(task, DockerEnvironment, NopAgent())
    if message is None:  # reward.json wins over reward.txt
        assert (record.cause, record.reward) == (None, 1.0)
    else:  # a missing or empty reward is a verifier failure, not a zero
        assert record.cause is Cause.VERIFIER_FAILED and record.reward is None
        assert message in (record.error or "")


@pytest.mark.docker
def test_tests_arrive_only_for_the_verifier_and_logs_come_home(docker_client: Any,
                                                              tmp_path: Path) -> None:
    test = ("#!/bin/bash\nls /tests > /logs/verifier/seen.txt\necho \"$EXTRA\"\n"
            "echo 1 > /logs/verifier/reward.txt\n")
    task = make_task(tmp_path, "logs-home", test=test,
                     environment="")
    (task.path / "task.toml").write_text((task.path / "task.toml").read_text().replace(
        "[environment]", '[verifier.env]\nEXTRA = "from-task-toml"\n[environment]'))
    task = load_task(task.path)
    attempt_dir = tmp_path / "a"
    with DockerEnvironment(task, attempt_dir, "logs-home") as env:
        assert env.exec("ls /tests", 10).exit_code != 0
        env.exec("echo hello from the agent", 10)
        env.end_command_session()
        result = env.run_verifier()
    assert result.reward == 1.0 and "from-task-toml" in result.stdout
    verifier = attempt_dir / "logs" / "verifier"
    assert (verifier / "seen.txt").read_text().split() == ["test.sh"]
    assert "hello from the agent" in (attempt_dir / "logs" / "agent" / "terminal.log").read_text()


@pytest.mark.docker
def test_stop_never_raises_and_removes_the_container(docker_client: Any, tmp_path: Path) -> None:
    task = make_task(tmp_path, "stopper")
    env = DockerEnvironment(task, tmp_path / "a", "stopper")
    env.start()
    name = env.container.name
    docker_client.containers.get(name).remove(force=True)  # gone behind its back
    with pytest.raises(EnvironmentFailure):
        env.exec("true", 5)
    env.stop()
    env.stop()
    assert not docker_client.containers.list(all=True, filters={"name": name})



@pytest.mark.docker
def test_cancel_interrupts_a_running_command(docker_client: Any, tmp_path: Path) -> None:
    task = make_task(tmp_path, "cancel")
    with DockerEnvironment(task, tmp_path / "a", "cancel") as env:
        threading.Timer(0.5, env.cancelled.set).start()
        with pytest.raises(EnvironmentFailure, match="cancelled"):
            env.exec("sleep 60", 120)
