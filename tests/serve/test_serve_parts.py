"""fire_exp.serve without a model: joining and pinning weights, the CLIs' lean switches as
Hydra overrides, the printed settings, and the refusals (no binary, unknown model)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from hydra import compose, initialize_config_dir

from fire_exp.errors import InputError, PreflightError
from fire_exp.paths import CONFIG_DIR
from fire_exp.runner.prereg import served_model_items
from fire_exp.serve.cli_turn import read_turn
from fire_exp.serve.lean import LEAN_SETTINGS, lean_args, lean_override, lean_overrides
from fire_exp.serve.models import MODELS, QWEN_CODER_05B, ServedModel, gguf_path, model_named
from fire_exp.serve.server import Endpoint, LlamaServer, server_binary


def _model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sha: str | None = None,
           chunks: tuple[bytes, ...] = (b"GGUF-part-one|", b"part-two")) -> ServedModel:
    """A model of two parts in two importable packages under ``tmp_path``."""
    site = tmp_path / "site"
    for i, chunk in enumerate(chunks, 1):
        package = site / f"fake_weights_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("FIRE_MODEL_CACHE", str(tmp_path / "cache"))
    return ServedModel(
        name="fake", title="a fake", license="none",
        parts=tuple((f"fake_weights_part{i}", f"data/part{i}.bin") for i in (1, 2)),
        packages=("fake-weights-part1", "fake-weights-part2"),
        sha256=sha or hashlib.sha256(b"".join(chunks)).hexdigest(), context=1024)


def test_the_parts_are_joined_in_order_once_and_checked(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(tmp_path, monkeypatch)
    path = gguf_path(model)
    assert path.read_bytes() == b"GGUF-part-one|part-two"
    assert path == tmp_path / "cache" / "fake.gguf"
    path.write_bytes(b"tampered")  # a changed file is refused, naming both hashes
    with pytest.raises(PreflightError, match=r"fake\.gguf: sha256 .* pinned at"):
        gguf_path(model)


def test_a_model_whose_parts_differ_from_the_pin_is_refused(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(tmp_path, monkeypatch, sha="0" * 64)
    with pytest.raises(PreflightError, match="pinned at 0000"):
        gguf_path(model)


def test_a_missing_part_names_the_package_and_the_install_step(tmp_path: Path) -> None:
    model = ServedModel(name="absent", title="", license="", parts=(("no_such_pkg_x", "a"),),
                        packages=("no-such-pkg-x==1",), sha256="0" * 64, context=1)
    with pytest.raises(PreflightError, match=r"no_such_pkg_x is not installed.*\.ci/llama-server"):
        gguf_path(model)


def test_an_unknown_model_is_refused_listing_the_known() -> None:
    with pytest.raises(InputError, match="qwen2.5-coder-0.5b"):
        model_named("gpt-99")


def test_no_server_binary_is_refused_with_the_build_step(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRE_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("FIRE_WHEEL_CACHE", str(tmp_path))
    with pytest.raises(PreflightError, match=r"no llama-server binary.*\.ci/llama-server"):
        server_binary()


def test_each_cli_gets_the_base_url_it_appends_its_path_to() -> None:
    endpoint = Endpoint("127.0.0.1", 8123, "m")
    assert endpoint.overrides("codex") == \
        "agent=codex agent.base_url=http://127.0.0.1:8123/v1 agent.model=m"
    assert endpoint.overrides("claude-code") == \
        "agent=claude-code agent.base_url=http://127.0.0.1:8123 agent.model=m"


@pytest.mark.parametrize("agent", ["codex", "claude-code"])
def test_the_printed_lean_override_composes_to_the_lean_args(agent: str) -> None:
    overrides = shlex.split(lean_override(agent))  # as the shell hands them to fire-exp run
    assert overrides == lean_overrides(agent)
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"agent={agent}", *overrides])
    args = list(cfg.agent.args)
    assert args == lean_args(agent)
    assert {k: cfg.agent[k] for k in LEAN_SETTINGS[agent]} == LEAN_SETTINGS[agent]
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        stock = list(compose(config_name="config", overrides=[f"agent={agent}"]).agent.args)
    assert args[:len(stock)] == stock and len(args) > len(stock)  # extends, keeps the hooks'


def _fake_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """A stand-in ``llama-server`` (a shell script of ``body``) where fire-exp looks first."""
    fake = tmp_path / "llama-server"
    fake.write_text(f"#!/bin/sh\n{body}")
    fake.chmod(0o755)
    monkeypatch.setenv("FIRE_LLAMA_SERVER", str(fake))


def test_a_server_that_exits_at_once_is_reported_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_server(tmp_path, monkeypatch, "echo 'error: cannot load model' >&2\nexit 3\n")
    model = _model(tmp_path, monkeypatch)
    server = LlamaServer(model, log=tmp_path / "server.log")
    with pytest.raises(PreflightError, match="exited with status 3.*cannot load model"):
        server.start()
    assert server.proc is None


def test_each_slot_gets_the_whole_context(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_server(tmp_path, monkeypatch, "")
    model = _model(tmp_path, monkeypatch)

    def flag(command: list[str], name: str) -> str:
        return command[command.index(name) + 1]
    one, two = LlamaServer(model, context=4096).command(), \
        LlamaServer(model, context=4096, slots=2).command()
    assert (flag(one, "--parallel"), flag(one, "--ctx-size")) == ("1", "4096")
    assert (flag(two, "--parallel"), flag(two, "--ctx-size")) == ("2", "8192")


def test_a_model_with_a_template_of_its_own_is_served_and_frozen_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_server(tmp_path, monkeypatch, "")
    plain = _model(tmp_path, monkeypatch)
    assert "--chat-template-file" not in LlamaServer(plain).command()  # the GGUF's own
    model = replace(plain, chat_template=QWEN_CODER_05B.chat_template)
    command = LlamaServer(model).command()
    template = Path(command[command.index("--chat-template-file") + 1])
    assert template == QWEN_CODER_05B.template_path() and template.is_file()
    assert "--jinja" in command
    panel = SimpleNamespace(config=SimpleNamespace(agent=SimpleNamespace(params={"model": "fake"})),
                            arm_agents={})
    monkeypatch.setitem(MODELS, "fake", model)
    items = served_model_items(panel)  # type: ignore[arg-type]
    assert items["served_model:fake"]["sha256"] == model.sha256
    assert items["served_model:fake:chat_template"] == {
        "path": str(template), "sha256": hashlib.sha256(template.read_bytes()).hexdigest()}
    monkeypatch.setitem(MODELS, "fake", plain)
    assert set(served_model_items(panel)) == {"served_model:fake"}  # type: ignore[arg-type]


def test_a_claude_turn_ended_by_its_own_max_turns_is_not_a_wire_failure() -> None:
    """Claude Code 2.1.332 at ``--max-turns`` (seen against the scripted Messages server):
    exit 1 and a result event ``subtype: error_max_turns, is_error: true``. The turn's bound
    is the CLI's own; any other error result still fails the turn."""
    result = {"type": "result", "subtype": "error_max_turns", "is_error": True,
              "num_turns": 2, "usage": {"input_tokens": 40, "output_tokens": 7}}
    call = {"type": "assistant", "message": {"content": [
        {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]}}
    turn = read_turn("claude-code", [json.dumps(call), json.dumps(result)])
    turn.returncode = 1
    assert turn.max_turns_reached and turn.ok and turn.commands and turn.output_tokens == 7
    failed = read_turn("claude-code", [json.dumps(result | {"subtype": "error_during_execution"})])
    failed.returncode = 1
    assert not failed.max_turns_reached and not failed.ok


def test_a_niced_server_runs_at_that_niceness_under_its_own_pid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The stand-in writes its pid, process group and niceness, then exits: `nice` execs
    # the server, so the group fire-exp stops is led by the server itself.
    _fake_server(tmp_path, monkeypatch,
                 f"echo $$ $(cut -d' ' -f5,19 /proc/$$/stat) > {tmp_path}/seen\nexit 3\n")
    model = _model(tmp_path, monkeypatch)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    server = LlamaServer(model, log=tmp_path / "server.log", nice=3)
    with pytest.raises(PreflightError, match="exited with status 3"):
        server.start()
    pid, group, niceness = (tmp_path / "seen").read_text().split()
    assert pid == group and int(niceness) == min(base + 3, 19)
    plain = LlamaServer(model).command()
    assert plain[0].endswith("llama-server") and "nice" not in plain
