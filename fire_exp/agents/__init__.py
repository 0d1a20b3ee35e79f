"""Agents: one protocol; simulated, oracle and nop agents, and real-model agents."""

from fire_exp.agents.base import Agent, AgentOutcome, NopAgent, OracleAgent, ProviderError
from fire_exp.agents.coding_agents import ClaudeCodeAgent, CodexAgent
from fire_exp.agents.openai import OpenAIAgent
from fire_exp.agents.session import AgentSession, AgentTimeout, ToolResult
from fire_exp.agents.simulated import SimulatedAgent, load_script

__all__ = [
    "Agent",
    "AgentOutcome",
    "AgentSession",
    "AgentTimeout",
    "ClaudeCodeAgent",
    "CodexAgent",
    "NopAgent",
    "OpenAIAgent",
    "OracleAgent",
    "ProviderError",
    "SimulatedAgent",
    "ToolResult",
    "load_script",
]
