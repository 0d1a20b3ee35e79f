"""agent=claude-code and agent=codex: hooks exported, the CLI run, its output read back.

The real CLIs are not installed here; tests/agents/fake_cli.py stands in for both. It runs
the exported hook commands with the documented payloads, so the bridge, the activity log
and the read-back are exercised for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fire_exp.agents.coding_agents import (
    ClaudeCodeAgent,
    CodexAgent,
    bridge_target,
    parse_claude_stream,
    parse_codex_json,
)
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.local import LocalEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import ARMS, Event, PolicyRuntime, build_arm, load_portfolio
from fire_exp.policies.hooks import load_arm_families
from fire_exp.records import Cause, record_to_line
from fire_exp.runner.attempt import AttemptSpec
from tests.agents.agent_support import FAKE_KEY, KEY_ENV, RunFn
from tests.ci import missing

LOCAL = LocalEnvironment.capabilities  # the box is this machine: its PATH's CLI runs
BOX = DockerEnvironment.capabilities  # a container: the image's CLI, or a mounted one

FAKE = Path(__file__).with_name("fake_cli.py")
ROOT = Path(__file__).resolve().parents[2]
PASS = ["FAKE_CLI_SCRIPT", "FAKE_CLI_NO_HOOKS", KEY_ENV]


def script(monkeypatch: pytest.MonkeyPatch, commands: list[str], after: list[str] = (),
           **extra: object) -> None:
    monkeypatch.setenv("FAKE_CLI_SCRIPT", json.dumps(
        {"commands": commands, "after_nudge": list(after)} | extra))


def attempt_logs(tmp_path: Path) -> Path:
    return tmp_path / "attempt" / "logs" / "agent"


@pytest.mark.parametrize("agent_cls,binary", [(ClaudeCodeAgent, "claude"), (CodexAgent, "codex")])
def test_a_missing_cli_fails_the_environment_and_names_the_binary(agent_cls, binary: str,
                                                                  run_task: RunFn) -> None:
    agent = agent_cls(binary=f"{binary}-not-installed-here")
    record = run_task("csv-column-stats", "real", agent)
    assert record.cause is Cause.ENVIRONMENT_FAILED and record.reward is None
    assert f"`{binary}-not-installed-here` executable was not found" in record.error
    assert "pip install 'fire-exp[" in record.error and "agent.binary=" in record.error


def test_claude_code_runs_with_hooks_and_is_read_back(monkeypatch, fake_key, run_task: RunFn,
                                                      tmp_path: Path) -> None:
    task = SUITES_DIR / "fire-mini" / "recover-wal-orders"
    solve = (task / "solution" / "solve.sh").read_text().replace("/tmp/evidence-copy",
                                                                 "../evidence-copy")
    script(monkeypatch, ["sqlite3 evidence/orders.db .dump", solve,
                         f"echo the key is ${KEY_ENV}"])  # the CLI's env has the key
    agent = ClaudeCodeAgent(binary=str(FAKE), env_passthrough=PASS)
    record = run_task("recover-wal-orders", "real", agent)
    assert record.passed and record.cause is None and record.error is None
    assert record.valid, record.invalid_reason  # the transcript and the hooks agree
    # UserPromptSubmit, 3 x PreToolUse, 2 x PostToolUse (the denied one never ran), Stop
    assert record.events == 7 and record.decisions == 1 and record.funnel.fired
    steps = [json.loads(x) for x in (attempt_logs(tmp_path) / "commands.jsonl").read_text()
             .splitlines()]
    assert [(s["kind"], s["denied"]) for s in steps] == \
        [("command", True), ("command", False), ("command", False), ("stop", False)]
    assert steps[2]["output"] == "the key is ***"  # Claude Code 2.1 drops the last newline
    usage = record.usage
    assert (usage.input_tokens, usage.output_tokens) == (1150, 250)
    assert usage.cost_usd == pytest.approx(0.0123) and usage.model == "claude-fake-1"
    events = [json.loads(x) for x in (attempt_logs(tmp_path) / "policy-events.jsonl")
              .read_text().splitlines()]
    assert [(e["family"], e["decision"]) for e in events] == [("database_evidence", "deny")]
    settings = json.loads((tmp_path / "attempt" / "hooks" / "claude-settings.json").read_text())
    assert set(settings["hooks"]) == {"UserPromptSubmit", "PreToolUse", "PostToolUse",
                                      "PostToolUseFailure", "Stop"}
    for path in (tmp_path / "attempt").rglob("*"):
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), path
    assert FAKE_KEY not in record_to_line(record)


def test_codex_gets_the_stop_instruction_and_works_on(monkeypatch, run_task: RunFn,
                                                      tmp_path: Path) -> None:
    script(monkeypatch, ["echo python3 status_server.py"], after=["echo probing again"])
    prices = {"gpt-5-codex": {"input": 1.25, "output": 10.0}}
    agent = CodexAgent(binary=str(FAKE), model="gpt-5-codex", prices=prices,
                       env_passthrough=PASS)
    record = run_task("serve-status-page", "real", agent)
    assert record.cause is None and record.n_commands == 2
    assert record.valid, record.invalid_reason
    assert record.decisions == 1 and record.funnel.fired
    summary = json.loads((attempt_logs(tmp_path) / "hook-summary.json").read_text())
    assert summary["by_event"]["Stop"] == 2 and summary["load_errors"] == 0
    assert record.usage.cost_usd == pytest.approx((1200 * 1.25 + 300 * 10.0) / 1e6)
    assert (tmp_path / "attempt" / "hooks" / "codex-home" / "hooks.json").is_file()


def test_the_baseline_has_no_hook_configuration(monkeypatch, run_task: RunFn,
                                                tmp_path: Path) -> None:
    script(monkeypatch, ["true"])
    record = run_task("csv-column-stats", "baseline",
                      ClaudeCodeAgent(binary=str(FAKE), env_passthrough=PASS))
    assert record.cause is None and record.events == 0 and record.error is None
    assert not (tmp_path / "attempt" / "hooks" / "claude-settings.json").exists()


def test_hooks_that_never_ran_are_reported(monkeypatch, run_task: RunFn) -> None:
    monkeypatch.setenv("FAKE_CLI_NO_HOOKS", "1")  # as Codex does with untrusted hooks
    script(monkeypatch, ["true"])
    record = run_task("csv-column-stats", "always_verify",
                      CodexAgent(binary=str(FAKE), env_passthrough=PASS))
    assert record.events == 0 and record.n_commands == 1
    assert record.error == "hooks never ran: no PreToolUse hook event in a policy arm"
    assert not record.valid
    assert record.invalid_reason == ("policy runtime saw no events; "
                                     "tool call with no hook event: `true`; stop with no "
                                     "hook event: the CLI finished with no Stop hook call "
                                     "after its last tool call")


def test_a_cli_that_fails_before_acting_is_a_provider_failure(monkeypatch,
                                                              run_task: RunFn) -> None:
    script(monkeypatch, [], exit=3)
    record = run_task("csv-column-stats", "real",
                      ClaudeCodeAgent(binary=str(FAKE), env_passthrough=PASS))
    assert record.cause is Cause.PROVIDER_FAILED
    assert "exited 3" in record.error and "authentication failed" in record.error


def test_bridge_target_reproduces_every_arm() -> None:
    real, controls = load_portfolio("fire-core"), load_portfolio("controls")
    targets = {arm: bridge_target(AttemptSpec(
        "r", "p", f"t/{arm}/r0", "t", "eligible", arm, 0, 0, 0, portfolio=str(real.path),
        controls=str(controls.path)).context()) for arm in ARMS}
    assert targets["baseline"] is None
    for arm in ("real", "sham", "always_verify", "reconsider"):
        target = targets[arm]
        assert (target.portfolio, target.arm, target.controls) == (
            str(real.path), arm, str(controls.path))
        rebuilt = load_arm_families(target.portfolio, arm, target.controls)
        runner = build_arm(arm, real, controls).families
        assert _answers(rebuilt) == _answers(runner), arm
    # The answers tell the arms apart, so a bridge that rebuilt another arm would fail above.
    answers = {arm: _answers(build_arm(arm, real, controls).families)
               for arm in ("real", "sham", "always_verify", "reconsider")}
    assert len({json.dumps(a) for a in answers.values()}) == 4
    assert any(kind == "deny" for kind, _ in answers["real"])


def _answers(families) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """What an agent receives from ``families`` on a session that arms the database family:
    an open of the evidence before a copy, then a stop."""
    text = (SUITES_DIR / "fire-mini" / "recover-wal-orders" / "instruction.md").read_text()
    runtime = PolicyRuntime(families, text)
    events = [Event("SessionStart", text),
              Event("PreToolUse", text, command="sqlite3 evidence/orders.db .dump", step=1),
              Event("PreToolUse", text, command="python3 recover.py", step=2),
              Event("Stop", text, step=2)]
    return [(d.kind, d.text) for d in map(runtime.handle, events)]


def test_parsers_skip_noise_and_report_failures() -> None:
    claude = parse_claude_stream([
        "Welcome banner", '{"type": "system", "subtype": "init", "model": "m1"}',
        '{"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "a",'
        ' "name": "Bash", "input": {"command": "ls"}}, {"type": "text", "text": "hi"}]}}',
        '{"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "a",'
        ' "content": [{"type": "text", "text": "x"}], "is_error": true}]}}',
        '{"type": "result", "is_error": true, "result": "max turns", "usage": {}}'])
    assert claude.model == "m1" and claude.errors == ["max turns"]
    assert [(c.command, c.output, c.exit_code) for c in claude.commands] == [("ls", "x", 1)]
    codex = parse_codex_json(['{"type": "turn.failed", "error": {"message": "quota"}}', "{bad"])
    assert codex.errors == ["quota"] and not codex.commands


# --- preflight (issue 11, point 2: the agent side) ----------------------------------------

def test_preflight_reads_the_cli_version() -> None:
    agent = CodexAgent(binary=str(FAKE), model="m", prices={"m": {"input": 1.0, "output": 1.0}})
    agent.preflight(LOCAL)
    assert agent.version.startswith("fake-cli")


@pytest.mark.parametrize("agent_class", [ClaudeCodeAgent, CodexAgent])
def test_preflight_without_the_cli_says_how_to_install_it(agent_class: type,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    from fire_exp.agents.coding_agents import packaged
    from fire_exp.errors import PreflightError

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(packaged, "WHEELS", {})  # as on a machine without the extra
    with pytest.raises(PreflightError,
                       match=r"not found on PATH \(install it \(pip install 'fire-exp\["):
        agent_class().preflight(LOCAL)


@pytest.mark.parametrize("agent_class,package", [(ClaudeCodeAgent, "claude_agent_sdk"),
                                                 (CodexAgent, "codex_cli_bin")])
def test_with_no_binary_setting_the_agent_finds_the_installed_wheels_cli(
        agent_class: type, package: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    from fire_exp.agents.coding_agents.packaged import wheel_binary

    found = wheel_binary(agent_class.name)
    if found is None:
        missing(f"the {package} wheel (pip install 'fire-exp[{agent_class.name}]')")
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: the wheel alone
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))  # no user config: the model priced here
    agent = agent_class(model="m", prices={"m": {"input": 1.0, "output": 1.0}})
    assert agent.binary == found and f"/{package}/" in found
    assert agent.install.spec.host_binary == found  # and Docker mounts that same file
    agent.preflight(LOCAL)
    assert agent.version.split()[0] in ("codex-cli", "2.1.332")


def test_a_run_without_codex_on_path_refuses_to_start(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    proc = subprocess.run(
        [sys.executable, "-m", "fire_exp", "run", "panel=demo", "agent=codex",
         "agent.binary=codex", f"results_dir={tmp_path / 'results'}"],
        capture_output=True, text=True, cwd=ROOT,
        timeout=300, env=os.environ | {"PATH": str(bin_dir), "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "fire-exp run: error: agent=codex: the `codex` executable was not found on PATH")
    assert "pip install 'fire-exp[codex]'" in proc.stderr
    assert not (tmp_path / "results").exists()  # nothing was recorded


def test_codex_cost_uses_the_configured_model_and_the_cached_rate(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.agents.protocol_fixtures import lines

    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text('model = "gpt-5.1-codex"\n[features]\nhooks = true\n')
    monkeypatch.setenv("CODEX_HOME", str(home))
    prices = {"gpt-5.1-codex": {"input": 1.25, "cached_input": 0.125, "output": 10.0}}
    agent = CodexAgent(prices=prices)
    transcript = parse_codex_json(lines("codex-exec-json-docs__command-file-change-usage.jsonl"))
    usage = agent.usage(transcript)
    assert usage.model == "gpt-5.1-codex" and usage.cached_input_tokens == 24448
    expected = ((24763 - 24448) * 1.25 + 24448 * 0.125 + 122 * 10.0) / 1e6
    assert usage.cost_usd == pytest.approx(expected) and usage.cost_usd > 0


def test_the_binary_frozen_is_the_one_the_boxes_run(tmp_path: Path) -> None:
    """The preregistration's binary: this machine's for environment=local, the mounted one
    in Docker, none where the image's own binary runs (its image names it)."""
    from fire_exp.agents.coding_agents.packaged import binary_sha256

    local = CodexAgent(binary=str(FAKE))
    found = local.binary_identity(LOCAL)
    assert found is not None and found.sha256 == binary_sha256(str(FAKE))
    assert found.version.startswith("fake-cli") and found.path == str(FAKE.resolve())
    assert local.binary_identity(BOX) is None  # the image's `binary` runs there
    mounted = CodexAgent(binary="codex", install={"host_binary": str(FAKE)})
    assert mounted.binary_identity(BOX) == found


