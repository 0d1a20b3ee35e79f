"""Whole attempts with a CLI agent inside the task's container (Docker engine needed).

The fake CLI (tests/fixtures/cli_container/fake_cli.py) is mounted read-only as a host
binary, or installed by a script into a derived image; it runs in the container, executes
its commands there and calls its hooks through the shim. Evidence that a command ran in
the container is written to /logs/agent, which the attempt copies out.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import docker.errors
import numpy as np
import pytest
import requests

from fire_exp.agents.coding_agents import ClaudeCodeAgent, CodexAgent
from fire_exp.agents.openai import OpenAIAgent
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.docker_install import prepare_cli_image
from fire_exp.environments.egress import MAX_CONNECTIONS, ensure_egress_network, gateway_of
from fire_exp.environments.images import BASE_IMAGE, LABEL
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import build_arm, load_portfolio
from fire_exp.records import AttemptRecord, record_to_line
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task
from tests.agents.scripted_server import ScriptedServer, solution_responder
from tests.environments.helpers import make_task
from tests.signals import popen_interruptible

ROOT = Path(__file__).resolve().parents[2]
FAKE_CLI = ROOT / "tests" / "fixtures" / "cli_container" / "fake_cli.py"
KEY_ENV, KEY = "FIRE_H16_TEST_KEY", "sk-fake-fireexp-h16-Zq81LmWx0Pa"
PASS = ["FAKE_CLI_SCRIPT", KEY_ENV]
pytestmark = pytest.mark.docker


@pytest.fixture
def engine(docker_client: Any) -> Any:
    """The Docker engine (tests/environments' session fixture: no container left over)."""
    return docker_client


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(KEY_ENV, KEY)

    def set_script(commands: list[Any], after: list[Any] = ()) -> None:
        monkeypatch.setenv("FAKE_CLI_SCRIPT", json.dumps(
            {"commands": commands, "after_nudge": list(after)}))

    return set_script


def attempt(tmp_path: Path, task: str | Path, arm: str, agent: Any) -> AttemptRecord:
    path = task if isinstance(task, Path) else SUITES_DIR / "fire-mini" / task
    loaded = load_task(path)
    real, controls = load_portfolio("fire-core"), load_portfolio("controls")
    env = DockerEnvironment(loaded, tmp_path / "attempt", f"h16-cli-{arm}")
    spec = AttemptSpec(run="r", panel="p", attempt_id=f"h16-cli-{arm}", task=loaded.name,
                       cohort="eligible", arm=arm, replicate=0, order=0, seed=0,
                       portfolio=str(real.path), controls=str(controls.path))
    return run_attempt(spec, env, agent, build_arm(arm, real, controls).families,
                       real.families, rng=np.random.default_rng(0))


def mounted(cls: type, **kw: Any) -> Any:
    return cls(install={"host_binary": str(FAKE_CLI)}, env_passthrough=PASS, **kw)


def agent_logs(tmp_path: Path) -> Path:
    return tmp_path / "attempt" / "logs" / "agent"


def solve_wal() -> str:
    return (SUITES_DIR / "fire-mini/recover-wal-orders/solution/solve.sh").read_text()


DENIED = "sqlite3 evidence/orders.db .dump > /logs/agent/denied-ran.txt"


def test_claude_code_in_the_container_is_denied_and_the_verifier_sees_its_work(
        engine: Any, script: Any, tmp_path: Path) -> None:
    script([DENIED, "hostname > /logs/agent/where.txt", solve_wal(),
            f"echo the key is ${KEY_ENV}", "env > /logs/agent/env-dump.txt",
            {"write": "/logs/agent/written.txt", "content": "an edit\n"}])  # Write tool
    record = attempt(tmp_path, "recover-wal-orders", "real", mounted(ClaudeCodeAgent))
    assert record.passed and record.cause is None and record.error is None and record.valid
    logs = agent_logs(tmp_path)
    assert (logs / "where.txt").read_text() == "fire-box\n"  # the container's hostname
    assert (logs / "written.txt").read_text() == "an edit\n"  # edits land in the container
    assert not (logs / "denied-ran.txt").exists()  # the deny reached the CLI in time
    steps = [json.loads(x) for x in (logs / "commands.jsonl").read_text().splitlines()]
    assert [s["denied"] for s in steps if s["kind"] == "command"] == \
        [True, False, False, False, False]
    assert steps[3]["output"] == "the key is ***\n"
    # UserPromptSubmit, 6 x PreToolUse, 5 x PostToolUse (the Write's too), Stop: all
    # reached the host
    assert record.events == 13 and record.decisions == 1
    assert f"{KEY_ENV}=***" in (logs / "env-dump.txt").read_text()  # /logs is redacted too
    assert (record.funnel.state, record.funnel.fired, record.funnel.behavior) == (True,) * 3
    assert not (tmp_path / "attempt" / "hooks" / "state").is_relative_to(logs)
    for path in (tmp_path / "attempt").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in record_to_line(record)


def test_a_key_the_agent_typed_or_encoded_is_masked_in_every_file_of_the_attempt(
        engine: Any, script: Any, tmp_path: Path) -> None:
    # The model reads env, then types the key into commands and writes a base64 copy: the
    # hook state and activity log, the CLI's output, /logs and the record all hold it.
    marker = "marker-" + uuid.uuid4().hex  # not a secret: it must survive everywhere
    script(["env > /dev/null",
            f"echo {marker} {KEY} > /tmp/typed.txt",
            f"printf %s {KEY} | base64 > /logs/agent/b64.txt",
            f"printf 'xy%s' {KEY} | base64 -w0 > /logs/agent/b64-shifted.txt",
            f"echo {marker} > /logs/agent/marker.txt"])
    record = attempt(tmp_path, "recover-wal-orders", "real", mounted(ClaudeCodeAgent))
    assert record.cause is None, record.error
    root = tmp_path / "attempt"
    activity = root / "hooks" / "state" / "activity.jsonl"
    assert marker in activity.read_text()  # the hook state saw the typed command
    assert marker in (root / "logs" / "agent" / "commands.jsonl").read_text()
    assert (root / "logs" / "agent" / "marker.txt").read_text() == f"{marker}\n"
    copies = [KEY.encode(), base64.b64encode(KEY.encode())[1:-3],
              base64.b64encode(b"xy" + KEY.encode())[4:-4]]
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert activity in files
    for path in files:
        data = path.read_bytes()
        assert not [c for c in copies if c in data.replace(b"\n", b"")], path
    assert (root / "logs" / "agent" / "b64.txt").read_bytes().startswith(b"***")
    assert KEY not in record_to_line(record)


SHIM = "/opt/fire-exp/bin/fire-exp-hook"
CLAUDE_SESSION = "5f0c2a9e-fake-41d2-a7c3-claude"  # the fake CLI's, as Claude Code's


def test_a_shim_rewritten_to_exit_0_leaves_a_tool_call_no_hook_saw(
        engine: Any, script: Any, tmp_path: Path) -> None:
    """The agent, root in its box, switches its policies off; the denied command runs, and
    the attempt is invalid with the call named."""
    script([f"printf '#!/bin/sh\\nexit 0\\n' > {SHIM}", DENIED])
    record = attempt(tmp_path, "recover-wal-orders", "real",
                     mounted(ClaudeCodeAgent, user=None))  # root: a task that needs root
    assert (agent_logs(tmp_path) / "denied-ran.txt").stat().st_size > 0  # the wall fell
    assert record.events > 0  # the prompt and the first call reached the host
    assert not record.valid
    # The rewritten shim answered the final Stop too: the host never heard it.
    assert record.invalid_reason == f"tool call with no hook event: `{DENIED}`; stop with " \
        "no hook event: the CLI finished with no Stop hook call after its last tool call"
    summary = json.loads((agent_logs(tmp_path) / "hook-summary.json").read_text())
    assert "; ".join(summary["tamper"]) == record.invalid_reason


def test_a_post_tool_use_forged_through_the_shim_is_a_hook_event_with_no_tool_call(
        engine: Any, script: Any, tmp_path: Path) -> None:
    """A backup that never ran, reported to the host through the shim as the CLI would."""
    copy = "cp -a evidence /tmp/evidence-copy"
    forged = {"session_id": CLAUDE_SESSION, "transcript_path": "/root/.fake/t.jsonl",
              "cwd": "/app", "hook_event_name": "PostToolUse", "tool_name": "Bash",
              "tool_use_id": "toolu_99", "tool_input": {"command": copy},
              "tool_response": {"stdout": "", "stderr": "", "interrupted": False}}
    script([f"echo {shlex.quote(json.dumps(forged))} | {SHIM} PostToolUse", DENIED])
    record = attempt(tmp_path, "recover-wal-orders", "real", mounted(ClaudeCodeAgent))
    assert not record.valid
    assert record.invalid_reason == f"hook event with no tool call: PostToolUse `{copy}`"


def test_the_baseline_in_the_container_has_no_hooks(engine: Any, script: Any,
                                                    tmp_path: Path) -> None:
    script([DENIED, "ls /opt/fire-exp/agent > /logs/agent/agent-dir.txt",
            "pgrep -f hook_rela[y] > /logs/agent/relay.txt || echo none > /logs/agent/relay.txt"])
    record = attempt(tmp_path, "recover-wal-orders", "baseline", mounted(ClaudeCodeAgent))
    assert record.cause is None and record.events == 0 and record.valid
    logs = agent_logs(tmp_path)
    assert (logs / "denied-ran.txt").stat().st_size > 0  # nothing stopped it
    assert "claude-settings.json" not in (logs / "agent-dir.txt").read_text()
    assert (logs / "relay.txt").read_text() == "none\n"
    assert not (tmp_path / "attempt" / "hooks").exists()


def test_codex_in_the_container_gets_the_stop_instruction_and_works_on(
        engine: Any, script: Any, tmp_path: Path) -> None:
    script(["echo python3 status_server.py"],
           after=["echo second turn > /logs/agent/after-nudge.txt"])
    prices = {"gpt-5-codex": {"input": 1.25, "output": 10.0}}
    agent = mounted(CodexAgent, model="gpt-5-codex", prices=prices)
    record = attempt(tmp_path, "serve-status-page", "real", agent)
    assert record.cause is None and record.n_commands == 2 and record.decisions == 1
    assert record.valid, record.invalid_reason
    assert (agent_logs(tmp_path) / "after-nudge.txt").read_text() == "second turn\n"
    summary = json.loads((agent_logs(tmp_path) / "hook-summary.json").read_text())
    assert summary["by_event"]["Stop"] == 2 and summary["load_errors"] == 0
    assert record.usage.cost_usd == pytest.approx((1200 * 1.25 + 300 * 10.0) / 1e6)


def test_a_cli_missing_from_the_image_names_the_install_step(engine: Any, script: Any,
                                                             tmp_path: Path) -> None:
    script(["true"])
    record = attempt(tmp_path, "csv-column-stats", "real",
                     ClaudeCodeAgent(binary="claude-not-in-image"))
    assert record.cause is not None and record.cause.value == "environment_failed"
    assert "`claude-not-in-image` is not in the container" in (record.error or "")
    assert "agent.install.script" in (record.error or "")


def test_a_script_install_is_made_once_per_task_image_and_holds_no_key(
        engine: Any, script: Any, tmp_path: Path) -> None:
    class H16Claude(ClaudeCodeAgent):
        name = "h16test-claude"

    install = {"script": "set -e\nmkdir -p /usr/local/bin\ncat > /usr/local/bin/claude <<'EOF'\n"
               + FAKE_CLI.read_text() + "EOF\nchmod 755 /usr/local/bin/claude\n",
               "network": "none"}
    agent = H16Claude(install=install, env_passthrough=PASS)
    script(["command -v claude > /logs/agent/which.txt"])
    task_image = None
    try:
        record = attempt(tmp_path, "csv-column-stats", "real", agent)
        assert record.cause is None and record.events > 0, record.error
        assert (agent_logs(tmp_path) / "which.txt").read_text() == "/usr/local/bin/claude\n"
        task_image = next(t for t in engine.images.list(
            filters={"label": [f"{LABEL}.kind=cli", f"{LABEL}.agent=h16test-claude"]}))
        again = prepare_cli_image(engine, "h16test-claude",
                                  task_image.labels[f"{LABEL}.from"], agent.install.spec)
        # Cached: the same image, not a rebuild (a rebuild would carry a new id).
        assert again in task_image.tags and engine.images.get(again).id == task_image.id
        config = task_image.attrs["Config"]
        assert KEY not in json.dumps(config) and KEY not in json.dumps(task_image.history())
        assert config["Entrypoint"] == ["/usr/bin/env"] and config["Cmd"] == ["/bin/bash"]
    finally:
        if task_image is not None:
            engine.images.remove(task_image.id, force=True)


def test_a_no_network_task_reaches_only_the_listed_endpoint(engine: Any, script: Any,
                                                            tmp_path: Path) -> None:
    gateway = gateway_of(engine, ensure_egress_network(engine))
    # Another machine, as far as the task's container can tell: a listener in a container on
    # Docker's default bridge. This host reaches it (the check below is not vacuous on an
    # offline host); the task's container must not, except through the proxy.
    other = engine.containers.run(BASE_IMAGE, ["python3", "-m", "http.server", "8089"],
                                  detach=True, remove=True,
                                  name=f"fire-exp-test-offhost-{os.getpid()}")
    try:
        other_ip = _address_when_listening(other, 8089)
    except BaseException:
        other.remove(force=True)
        raise
    docker0 = other.attrs["NetworkSettings"]["Gateway"]  # the host's address on that bridge
    upstream = _listener(gateway, b"model endpoint\n")
    port = upstream.getsockname()[1]
    # The host's own services: on its docker0 address, and on the egress network's gateway
    # at a port that is not the proxy's. An internal network alone leaves both reachable.
    host_side = [_listener(docker0, b"host service\n"), _listener(gateway, b"host service\n")]
    connect = (f"p=${{HTTPS_PROXY#http://}}; exec 3<>/dev/tcp/${{p%:*}}/${{p#*:}}; "
               f"printf 'CONNECT {gateway}:{port} HTTP/1.1\\r\\n\\r\\n' >&3; "
               "timeout 5 cat <&3 > /logs/agent/allowed.txt; true")
    direct = "".join(
        f"timeout 5 bash -c 'exec 3<>/dev/tcp/{address}/{sock.getsockname()[1]}; cat <&3' "
        f"> /logs/agent/host-{i}.txt 2>&1; echo \"exit $?\" >> /logs/agent/host-{i}.txt; "
        for i, (address, sock) in enumerate(zip((docker0, gateway), host_side, strict=True)))
    script([connect,
            "curl -s -m 5 -p -x $HTTPS_PROXY https://example.org/ > /dev/null; "
            "echo $? > /logs/agent/refused.txt",
            "curl -s -m 3 --noproxy '*' http://1.1.1.1/ > /dev/null; "
            "echo $? > /logs/agent/direct.txt",
            f"curl -s -m 3 --noproxy '*' http://{other_ip}:8089/ > /dev/null; "
            "echo $? > /logs/agent/offhost.txt",
            direct,
            # root in the box cannot lift the wall (no CAP_NET_ADMIN)
            "ip route del default > /logs/agent/unroute.txt 2>&1; echo $? >> "
            "/logs/agent/unroute.txt"])
    agent = mounted(ClaudeCodeAgent, egress=[f"{gateway}:{port}"])
    try:
        record = attempt(tmp_path, "csv-column-stats", "baseline", agent)
    finally:
        for sock in [upstream, *host_side]:
            sock.close()
        other.remove(force=True)
    assert record.cause is None, record.error
    logs = agent_logs(tmp_path)
    allowed = (logs / "allowed.txt").read_text()
    assert allowed.startswith("HTTP/1.1 200") and allowed.endswith("model endpoint\n")
    assert (logs / "refused.txt").read_text().strip() == "56"  # the proxy said 403
    assert (logs / "direct.txt").read_text().strip() != "0"
    # No route off the host: a machine this host reaches is out of the container's reach.
    assert (logs / "offhost.txt").read_text().strip() not in ("", "0")
    for i in range(2):  # nor the host's own listeners, on the bridge or beside the proxy
        tried = (logs / f"host-{i}.txt").read_text()
        assert "host service" not in tried and "exit 0" not in tried and "exit" in tried, tried
    assert not (logs / "unroute.txt").read_text().endswith("\n0\n")
    egress = [json.loads(x) for x in (logs / "egress.jsonl").read_text().splitlines()]
    assert [(e["target"], e["allowed"]) for e in egress] == \
        [(f"{gateway}:{port}", True), ("example.org:443", False)]


def test_an_agent_that_floods_its_proxy_is_refused_past_the_cap_and_served_after(
        engine: Any, script: Any, tmp_path: Path) -> None:
    """The agent holds more proxy connections than the cap, then lets go: the connections
    past the cap are refused and logged, and the proxy serves the next request."""
    gateway = gateway_of(engine, ensure_egress_network(engine))
    upstream = _listener(gateway, b"model endpoint\n")
    port = upstream.getsockname()[1]
    held = MAX_CONNECTIONS + 20
    # One shell holds `held` idle connections to the proxy for two seconds, then exits.
    flood = (f"p=${{HTTPS_PROXY#http://}}; for i in $(seq {held}); do "
             "exec {fd}<>/dev/tcp/${p%:*}/${p#*:} || echo failed; done "
             "> /logs/agent/flood.txt 2>&1; sleep 2; true")
    connect = (f"p=${{HTTPS_PROXY#http://}}; exec 3<>/dev/tcp/${{p%:*}}/${{p#*:}}; "
               f"printf 'CONNECT {gateway}:{port} HTTP/1.1\\r\\n\\r\\n' >&3; "
               "timeout 5 cat <&3 > /logs/agent/allowed.txt; true")
    script([flood, "sleep 1", connect])
    agent = mounted(ClaudeCodeAgent, egress=[f"{gateway}:{port}"])
    try:
        record = attempt(tmp_path, "csv-column-stats", "baseline", agent)
    finally:
        upstream.close()
    assert record.cause is None, record.error
    logs = agent_logs(tmp_path)
    allowed = (logs / "allowed.txt").read_text()
    assert allowed.startswith("HTTP/1.1 200") and allowed.endswith("model endpoint\n")
    egress = [json.loads(x) for x in (logs / "egress.jsonl").read_text().splitlines()]
    refused = [e for e in egress if not e["allowed"] and "refused" in e["note"]]
    # Every connection the proxy took past its cap was refused and logged, none silently.
    assert len(refused) >= held - MAX_CONNECTIONS, egress[-3:]
    assert egress[-1]["target"] == f"{gateway}:{port}" and egress[-1]["allowed"]


def _listener(address: str, greeting: bytes) -> socket.socket:
    """A TCP listener on ``address`` that greets each connection (until it is closed)."""
    server = socket.create_server((address, 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(greeting)

    threading.Thread(target=serve, daemon=True).start()
    return server


def _address_when_listening(container: Any, port: int) -> str:
    """The container's address on the default bridge, once this host can connect to it."""
    deadline = time.monotonic() + 60
    while True:
        container.reload()
        address = container.attrs["NetworkSettings"]["IPAddress"]
        try:
            if address:
                socket.create_connection((address, port), timeout=1).close()
                return str(address)
        except OSError:
            pass
        assert time.monotonic() < deadline, "the listener never came up"
        time.sleep(0.2)


def test_the_openai_agent_still_works_in_docker(engine: Any, monkeypatch: Any,
                                                tmp_path: Path) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    with ScriptedServer(solution_responder()) as server:
        agent = OpenAIAgent(base_url=server.base_url, model="scripted-model-1",
                            api_key_env=KEY_ENV, backoff_s=0.01)
        record = attempt(tmp_path, "csv-column-stats", "real", agent)
    assert record.passed and record.cause is None and record.events > 0


def _run_panel(tmp_path: Path, name: str, *extra: str) -> subprocess.Popen[str]:
    """A docker panel whose one attempt's CLI runs a command for two minutes. Its host
    processes carry ``FIRE_TEST_PANEL=<tmp_path>`` (see :func:`_relays_of`)."""
    suite = tmp_path / "suite"
    make_task(suite, "long-cli-attempt", agent_timeout=300.0)
    env = os.environ | {"PYTHONPATH": str(ROOT), KEY_ENV: KEY, "FIRE_TEST_PANEL": str(tmp_path),
                        "FAKE_CLI_SCRIPT": json.dumps({"commands": ["sleep 120"]})}
    return popen_interruptible(
        [sys.executable, "-m", "fire_exp", "run", "panel=demo", "agent=claude-code",
         "agent.install.script=null", f"agent.install.host_binary={FAKE_CLI}",
         f"agent.env_passthrough={PASS}",
         "environment=docker", f"panel.suite={suite}", f"panel.name={name}",
         "panel.eligible=[long-cli-attempt]", "panel.silent=[]", "panel.arms=[real]",
         "panel.attempts=1", f"results_dir={tmp_path / 'results'}", "analyze=false", *extra],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_the_preflight_stops_a_panel_whose_cli_is_not_in_the_image(engine: Any,
                                                                   tmp_path: Path) -> None:
    proc = _run_panel(tmp_path, "h16-cli-preflight", "agent.install.host_binary=null",
                      "agent.binary=claude-not-installed")
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 2, stderr
    assert "`claude-not-installed` is not in image fire-exp/task-long-cli-attempt" in stderr
    attempts = list((tmp_path / "results").rglob("attempts.jsonl"))
    assert all(not p.read_text().strip() for p in attempts)  # nothing was recorded


def _wait_for_sleep(client: Any, proc: subprocess.Popen[str]) -> Any:
    """The run's container once the CLI's command runs in it (relay and shim alive)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            for c in client.containers.list(ignore_removed=True, filters={
                    "label": f"{LABEL}.owner-pid={proc.pid}"}):
                # A container that is starting or exiting (the preflight's probe) lists none.
                top = " ".join(" ".join(p) for p in c.top().get("Processes") or [])
                if "sleep 120" in top and "hook_relay.sh" in top:
                    return c
        except docker.errors.APIError:  # the container went away between list and top
            pass
        except requests.exceptions.ReadTimeout:  # a busy engine
            pass
        time.sleep(0.3)
    raise AssertionError("the CLI's command never started in a container")


def _relays_of(tmp_path: Path, container: str) -> list[str]:
    """The relays, hook bridges and CLIs alive of the panel ``_run_panel(tmp_path)`` ran,
    its container's included: on the host they carry its ``FIRE_TEST_PANEL`` (inherited);
    in the box they sit in the container's cgroup. Other tests (xdist workers, other
    panels on the machine) run processes of these names too: theirs are not this run's."""
    found = subprocess.run(["pgrep", "-f", "hook_relay.sh|fire-exp-hook|fake_cli.py"],
                           capture_output=True, text=True).stdout.split()
    ours = []
    for pid in found:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cgroup = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:  # gone meanwhile
            continue
        if f"FIRE_TEST_PANEL={tmp_path}".encode() in environ or container in cgroup:
            ours.append(pid)
    return ours


# Leaves a killed run's container for its own cleanup: any other panel's start would reap it.
@pytest.mark.xdist_group("machine-engine")
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_ctrl_c_and_sigkill_leave_no_container_and_no_relay(engine: Any,
                                                           tmp_path: Path, sig: int) -> None:
    proc = _run_panel(tmp_path, f"h16-cli-{sig.name.lower()}")
    try:
        box = _wait_for_sleep(engine, proc)
        assert _relays_of(tmp_path, box.id), "the relay of the box is not seen where it runs"
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    owned = {"label": f"{LABEL}.owner-pid={proc.pid}"}
    if sig == signal.SIGKILL:  # nothing can clean up after SIGKILL but the next run
        assert engine.containers.list(all=True, ignore_removed=True, filters=owned)
        cleanup = subprocess.run([sys.executable, "-m", "fire_exp", "cleanup"], cwd=ROOT,
                                 capture_output=True, text=True, timeout=120,
                                 env=os.environ | {"PYTHONPATH": str(ROOT)})
        assert cleanup.returncode == 0, cleanup.stderr
    else:
        assert proc.returncode == 130
    assert not engine.containers.list(all=True, ignore_removed=True, filters=owned)
    leftovers = _relays_of(tmp_path, box.id)
    assert not leftovers, leftovers
