"""Coding-agent CLIs as agents: one agent (``CodingCliAgent``), one dialect per CLI.

``claude_code.py`` and ``codex.py`` are the dialects (command line, settings and hook
files, output parser, cost); ``agent.py`` runs any of them through the environment
contract, with the hook transport the environment provides, and ``readback.py`` reads
the run back into the attempt's outcome.
"""

from fire_exp.agents.coding_agents.agent import CodingCliAgent, bridge_target
from fire_exp.agents.coding_agents.claude_code import (
    ClaudeCode,
    ClaudeCodeAgent,
    parse_claude_stream,
)
from fire_exp.agents.coding_agents.codex import Codex, CodexAgent, parse_codex_json
from fire_exp.agents.coding_agents.dialect import CliCommand, CliDialect, CliEndpoint, CliTranscript
from fire_exp.agents.coding_agents.readback import BridgeTarget, hook_warning

__all__ = [
    "BridgeTarget",
    "ClaudeCode",
    "ClaudeCodeAgent",
    "CliCommand",
    "CliDialect",
    "CliEndpoint",
    "CliTranscript",
    "Codex",
    "CodexAgent",
    "CodingCliAgent",
    "bridge_target",
    "hook_warning",
    "parse_claude_stream",
    "parse_codex_json",
]