def test_codex_on_its_vendor_with_an_unpriced_model_is_refused_before_the_panel(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Codex reports tokens, not cost: on the vendor's endpoint a model without a price would
    record a cost of 0 for billed tokens, so preflight refuses it, naming the setting; a
    priced model, or a model served at ``base_url`` (a local one, 0 by right), passes."""
    from fire_exp.errors import PreflightError

    monkeypatch.setenv("CODEX_HOME", str(tmp_path))  # no config.toml: no default model
    with pytest.raises(PreflightError, match=r"model gpt-5\.5 on the vendor's endpoint has no "
                       r"price in agent\.prices") as refused:
        CodexAgent(binary=str(FAKE), model="gpt-5.5").preflight(BOX)
    assert "'+agent.prices.gpt-5.5={input:1.25," in refused.value.how_to_fix
    with pytest.raises(PreflightError, match=r"model \(the CLI default\)"):
        CodexAgent(binary=str(FAKE)).preflight(BOX)
    priced = {"gpt-5.5": {"input": 1.25, "output": 10.0}}
    CodexAgent(binary=str(FAKE), model="gpt-5.5", prices=priced).preflight(BOX)
    assert ClaudeCodeAgent(binary=str(FAKE)).dialect.reports_cost  # its own cost, on its vendor


@pytest.mark.parametrize("agent_class", [ClaudeCodeAgent, CodexAgent])
def test_an_install_step_runs_the_cli_by_its_name_on_the_images_path(
        agent_class: type) -> None:
    """An install script or image puts the CLI on the image's PATH: the box runs it by its
    usual name, not by this machine's wheel path (which the image does not have), unless
    ``agent.binary`` names another."""
    name = agent_class.dialect.default_binary
    scripted = agent_class(install={"script": "true"})
    assert scripted.install.binary == name and scripted.install.spec.host_binary is None
    imaged = agent_class(install={"image": "some/cli:1", "paths": ["/usr/local/bin"]})
    assert imaged.install.binary == name
    assert agent_class(binary="/opt/x/cli", install={"script": "true"}).install.binary == \
        "/opt/x/cli"
