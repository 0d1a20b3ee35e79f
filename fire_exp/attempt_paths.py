"""Where an attempt's artifacts live: one object owns the layout of an attempt's folder.

The runner, the environments, the agents, the report and the explorer all name an
attempt's files through :class:`AttemptPaths`; no other module spells a log file's path.
The box's own logs folder (``/logs`` in a container, ``$FIRE_LOGS`` in every backend) has
the same layout below it as ``ATTEMPT/logs`` on the host, so the ``*_LOG`` names relative
to a logs folder serve both sides.

>>> paths = AttemptPaths(Path("run/attempts/t/real/r0"))
>>> paths.commands.as_posix()
'run/attempts/t/real/r0/logs/agent/commands.jsonl'
>>> in_box("/logs", TERMINAL_LOG)
'/logs/agent/terminal.log'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "AGENT_LOGS",
    "AttemptPaths",
    "CLI_STDERR",
    "CLI_STDOUT",
    "COMMANDS",
    "EGRESS_LOG",
    "HARNESS_ERROR",
    "HOOK_SUMMARY",
    "POLICY_EVENTS",
    "REWARD_JSON",
    "REWARD_TXT",
    "SETUP_LOG",
    "TERMINAL_LOG",
    "TEST_STDOUT",
    "TRANSCRIPT",
    "VERIFIER_LOGS",
    "VERIFIER_RESULT",
    "in_box",
]

# Relative to a logs folder (the host's ATTEMPT/logs or the box's /logs).
AGENT_LOGS = "agent"
VERIFIER_LOGS = "verifier"
SETUP_LOG = "setup.log"
HARNESS_ERROR = "harness-error.txt"
TERMINAL_LOG = f"{AGENT_LOGS}/terminal.log"
COMMANDS = f"{AGENT_LOGS}/commands.jsonl"
POLICY_EVENTS = f"{AGENT_LOGS}/policy-events.jsonl"
CLI_STDOUT = f"{AGENT_LOGS}/cli-stdout.jsonl"
CLI_STDERR = f"{AGENT_LOGS}/cli-stderr.txt"
HOOK_SUMMARY = f"{AGENT_LOGS}/hook-summary.json"
EGRESS_LOG = f"{AGENT_LOGS}/egress.jsonl"
TRANSCRIPT = f"{AGENT_LOGS}/transcript.jsonl"
TEST_STDOUT = f"{VERIFIER_LOGS}/test-stdout.txt"
VERIFIER_RESULT = f"{VERIFIER_LOGS}/result.json"
REWARD_TXT = f"{VERIFIER_LOGS}/reward.txt"
REWARD_JSON = f"{VERIFIER_LOGS}/reward.json"


def in_box(logs: str, name: str) -> str:
    """The box path of the log ``name`` under the box's logs folder ``logs``."""
    return f"{logs.rstrip('/')}/{name}"


@dataclass(frozen=True)
class AttemptPaths:
    """The files of one attempt's folder on the host.

    Attributes:
        root: the attempt's folder (``RUN/attempts/TASK/ARM/rN``).
    """

    root: Path

    @property
    def logs(self) -> Path:
        """``logs/``: what the box's logs folder holds, and the harness's own logs."""
        return self.root / "logs"

    def log(self, name: str) -> Path:
        """The log ``name`` (one of this module's ``*_LOG``/``*_LOGS`` names) on the host."""
        return self.logs / name

    @property
    def agent_logs(self) -> Path:
        return self.log(AGENT_LOGS)

    @property
    def verifier_logs(self) -> Path:
        return self.log(VERIFIER_LOGS)

    @property
    def setup_log(self) -> Path:
        return self.log(SETUP_LOG)

    @property
    def harness_error(self) -> Path:
        """Why fire-exp could not run the attempt (a harness failure's record)."""
        return self.log(HARNESS_ERROR)

    @property
    def terminal_log(self) -> Path:
        return self.log(TERMINAL_LOG)

    @property
    def commands(self) -> Path:
        """The command log (one step a line): what the extractors and the explorer read."""
        return self.log(COMMANDS)

    @property
    def policy_events(self) -> Path:
        """The policy runtime's decisions, one a line."""
        return self.log(POLICY_EVENTS)

    @property
    def cli_stdout(self) -> Path:
        """A coding-agent CLI's output stream, redacted."""
        return self.log(CLI_STDOUT)

    @property
    def cli_stderr(self) -> Path:
        return self.log(CLI_STDERR)

    @property
    def hook_summary(self) -> Path:
        """What the hook bridge saw of a CLI's hook calls."""
        return self.log(HOOK_SUMMARY)

    @property
    def egress_log(self) -> Path:
        """The egress proxy's decisions, one connection a line."""
        return self.log(EGRESS_LOG)

    @property
    def transcript(self) -> Path:
        """A chat agent's transcript (requests and replies), redacted."""
        return self.log(TRANSCRIPT)

    @property
    def test_stdout(self) -> Path:
        """``tests/test.sh``'s output."""
        return self.log(TEST_STDOUT)

    @property
    def verifier_result(self) -> Path:
        """The verifier's verdict as the runner read it."""
        return self.log(VERIFIER_RESULT)

    @property
    def reward_txt(self) -> Path:
        return self.log(REWARD_TXT)

    @property
    def hooks(self) -> Path:
        """A coding-agent CLI's hook configuration as it was given (never inside logs/)."""
        return self.root / "hooks"

    @property
    def hook_channel(self) -> Path:
        """What the hook relay's channel saw (counts, heartbeat, tamper reasons)."""
        return self.hooks / "channel.json"

    @property
    def hook_state(self) -> Path:
        """The hook bridge's session state and activity log."""
        return self.hooks / "state"

    @property
    def box(self) -> Path:
        """The local environment's box: working folder, tests and solution."""
        return self.root / "box"
