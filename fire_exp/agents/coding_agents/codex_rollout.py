"""Codex's rollout file: the calls ``codex exec --json`` does not show.

``--json`` (codex-cli 0.163) omits a tool call a PreToolUse hook denied, and its items carry
no call id. The rollout file Codex writes under ``CODEX_HOME/sessions/YYYY/MM/DD/
rollout-*.jsonl`` has every call: ``response_item`` lines of type ``function_call``
(``exec_command``, ``arguments {"cmd": ...}``) or ``custom_tool_call`` (``apply_patch``,
``input`` the patch), each with its ``call_id`` (the hook payloads' ``tool_use_id``); an
``event_msg`` ``item_completed`` line whose item id is that call id for each call that ran
(``CommandExecution``, ``FileChange``); and the output the model got back, ``Command blocked
by PreToolUse hook: REASON. Command: CMD`` for a denied one. A command still running when
``exec_command`` yielded has its output so far ("Process running with session ID N") and its
``item_completed`` only once it exits (at the turn's end, when Codex kills it: exit -1).

:func:`merge_rollout` puts the denied calls into the transcript where they happened and
gives every call its id, so ``commands.jsonl`` shows them as denied steps and the
reconciliation pairs calls with hook events by id. The file is written inside the box, so
it only ever adds to what the captured output shows: when its calls that ran do not line
up with the output's one for one, the transcript is left as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace

from fire_exp.agents.coding_agents.answers import ModelFault
from fire_exp.agents.coding_agents.dialect import CliCommand, CliTranscript, as_dict, json_objects

__all__ = ["BLOCKED", "RolloutCall", "RolloutUsage", "merge_rollout", "patch_paths",
           "rollout_calls", "rollout_faults", "rollout_usage"]

BLOCKED = "Command blocked by PreToolUse hook"
SHELL_CALLS = frozenset({"exec_command", "shell", "shell_command", "local_shell"})
EDIT_CALLS = frozenset({"apply_patch"})
# What Codex 0.163 answers a call it cannot run (codex-rs: FunctionCallError).
REFUSED = ("failed to parse function arguments", "unsupported call", "unsupported custom tool")


@dataclass(frozen=True)
class RolloutCall:
    """One shell or patch call of the rollout: its id, command (the patch text for an
    edit), whether it is an edit, whether it ran, and whether a hook blocked it."""

    call_id: str
    command: str
    edit: bool
    ran: bool
    blocked: bool
    output: str = ""  # what Codex answered the model

    @property
    def shown(self) -> bool:
        """Whether ``--json`` shows the call: it ran, or it is a shell command Codex started
        (answered with its output so far, or not answered yet when the CLI was killed),
        neither blocked by a hook nor refused as malformed."""
        return self.ran or (not self.edit and not self.blocked and
                            not self.output.startswith(REFUSED))

    @property
    def unapplied(self) -> bool:
        """A patch Codex tried and could not apply: it answered, but nothing ran."""
        return self.edit and not self.ran and not self.blocked and bool(self.output)


def _command(payload: dict[str, object]) -> str:
    if payload.get("type") == "custom_tool_call":
        return str(payload.get("input") or "")
    try:
        args = as_dict(json.loads(str(payload.get("arguments") or "{}")))
    except json.JSONDecodeError:
        return ""
    command = args.get("cmd", args.get("command", ""))
    return " ".join(map(str, command)) if isinstance(command, list) else str(command)


def rollout_calls(lines: Iterable[str]) -> list[RolloutCall]:
    """The shell and patch calls of a rollout file, in order."""
    order: list[tuple[str, str, bool]] = []
    ran: set[str] = set()
    outputs: dict[str, str] = {}
    for obj in json_objects(lines):
        payload = as_dict(obj.get("payload"))
        kind = payload.get("type")
        if obj.get("type") == "response_item" and kind in ("function_call", "custom_tool_call"):
            name = str(payload.get("name"))
            if name in SHELL_CALLS | EDIT_CALLS:
                order.append((str(payload.get("call_id")), _command(payload), name in EDIT_CALLS))
        elif obj.get("type") == "response_item" and kind in ("function_call_output",
                                                             "custom_tool_call_output"):
            output = payload.get("output")
            outputs[str(payload.get("call_id"))] = output if isinstance(output, str) else ""
        elif obj.get("type") == "event_msg" and kind == "item_completed":
            item = as_dict(payload.get("item"))
            if item.get("type") in ("CommandExecution", "FileChange"):
                ran.add(str(item.get("id")))
    return [RolloutCall(cid, command, edit, cid in ran, outputs.get(cid, "").startswith(BLOCKED),
                        outputs.get(cid, "")) for cid, command, edit in order]


@dataclass(frozen=True)
class RolloutUsage:
    """The tokens of a run so far, as Codex counted them after its last model response."""

    input_tokens: int  # cached included, as in ``turn.completed``'s usage
    cached_input_tokens: int
    output_tokens: int
    responses: int  # model responses counted (``token_count`` events with usage)


def rollout_usage(lines: Iterable[str]) -> RolloutUsage | None:
    """The run's tokens from the rollout's ``token_count`` events (None: none with usage).

    Codex 0.163 writes an ``event_msg`` of type ``token_count`` after every model response,
    ``info.total_token_usage`` the running total of the thread; ``--json`` shows usage only
    in ``turn.completed``, so a turn stopped by the agent's timeout has its tokens here
    alone.

    >>> rollout_usage(['{"type":"event_msg","payload":{"type":"token_count","info":null}}',
    ...     '{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":'
    ...     '{"input_tokens":900,"cached_input_tokens":600,"output_tokens":40}}}}'])
    RolloutUsage(input_tokens=900, cached_input_tokens=600, output_tokens=40, responses=1)
    """
    last: dict[str, object] | None = None
    responses = 0
    for obj in json_objects(lines):
        payload = as_dict(obj.get("payload"))
        if obj.get("type") != "event_msg" or payload.get("type") != "token_count":
            continue
        total = as_dict(as_dict(payload.get("info")).get("total_token_usage"))
        if total:
            last, responses = total, responses + 1
    if last is None:
        return None

    def count(key: str) -> int:
        value = last.get(key) if last else 0
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
            else 0
    return RolloutUsage(count("input_tokens"), count("cached_input_tokens"),
                        count("output_tokens"), responses)


def patch_paths(patch: str) -> tuple[str, ...]:
    """The files an ``apply_patch`` text names (``*** Add/Update/Delete File: PATH``).

    >>> patch_paths("*** Begin Patch\\n*** Update File: a.txt\\n@@\\n-x\\n+y\\n*** End Patch")
    ('a.txt',)
    """
    heads = ("*** Add File: ", "*** Update File: ", "*** Delete File: ")
    return tuple(line.split(": ", 1)[1].strip() for line in patch.splitlines()
                 if line.startswith(heads))


def merge_rollout(transcript: CliTranscript, calls: list[RolloutCall]) -> CliTranscript:
    """``transcript`` with the rollout's blocked calls inserted where they happened and
    every call's id (unchanged when the calls that ran do not line up with its own)."""
    shown = [c for c in calls if c.shown]
    if len(shown) != len(transcript.commands) or any(
            c.edit != bool(t.paths) for c, t in zip(shown, transcript.commands, strict=True)):
        return transcript
    own = iter(transcript.commands)
    merged: list[CliCommand] = []
    for call in calls:
        if call.shown:
            merged.append(replace(next(own), tool_use_id=call.call_id))
        elif call.blocked:
            merged.append(CliCommand("apply_patch" if call.edit else call.command,
                                     is_error=True, tool_use_id=call.call_id))
        elif call.unapplied:  # its hooks ran; the patch then failed to apply
            merged.append(CliCommand("apply_patch", call.output, 1, True,
                                     patch_paths(call.command), tool_use_id=call.call_id))
    return replace(transcript, commands=merged)


