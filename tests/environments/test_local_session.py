"""The local environment's session semantics, with real processes and real sockets."""

from __future__ import annotations

import json
import socket
import textwrap
import uuid
from pathlib import Path

import pytest

from fire_exp.environments import LocalEnvironment
from fire_exp.records import Cause
from fire_exp.tasks import load_task
from tests.conftest import marked_pids

SERVE = "python3 -m http.server {port} --bind 127.0.0.1"


def make_task(root: Path, test_sh: str = "echo 1 > $FIRE_LOGS/verifier/reward.txt",
              setup: str = "mkdir -p $FIRE_WORKDIR && echo hello > $FIRE_WORKDIR/seed.txt",
              verifier_timeout: float = 10) -> Path:
    task = root / "task"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text(f'schema_version = "1.1"\n[verifier]\ntimeout_sec = '
                                    f"{verifier_timeout}\n")
    (task / "instruction.md").write_text("Do the thing.\n")
    (task / "environment" / "Dockerfile").write_text("FROM fire-exp/base:bookworm\n")
    (task / "environment" / "setup.sh").write_text(setup + "\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\n" + test_sh + "\n")
    return task


@pytest.fixture
def env(tmp_path: Path):
    attempt_id = f"test-local-{uuid.uuid4().hex[:8]}"
    environment = LocalEnvironment(load_task(make_task(tmp_path)), tmp_path / "attempt",
                                   attempt_id)
    with environment:
        yield environment
    assert marked_pids(environment.marker) == [], "stop() must kill every process it started"


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_setup_prepares_the_working_folder(env: LocalEnvironment) -> None:
    result = env.exec("cat seed.txt; pwd", timeout=10)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["hello", env.paths.workdir]


def test_exec_reports_exit_code_and_both_streams(env: LocalEnvironment) -> None:
    result = env.exec("echo out; echo err >&2; exit 3", timeout=10)
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")


def test_command_timeout_kills_the_command(env: LocalEnvironment) -> None:
    result = env.exec("sleep 30; echo never", timeout=0.5)
    assert result.timed_out and result.exit_code == 124 and "never" not in result.stdout


def test_commands_do_not_see_the_users_secrets(env: LocalEnvironment, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    assert "sk-should-not-leak" not in env.exec("env", timeout=10).stdout


@pytest.mark.parametrize(("launch", "survives"), [
    ("{serve} &", False),                                          # attached: dies
    ("setsid {serve} > srv.log 2>&1 < /dev/null &", True),         # new session, redirected
    ("nohup {serve} > srv.log 2>&1 &", True),                      # ignores SIGHUP, redirected
    ("setsid {serve} &", False),                                   # detached, streams attached
    ("nohup {serve} &", False),                                    # nohup alone keeps the pipe
])
def test_what_the_agent_leaves_behind(env: LocalEnvironment, launch: str, survives: bool) -> None:
    port = env.port
    env.exec(launch.format(serve=SERVE.format(port=port)), timeout=10)
    probe = env.exec(f"for i in $(seq 50); do python3 -c 'import socket; "
                     f"socket.create_connection((\"127.0.0.1\", {port}), 1)' && exit 0; "
                     "sleep 0.1; done; exit 1", timeout=20)
    assert probe.exit_code == 0, "the server must answer during the session"
    ended = env.end_command_session()
    assert answers(port) is survives
    assert bool(ended.survivors) is survives


def test_stop_kills_detached_survivors(tmp_path: Path) -> None:
    environment = LocalEnvironment(load_task(make_task(tmp_path)), tmp_path / "a",
                                   f"test-local-{uuid.uuid4().hex[:8]}")
    with environment:
        port = environment.port
        environment.exec(f"setsid {SERVE.format(port=port)} > s.log 2>&1 < /dev/null &"
                         " sleep 1", timeout=10)
        environment.end_command_session()
        assert answers(port)
    assert not answers(port)
    assert marked_pids(environment.marker) == []


def test_background_output_does_not_block_the_next_command(env: LocalEnvironment) -> None:
    env.exec("(while true; do echo tick; sleep 0.05; done) &", timeout=5)
    result = env.exec("echo next", timeout=5)
    assert result.stdout.strip().splitlines()[-1] == "next"
    log = Path(env.paths.logs) / "agent" / "terminal.log"
    env.end_command_session()
    assert "tick" in log.read_text()


@pytest.mark.parametrize(("test_sh", "reward", "cause"), [
    ("echo 1 > $FIRE_LOGS/verifier/reward.txt", 1.0, None),
    ("echo 0 > $FIRE_LOGS/verifier/reward.txt; exit 1", 0.0, None),  # exit code ignored
    ("echo 0 > $FIRE_LOGS/verifier/reward.txt; echo '{\"reward\": 0.5}' > "
     "$FIRE_LOGS/verifier/reward.json", 0.5, None),                    # reward.json wins
    ("true", None, Cause.VERIFIER_FAILED),                             # no reward file
    (": > $FIRE_LOGS/verifier/reward.txt", None, Cause.VERIFIER_FAILED),  # empty
    ("echo nan > $FIRE_LOGS/verifier/reward.txt", None, Cause.VERIFIER_FAILED),
    ("sleep 30", None, Cause.VERIFIER_TIMEOUT),
])
def test_verifier_contract(tmp_path: Path, test_sh: str, reward: float | None,
                           cause: Cause | None) -> None:
    task = load_task(make_task(tmp_path, test_sh=test_sh, verifier_timeout=1))
    environment = LocalEnvironment(task, tmp_path / "a", f"test-local-{uuid.uuid4().hex[:8]}")
    with environment:
        environment.end_command_session()
        result = environment.run_verifier()
    assert (result.reward, result.cause) == (reward, cause)


def test_stale_reward_files_are_removed_before_the_verifier(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, test_sh="true"))
    environment = LocalEnvironment(task, tmp_path / "a", f"test-local-{uuid.uuid4().hex[:8]}")
    with environment:
        environment.exec('echo 1 > "$FIRE_LOGS/verifier/reward.txt"', timeout=5)
        environment.end_command_session()
        result = environment.run_verifier()
    assert result.reward is None and result.cause is Cause.VERIFIER_FAILED


def test_failing_setup_is_an_environment_failure(tmp_path: Path) -> None:
    from fire_exp.environments import EnvironmentFailure

    task = load_task(make_task(tmp_path, setup="echo broken >&2; exit 4"))
    environment = LocalEnvironment(task, tmp_path / "a", f"test-local-{uuid.uuid4().hex[:8]}")
    with pytest.raises(EnvironmentFailure, match="exited 4.*broken"):
        with environment:
            pass


def test_session_host_replies_are_json_lines(env: LocalEnvironment) -> None:
    # Output with newlines and quotes must come back intact through the JSON protocol.
    text = textwrap.dedent("""\
        line "one"
        {"two": 2}
    """)
    result = env.exec(f"cat <<'EOF'\n{text}EOF", timeout=5)
    assert result.stdout == text
    assert json.loads(result.stdout.splitlines()[1]) == {"two": 2}
