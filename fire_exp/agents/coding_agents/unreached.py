"""An attempt whose CLI never got a model answer measured nothing: it is the provider's
failure, or, when the CLI says why in a way no retry changes, the panel's configuration.

What shows a model answer in a CLI's output (:func:`model_answered`):

- Codex 0.163 (``exec --json``): a ``turn.completed``, or an item of the model's
  (``item.started`` / ``item.completed`` of any type but ``error``, which Codex uses for
  its own warnings). Against an endpoint it cannot reach it prints ``Reconnecting...``
  errors until it is killed; against a 4xx/5xx it retries five times, then
  ``turn.failed``. A call Codex answers with an error of its own (``write_stdin`` to a
  process that does not exist) shows no item: its rollout file's ``token_count`` after
  each response does (``codex_rollout.rollout_usage``), and an attempt whose model wrote
  tokens was answered (``readback``).
- Claude Code 2.1 (``stream-json``): an ``assistant`` message from a model (not its
  ``<synthetic>`` stand-in for an API error), or a ``result`` that is no error.

A deterministic configuration error (:func:`configuration_error`) is one every attempt
would hit alike: the root refusal of ``bypassPermissions``, a command-line flag the CLI
rejects, an endpoint that answers 4xx (an unknown model, a refused key, a wrong path).
Replacing such an attempt only burns the replacement budget, so the run stops instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from fire_exp.agents.base import ProviderError
from fire_exp.errors import ProtocolError

__all__ = ["configuration_error", "egress_summary", "failure_text", "model_answered",
           "never_answered", "streamed_answers"]

# (pattern, what the user is told); the first match wins.
_CONFIGURATION: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"cannot be used with root/sudo privileges", re.I),
     "Claude Code refuses --permission-mode bypassPermissions as root: run the agent as "
     "an unprivileged user (agent.user) or let the dialect set IS_SANDBOX=1 in the box"),
    (re.compile(r"error: (?:unexpected argument|unknown option|invalid value) '?([^'\n]*)'?",
                re.I),
     "the CLI rejected its command line ({0}): check agent.args"),
    (re.compile(r"(?:unexpected status|API Error:?|HTTP|status code)\s*"
                r"(40[0-79]|41\d|42[0-8]|4[3-9]\d)\b", re.I),
     "the model endpoint answered HTTP {0} to the CLI's first request (an unknown model, "
     "a refused key or a wrong URL): check agent.model, agent.base_url and the key"),
)
_CONTEXT = re.compile(r"context[ _-]?(length|window)|too many tokens|prompt is too long", re.I)


def model_answered(target: str, lines: Iterable[str]) -> bool | None:
    """Whether the output ``lines`` of CLI ``target`` show a model answer (None: fire-exp
    cannot tell for that CLI).

    >>> model_answered("codex", ['{"type":"turn.started"}',
    ...                          '{"type":"error","message":"Reconnecting... 1/5"}'])
    False
    >>> model_answered("claude-code", ['{"type":"assistant","message":{"model":"m"}}'])
    True
    """
    if target not in ("codex", "claude-code"):
        return None
    for obj in _objects(lines):
        if _answer(target, obj):
            return True
    return False


def _answer(target: str, obj: dict[str, object]) -> bool:
    kind = obj.get("type")
    if target == "codex":
        item = obj.get("item")
        item_type = item.get("type") if isinstance(item, dict) else None
        return kind == "turn.completed" or (
            kind in ("item.started", "item.completed") and item_type not in (None, "error"))
    if kind == "assistant":
        message = obj.get("message")
        return isinstance(message, dict) and message.get("model") != "<synthetic>"
    return kind == "result" and obj.get("is_error") is False


def _objects(lines: Iterable[str]) -> Iterable[dict[str, object]]:
    for line in lines:
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                yield obj


def failure_text(lines: Iterable[str]) -> str:
    """What the output ``lines`` say went wrong, one message a line: Codex's ``error`` and
    ``turn.failed`` messages, Claude Code's error ``result`` with its ``api_error_status``
    (as ``HTTP N``: its text need not name the status).

    >>> failure_text(['{"type":"result","is_error":true,"result":"bad model",'
    ...               '"api_error_status":404}'])
    'HTTP 404: bad model'
    """
    said = []
    for obj in _objects(lines):
        kind = obj.get("type")
        if kind in ("error", "turn.failed"):
            error = obj.get("error")
            said.append(str(error.get("message") if isinstance(error, dict) else
                            obj.get("message") or kind))
        elif kind == "result" and obj.get("is_error"):
            status = obj.get("api_error_status")
            prefix = f"HTTP {status}: " if isinstance(status, int) else ""
            said.append(prefix + str(obj.get("result") or obj.get("subtype") or "error"))
    return "\n".join(said)


def configuration_error(text: str) -> str | None:
    """What in ``text`` (a CLI's errors and stderr) is a configuration error no attempt
    gets past, said for the user (None: nothing deterministic is seen).

    >>> configuration_error("unexpected status 404 Not Found: model 'x' not found")[:35]
    'the model endpoint answered HTTP 40'
    >>> configuration_error("Reconnecting... 1/5 (unexpected status 503)") is None
    True
    """
    if _CONTEXT.search(text):
        return None  # the conversation outgrew the model on this task: not the panel's
    for pattern, said in _CONFIGURATION:
        found = pattern.search(text)
        if found:
            return said.format(*(g.strip() for g in found.groups()))
    return None


def egress_summary(log: Path) -> str:
    """What the box's egress proxy saw (``ATTEMPT/logs/agent/egress.jsonl``), in a clause
    ("" where there was no proxy): the connections it let through and whether any request
    was answered.

    >>> egress_summary(Path("/nonexistent/egress.jsonl"))
    ''
    """
    entries = _egress_entries(log)
    if entries is None:
        return ""
    through = [e for e in entries if isinstance(e, dict) and e.get("allowed")
               and e.get("output") != "streaming"]
    answered = [e for e in through if e.get("status")]
    if not through:
        refused = sum(1 for e in entries if isinstance(e, dict) and not e.get("allowed"))
        return f"; the egress proxy let nothing through ({refused} refused)"
    notes = sorted({str(e.get("note")) for e in through if e.get("note")})
    return (f"; the egress proxy let {len(through)} connection(s) through, "
            f"{len(answered)} answered" + (f" ({notes[0][:200]})" if notes else ""))


def streamed_answers(log: Path) -> int:
    """How many of the box's plain-HTTP requests to its model got an answer whose output
    was streaming through the egress proxy (``ATTEMPT/logs/agent/egress.jsonl``: the
    proxy's ``output: "streaming"`` line at an answer's first event of the model's output;
    0 where there was no proxy, or the endpoint is HTTPS, tunnelled unread).

    The host's evidence that the model was answering: Codex 0.163 and Claude Code 2.1 show
    an answer, and count its tokens, only once it completes, so a CLI stopped by the agent
    timeout mid-answer shows none.
    """
    entries = _egress_entries(log) or []
    return sum(1 for e in entries if isinstance(e, dict) and e.get("allowed")
               and e.get("output") == "streaming")


def _egress_entries(log: Path) -> list[Any] | None:
    try:
        return [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines() if x]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def never_answered(agent: str, binary: str, base_url: str | None, lines: Sequence[str],
                   stderr: str, *, code: int, timed_out: bool, redact: Callable[[str], str],
                   tamper: Sequence[str] = (), egress: str = "") -> ProtocolError | ProviderError:
    """The error of an attempt whose CLI never got a model answer: a configuration error
    every attempt would hit alike stops the run (ProtocolError); anything else is the
    provider's failure (ProviderError, before any action: replaced under the panel's
    rule, never a valid failure), ``egress`` (:func:`egress_summary`) appended."""
    said = redact(failure_text(lines) or stderr[-600:]).strip()
    last = said.splitlines()[-1][:600] if said else "no output"
    ended = "ran past the agent timeout" if timed_out else f"exited {code}"
    where = base_url or "its default endpoint"
    config = configuration_error(f"{said}\n{redact(stderr[-2000:])}")
    if config is not None:
        return ProtocolError(f"agent={agent}: {config}. The run stops: every attempt would "
                             f"fail alike ({binary} {ended} with no model answer from "
                             f"{where}: {last[:300]})")
    return ProviderError(f"{binary} never got a model answer from {where} ({ended}): "
                         f"{last}{egress}", before_action=True, tamper=tamper)
