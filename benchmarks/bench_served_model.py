"""The served model on this machine (run: ``python -m benchmarks.bench_served_model``).

Starts ``fire-exp serve-model``'s server (llama.cpp's llama-server, Qwen2.5-Coder-0.5B,
``--threads`` CPU threads) and measures:

- prompt processing and generation speed (tokens/s, from the server's own timings) on a
  prompt the size of a CLI's first request (``--prompt-tokens``, ~10k: Codex 0.163's stock
  request; Claude Code 2.1's is ~12k), prefix cache off;
- one streamed request per protocol as each CLI shapes it (Responses, Messages), with a
  forced tool call: seconds, tokens in/out, protocol errors (a non-200 answer, an error
  event, a stream that does not end in its closing event);
- one real turn of each CLI binary with the lean switches (``--stock`` adds one with the
  CLIs' stock prompts): seconds, tokens in/out, commands the model ran, protocol errors;
- ``--panel AGENT`` (``codex``, ``claude-code``; repeatable): the real panel of
  ``tests/serve/served_panel.py`` — the CLI in Docker, two bundled tasks, the real and the
  baseline arm, one attempt each — and per attempt: agent seconds, tokens in/out, the
  model's calls and commands that ran, protocol errors, the record's cause and error;
  ``--check`` asserts what issue 35 asks of the records (``served_panel.check_panel``).

Needs ``.ci/llama-server`` (server and model) and the CLIs' wheels.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from fire_exp.serve.cli_turn import CliTurn, run_turn
from fire_exp.serve.models import DEFAULT, model_named
from fire_exp.serve.probe import ProbeResult, messages_probe, responses_probe
from fire_exp.serve.server import Endpoint, LlamaServer

_CLOSING = {"responses": "response.completed", "messages": "message_stop"}


def prompt_speed(endpoint: Endpoint, tokens: int) -> dict[str, Any]:
    """The server's timings for one long prompt (``tokens`` approximate) and 32 new tokens."""
    filler = " ".join(f"line {i}: the quick brown fox jumps over the lazy dog." for i in
                      range(tokens // 14))
    body = {"model": endpoint.model, "max_tokens": 32, "cache_prompt": False,
            "messages": [{"role": "user", "content": filler + "\nSummarise in one line."}]}
    request = urllib.request.Request(f"{endpoint.root}/v1/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    start = time.monotonic()
    with urllib.request.urlopen(request, timeout=1800) as reply:
        answer = json.loads(reply.read())
    timings = answer.get("timings") or {}
    return {"seconds": time.monotonic() - start, "prompt_n": timings.get("prompt_n"),
            "prompt_per_second": timings.get("prompt_per_second"),
            "predicted_per_second": timings.get("predicted_per_second")}


def protocol_errors(result: ProbeResult) -> int:
    bad = result.status != 200 or result.error is not None or not result.events
    bad = bad or result.events[-1] != _CLOSING[result.protocol] or "error" in result.events
    return int(bad)


def _turn_row(label: str, turn: CliTurn) -> str:
    return (f"  {label:<24} {turn.seconds:8.1f} s  in {turn.input_tokens:>6}  out "
            f"{turn.output_tokens:>5}  commands {len(turn.commands)}  protocol errors "
            f"{len(turn.errors)}{'  ' + turn.errors[0][:120] if turn.errors else ''}")


def panel_rows(agent: str, endpoint: Endpoint, results: Path) -> Any:
    """Run the served panel with ``agent``, print one row per attempt and a total; returns
    the run (``tests.serve.served_panel.PanelRun``)."""
    from tests.serve.served_panel import run_panel

    run = run_panel(agent, endpoint, results)
    print(f"  {agent} panel: exit {run.returncode}, {run.seconds:.0f} s wall, "
          f"{len(run.attempts)} attempts")
    for a in run.attempts:
        r = a.record
        print(f"    {r.task:<20} {r.arm:<9} {a.seconds:6.1f} s  in {r.usage.input_tokens:>6}  "
              f"out {r.usage.output_tokens:>5}  calls {a.calls}  commands {len(a.commands)}  "
              f"protocol errors "
              f"{len(a.protocol_errors)}  events {r.events}  decisions {r.decisions}  "
              f"cost {r.usage.cost_usd}  cause {r.cause}  passed {r.passed}  "
              f"error {(r.error or '-')[:100]}")
    if run.attempts:
        n = len(run.attempts)
        print(f"    per attempt: {sum(a.seconds for a in run.attempts) / n:.1f} s, "
              f"{sum(a.record.usage.input_tokens for a in run.attempts) / n:.0f} tokens in, "
              f"{sum(a.record.usage.output_tokens for a in run.attempts) / n:.0f} out; "
              f"protocol errors {sum(len(a.protocol_errors) for a in run.attempts)}")
    if run.returncode:
        print(run.stderr[-1500:])
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--nice", type=int, default=0,
                        help="the server's niceness change (-10 as root: as the suite's)")
    parser.add_argument("--prompt-tokens", type=int, default=10000)
    parser.add_argument("--stock", action="store_true",
                        help="also one turn per CLI with its stock (long) prompt")
    parser.add_argument("--no-cli", action="store_true", help="skip the real CLI turns")
    parser.add_argument("--no-probes", action="store_true",
                        help="skip the prompt-speed and single-request measurements")
    parser.add_argument("--panel", action="append", default=[], choices=["codex", "claude-code"],
                        help="also run the served panel with this CLI (repeatable)")
    parser.add_argument("--check", action="store_true",
                        help="assert what issue 35 asks of each panel's records "
                             "(tests/serve/served_panel.check_panel); exit 1 otherwise")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-served-") as tmp:
        folder = Path(tmp)
        server = LlamaServer(model_named(DEFAULT), threads=args.threads,
                             log=folder / "server.log", nice=args.nice)
        t0 = time.monotonic()
        with server as endpoint:
            print(f"{DEFAULT}: server up in {time.monotonic() - t0:.1f} s, "
                  f"{args.threads} threads, context {server.context}")
            for agent in args.panel:
                run = panel_rows(agent, endpoint, folder / f"panel-{agent}")
                if args.check:
                    from tests.serve.served_panel import check_panel
                    check_panel(agent, run)  # AssertionError: exit 1, naming the attempt
                    print(f"  {agent} panel: checked")
            if args.no_probes:
                return
            speed = prompt_speed(endpoint, args.prompt_tokens)
            print(f"  prompt of {speed['prompt_n']} tokens: {speed['seconds']:.1f} s "
                  f"({speed['prompt_per_second']:.0f} tokens/s prompt, "
                  f"{speed['predicted_per_second']:.1f} tokens/s generation)")
            for probe in (responses_probe, messages_probe):
                result = probe(endpoint.root, endpoint.model, "List the files here.",
                               max_tokens=48, force_tool=True)
                print(f"  {result.protocol + ' request':<24} {result.seconds:8.1f} s  in "
                      f"{result.input_tokens:>6}  out {result.output_tokens:>5}  tool calls "
                      f"{len(result.tool_calls)}  protocol errors {protocol_errors(result)}")
            if args.no_cli:
                return
            prompt = "Run the shell command `ls` and then say done."
            for agent in ("codex", "claude-code"):
                turn = run_turn(agent, endpoint, prompt, folder / agent)
                print(_turn_row(f"{agent} turn (lean)", turn))
            for agent in ("codex", "claude-code") if args.stock else ():
                turn = run_turn(agent, endpoint, prompt, folder / f"{agent}-stock", lean=False)
                print(_turn_row(f"{agent} turn (stock)", turn))


if __name__ == "__main__":
    main()