def rollout_faults(lines: Iterable[str]) -> list[ModelFault]:
    """The model's calls Codex refused (:data:`REFUSED`: malformed) or whose patch did not
    apply (an ``apply_patch`` that neither ran nor was blocked), with Codex's answer."""
    calls: list[tuple[str, str]] = []
    ran: set[str] = set()
    outputs: dict[str, str] = {}
    for obj in json_objects(lines):
        payload = as_dict(obj.get("payload"))
        kind, call_id = payload.get("type"), str(payload.get("call_id"))
        if obj.get("type") == "response_item" and kind in ("function_call", "custom_tool_call"):
            calls.append((call_id, str(payload.get("name"))))
        elif obj.get("type") == "response_item" and kind in ("function_call_output",
                                                             "custom_tool_call_output"):
            output = payload.get("output")
            outputs[call_id] = output if isinstance(output, str) else json.dumps(output)
        elif obj.get("type") == "event_msg" and kind == "item_completed":
            item = as_dict(payload.get("item"))
            if item.get("type") in ("CommandExecution", "FileChange"):
                ran.add(str(item.get("id")))
    faults = []
    for call_id, name in calls:
        said = outputs.get(call_id, "")
        if call_id in ran or said.startswith(BLOCKED):
            continue
        if said.startswith(REFUSED):
            faults.append(ModelFault("malformed", name, said))
        elif name in EDIT_CALLS and call_id in outputs:
            faults.append(ModelFault("unapplied", name, said))
    return faults
