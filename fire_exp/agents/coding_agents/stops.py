"""Every Stop intervention witnessed, every expected Stop hook seen (issue 36).

The host's activity log says what the bridge answered; only the CLI's own output can say
that the answer arrived. A Stop block (an ``instruct`` at ``Stop``) makes an honest CLI
go on: it fires Stop again with ``stop_hook_active`` when it next tries to stop, and works
on in between. A block the CLI never received (its shim killed or starved by the agent's
processes, its answer consumed) lets it stop all the same, while the host's log says
``instruct``. So a Stop block counts as delivered only when it is witnessed: a tool call
of the transcript whose hook event came after it, or the CLI's next Stop with
``stop_hook_active``. Otherwise the attempt is invalid with the named reason.

The other direction: an arm that hooks ``Stop`` expects a Stop hook call after the CLI's
last tool call when the CLI finished on its own (both CLIs fire Stop when a turn ends). A
finished transcript with none after its last call (the shim could not run, or never got
its request through) is named too. A CLI killed at its timeout may be cut off before
either, and is excused for its last Stop.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from fire_exp.policies.hook_store import HookLine

__all__ = ["NO_STOP_HOOK", "UNWITNESSED_STOP", "stop_reasons"]

UNWITNESSED_STOP = "stop instruction not witnessed"
NO_STOP_HOOK = "stop with no hook event"


def stop_reasons(lines: Sequence[HookLine], session: str | None, witnessed: Collection[int],
                 *, expects_stop: bool, finished: bool, timed_out: bool) -> list[str]:
    """The named reasons about Stop in one attempt (empty: none).

    Args:
        lines: the activity log's lines, in order.
        session: the CLI's session (lines of other sessions are not its hook calls).
        witnessed: indexes of ``lines`` of tool events matched to a call of the transcript.
        expects_stop: the arm hooks ``Stop`` (``hook_settings.needed_events``).
        finished: the transcript ended with the CLI's final result.
        timed_out: the CLI was killed at its timeout.

    >>> stop = HookLine("event", "Stop", "s", decision="instruct", reason="test it")
    >>> stop_reasons([stop], "s", (), expects_stop=True, finished=True, timed_out=False)[0]
    'stop instruction not witnessed: 1 Stop block(s) ("test it") with no turn of the CLI after it, nor a second Stop (stop_hook_active)'
    """
    stops = [(n, x) for n, x in enumerate(lines)
             if x.kind == "event" and x.session_id == session and x.event == "Stop"]
    unwitnessed = []
    for k, (n, line) in enumerate(stops):
        if line.decision == "allow":
            continue
        went_on = any(m > n for m in witnessed) or \
            any(m > n and x.stop_hook_active for m, x in stops)
        if not went_on and not (timed_out and k == len(stops) - 1):
            unwitnessed.append(line.reason)
    reasons = []
    if unwitnessed:
        first = " ".join(unwitnessed[0].split())[:80]
        reasons.append(f"{UNWITNESSED_STOP}: {len(unwitnessed)} Stop block(s) (\"{first}\") "
                       "with no turn of the CLI after it, nor a second Stop "
                       "(stop_hook_active)")
    if expects_stop and finished and not timed_out:
        last_call = max(witnessed, default=-1)
        if not any(n > last_call for n, _ in stops):
            reasons.append(f"{NO_STOP_HOOK}: the CLI finished with no Stop hook call after "
                           "its last tool call")
    return reasons
