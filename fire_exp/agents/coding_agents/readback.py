"""Reading a coding-agent CLI's run back: its output and the host's hook calls into the
attempt's outcome.

What the CLI did is known from two witnesses, both on this machine once the run is over:
the CLI's output (brought home redacted, parsed by its dialect) and the activity log the
policies' answerer wrote on the host. :class:`ReadBack` turns them into the session's
command log and policy events, the usage and cost, and the outcome (the CLI's own error,
a timeout, a policy arm whose hooks never ran, every inconsistency between the witnesses
as ``tamper``: ``evidence.reconcile``). ``agent.py`` runs the CLI; this module only reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fire_exp.agents.base import AgentOutcome, ProviderError
from fire_exp.agents.coding_agents.answers import answer_cause, malformed_calls
from fire_exp.agents.coding_agents.dialect import CliDialect, CliTranscript
from fire_exp.agents.coding_agents.evidence import Reconciliation, channel_tamper, reconcile
from fire_exp.agents.coding_agents.unreached import (
    egress_summary,
    model_answered,
    never_answered,
    streamed_answers,
)
from fire_exp.agents.session import AgentSession
from fire_exp.agents.transcript import price_tokens
from fire_exp.policies.hook_settings import needed_events
from fire_exp.policies.hook_store import ActivitySummary, read_activity
from fire_exp.policies.model import Step
from fire_exp.records import Cause, Usage

_KEPT = 4000


@dataclass(frozen=True)
class BridgeTarget:
    """What the hook bridge loads: a portfolio folder, an arm, the control folder."""

    portfolio: str
    arm: str
    controls: str | None = None


def hook_warning(summary: ActivitySummary, target: BridgeTarget | None) -> str | None:
    """What the validity guard needs to know about the hooks of this attempt."""
    if target is None:
        return None
    if summary.load_errors:
        return f"hooks: {summary.load_errors} policy load error(s): {summary.errors[0]}"
    if not summary.by_event.get("PreToolUse"):
        return "hooks never ran: no PreToolUse hook event in a policy arm"
    return None


class ReadBack:
    """The reading half of ``CodingCliAgent`` (which sets these attributes and says
    whether the CLI talks to its vendor's endpoint)."""

    name: str
    dialect: CliDialect
    binary: str
    base_url: str | None
    model: str | None
    prices: dict[str, dict[str, float]]

    def _vendor_endpoint(self) -> bool:
        raise NotImplementedError

    def _transcript(self, session: AgentSession) -> CliTranscript:
        """The CLI's output as brought home, parsed (a subclass may add what the CLI left
        elsewhere: Codex's rollout file)."""
        lines = session.env.files.cli_stdout.read_text(errors="replace").splitlines()
        return self.dialect.parse(lines)

    def _outcome(self, session: AgentSession, target: BridgeTarget | None, code: int,
                 timed_out: bool) -> AgentOutcome:
        files = session.env.files
        lines = files.cli_stdout.read_text(errors="replace").splitlines()
        transcript = self._transcript(session)
        summary = read_activity(files.hook_state)
        evidence = self._reconcile(session, transcript, summary, target, timed_out)
        self._read_back(session, transcript, summary, evidence, policy_arm=target is not None)
        usage, tamper = self.usage(transcript), evidence.reasons
        # Nothing was measured: no answer in the output, and no token the model wrote
        # (Codex's rollout counts the responses whose calls ``--json`` shows no item for),
        # unless the CLI was stopped by its timeout while the model's answer was streaming
        # to it (the host's egress proxy saw its output): the model was reached, and its
        # answer's length is the model's own doing, as any timeout.
        unanswered = model_answered(self.dialect.target, lines) is False and \
            not transcript.output_tokens
        streamed = streamed_answers(files.egress_log) if unanswered and timed_out else 0
        if unanswered and not streamed:
            raise never_answered(
                self.name, self.binary, self.base_url, lines,
                files.cli_stderr.read_text(errors="replace"), code=code, timed_out=timed_out,
                redact=session.env.redactor.text, tamper=tamper,
                egress=egress_summary(files.egress_log))
        if timed_out:
            mid = (f" while the model's answer was streaming to it ({streamed} answer(s) "
                   "through the egress proxy carried its output; the CLI shows an answer, "
                   "and counts its tokens, only once it completes: none here)") \
                if streamed else ""
            return AgentOutcome(usage=usage, cause=Cause.AGENT_TIMEOUT,
                                error=f"{self.binary} ran past the agent timeout{mid}",
                                tamper=tamper)
        if transcript.step_limit and not transcript.errors:  # the turn bound in agent.args
            return AgentOutcome(usage=usage, cause=Cause.AGENT_STEP_LIMIT,
                                error=f"{self.binary} reached its own turn limit", tamper=tamper)
        if code != 0 or transcript.errors:
            stderr = files.cli_stderr.read_text(errors="replace")
            message = f"{self.binary} exited {code}: " + \
                session.env.redactor.text("; ".join(transcript.errors) or stderr[-600:])
            if not transcript.commands:
                raise ProviderError(message, before_action=True, tamper=tamper)
            return AgentOutcome(usage=usage, cause=Cause.AGENT_ERROR, error=message,
                                tamper=tamper)
        cause = answer_cause(transcript.faults, len(transcript.commands), transcript.final_text)
        # A model that called no tool gives no PreToolUse: its answer says why, not the hooks.
        warning = hook_warning(summary, target) if transcript.commands or \
            summary.load_errors else None
        error = "; ".join(e for e in (cause, warning) if e) or None
        return AgentOutcome(usage=usage, error=error, tamper=tamper)

    def _reconcile(self, session: AgentSession, transcript: CliTranscript,
                   summary: ActivitySummary, target: BridgeTarget | None,
                   timed_out: bool) -> Reconciliation:
        """The transcript against the host's hook calls (a baseline has none: nothing to
        reconcile); see :mod:`~fire_exp.agents.coding_agents.evidence`."""
        if target is None:
            return Reconciliation()
        return reconcile(transcript, summary.lines,
                         reports_denied_calls=self.dialect.reports_denied_calls,
                         timed_out=timed_out, redact=session.env.redactor.text,
                         channel=channel_tamper(session.env.files.hook_channel),
                         expects_stop="Stop" in needed_events(
                             session.runtime.families, self.dialect.hook_protocol))

    def _read_back(self, session: AgentSession, transcript: CliTranscript,
                   summary: ActivitySummary, evidence: Reconciliation,
                   policy_arm: bool) -> None:
        for i, cmd in enumerate(transcript.commands):
            output = session.env.redactor.text(cmd.output)[-_KEPT:]
            if cmd.paths:  # a file edit: a write event for the extractors
                session.trajectory.append(Step(len(session.trajectory), "edit", cmd.command,
                                               cmd.exit_code, output, paths=cmd.paths))
                continue
            # A denied command the transcript shows running is logged as it ran.
            was_denied = i in evidence.denied and i not in evidence.ran_denied
            session.trajectory.append(Step(len(session.trajectory), "command", cmd.command,
                                           None if was_denied else cmd.exit_code, output,
                                           denied=was_denied))
        session.trajectory.append(Step(len(session.trajectory), "stop"))
        session.runtime.ingest(events=summary.hook_events, counts=summary.by_event,
                               log=summary.decisions)
        report = {"policy_arm": policy_arm, "hook_events": summary.hook_events,
                  "by_event": summary.by_event, "load_errors": summary.load_errors,
                  "errors": list(summary.errors), "tamper": list(evidence.reasons)}
        session.env.files.hook_summary.write_text(json.dumps(report, indent=1))

    def usage(self, transcript: CliTranscript) -> Usage:
        """Tokens and cost of a run: priced from ``prices`` for the model (0 for a model
        with no price), or the CLI's own cost where the CLI reports one and talks to its
        vendor's endpoint.

        A CLI prices tokens at its vendor's list price for the model's name (Claude Code's
        ``total_cost_usd``), whatever endpoint served them: against ``base_url`` (or a
        passed ``*_BASE_URL``) that figure is fictitious, so it is never the record's; it
        stays in the CLI's own output (``AttemptPaths.cli_stdout``)."""
        model = transcript.model or self.model or self.dialect.default_model()
        cost = transcript.cost_usd if self._vendor_endpoint() else None
        if cost is None:
            price = self.prices.get(model or "", {})
            cost = price_tokens(price, transcript.input_tokens, transcript.output_tokens,
                                transcript.cached_input_tokens)
        return Usage(input_tokens=transcript.input_tokens, output_tokens=transcript.output_tokens,
                     cached_input_tokens=transcript.cached_input_tokens,
                     cost_usd=round(cost, 8), model=model, route=self.dialect.target,
                     malformed_tool_calls=malformed_calls(transcript.faults))
