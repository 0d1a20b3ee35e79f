"""`fire-exp serve-model` for real (issue 35): llama.cpp's own llama-server (built by
.ci/llama-server) serving Qwen2.5-Coder-0.5B, spoken to in each protocol the real CLIs use,
then by the real binaries themselves (Codex 0.163 from openai-codex-cli-bin, Claude Code
2.1 from claude-agent-sdk), on this machine.

The model is small and its answers are its own; what is tested is the wire: every request
answered in its protocol's stream shape (with the CLIs' tools offered), no retry, no
failed turn, tokens counted, and no server left behind when the command is interrupted.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fire_exp.serve.models import DEFAULT
from fire_exp.serve.probe import messages_probe, responses_probe
from tests.serve.server_support import gone, need_model
from tests.signals import popen_interruptible

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.cli]
ROOT = Path(__file__).resolve().parents[2]


def test_serve_model_answers_both_protocols_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    need_model()
    proc = popen_interruptible(
        [sys.executable, "-m", "fire_exp", "serve-model", "--threads", "2",
         "--log", str(tmp_path / "server.log")],
        cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        banner = []
        for line in proc.stdout:
            banner.append(line)
            if line.startswith("Ctrl-C"):
                break
        text = "".join(banner)
        pid = int(re.search(r"llama-server pid (\d+)", text).group(1))  # type: ignore[union-attr]
        codex_url = re.search(r"agent=codex agent\.base_url=(\S+) agent\.model=(\S+)", text)
        claude_url = re.search(r"agent=claude-code agent\.base_url=(\S+) agent\.model=(\S+)",
                               text)
        assert codex_url and claude_url, text
        assert codex_url.group(1).endswith("/v1") and codex_url.group(2) == DEFAULT
        root = claude_url.group(1)
        assert codex_url.group(1) == f"{root}/v1"
        # Codex's shape: developer message, a function and a custom tool, streamed.
        answer = responses_probe(root, DEFAULT, "List the files here.", max_tokens=48,
                                 force_tool=True)
        assert answer.status == 200 and answer.error is None, answer
        assert answer.events[0] == "response.created" and \
            answer.events[-1] == "response.completed", answer.events
        # A tool call is the model's choice: a fenced json call (the served template's form)
        # comes back as a function_call naming a tool it was offered, anything else as
        # text. The custom tool was dropped, not refused.
        assert {c["name"] for c in answer.tool_calls} <= {"exec_command"}, answer
        assert answer.text or answer.tool_calls
        assert answer.input_tokens > 0 and answer.output_tokens > 0
        # Claude Code's shape: system as a list of parts, a system message mid-conversation.
        reply = messages_probe(root, DEFAULT, "List the files here.", max_tokens=48,
                               force_tool=True)
        assert reply.status == 200 and reply.error is None, reply
        assert reply.events[0] == "message_start" and reply.events[-1] == "message_stop"
        assert {c["name"] for c in reply.tool_calls} <= {"Bash"}, reply
        assert reply.text or reply.tool_calls
        assert reply.input_tokens > 0 and reply.output_tokens > 0
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # deaf to Ctrl-C: stop it (and its server) anyway
            proc.terminate()
            proc.communicate(timeout=60)
            raise
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert gone(pid), f"llama-server {pid} outlived serve-model"
