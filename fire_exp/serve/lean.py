"""The CLIs' own switches that shorten their first request for a small, slow local model.

On two CPU cores a 0.5B model reads ~10-12k prompt tokens per request for the CLIs' stock
prompts; these switches, each one the CLI documents or lists itself (``codex features
list``, ``codex exec -c``; ``claude --help``), cut the request to ~2k tokens without
touching the hooks fire-exp wires the policies in by. They go in ``agent.args``, so they
are part of the agent config the manifest freezes and every arm gets the same.

Measured on the real binaries (the first request's JSON body, against a capturing server):
Codex 0.163 39 KB -> 6.6 KB (tools: ``exec_command``, ``write_stdin``,
``request_user_input``; no multi-agent, goal, image, skills or web-search tools, no
permissions/environment/skills sections); Claude Code 2.1.332 50 KB -> 10 KB (tools Bash,
Read, Write, Edit; a one-line system prompt).
"""

from __future__ import annotations

from collections.abc import Sequence

import yaml

from fire_exp.paths import CONFIG_DIR

__all__ = ["CODEX_INSTRUCTIONS", "LEAN_ARGS", "LEAN_SETTINGS", "SYSTEM_PROMPT", "lean_args",
           "lean_override", "lean_overrides"]

SYSTEM_PROMPT = ("You are a coding agent in a terminal. Work in the current folder: run "
                 "shell commands with the Bash tool (its command argument is the command), "
                 "read and write files with shell commands, then say briefly what you did.")
# Codex's base instructions for the model (agent.instructions -> model_instructions_file):
# its own for a catalogue model are ~17 KB written for OpenAI's models.
CODEX_INSTRUCTIONS = ("You are a coding agent in a terminal. Work in the current folder: "
                      "run shell commands with the exec_command tool (its cmd argument is "
                      "the command) and write files with shell commands, then say briefly "
                      "what you did. write_stdin only types into a process that "
                      "exec_command started and that is still running.")

LEAN_ARGS: dict[str, list[str]] = {
    "codex": [
        *[arg for feature in ("multi_agent", "goals", "view_image", "skill_search", "apps",
                              "plugins") for arg in ("--disable", feature)],
        "-c", 'web_search="disabled"',
        "-c", "include_permissions_instructions=false",
        "-c", "include_environment_context=false",
        "-c", "skills.include_instructions=false",
    ],
    "claude-code": ["--tools", "Bash", "--system-prompt", SYSTEM_PROMPT],
}


# Agent settings beside ``args`` that the lean configuration sets.
LEAN_SETTINGS: dict[str, dict[str, str]] = {"codex": {"instructions": CODEX_INSTRUCTIONS},
                                            "claude-code": {}}


def _config_args(agent: str) -> list[str]:
    """``args`` of the bundled ``configs/agent/AGENT.yaml`` (what the lean args extend)."""
    data = yaml.safe_load((CONFIG_DIR / "agent" / f"{agent}.yaml").read_text(encoding="utf-8"))
    return [str(a) for a in data.get("args") or []]


def lean_args(agent: str) -> list[str]:
    """The agent's configured ``args`` followed by its lean switches."""
    return [*_config_args(agent), *LEAN_ARGS[agent]]


def _quote(arg: str) -> str:
    """One element of a Hydra list override, single-quoted (Hydra's escapes: ``\\'``)."""
    return "'" + arg.replace("\\", "\\\\").replace("'", "\\'") + "'"


def lean_overrides(agent: str, extra: Sequence[str] = ()) -> list[str]:
    """The Hydra overrides of the lean configuration: ``agent.args=[...]`` (the lean args,
    then ``extra``) and, for Codex, ``agent.instructions='...'`` (as ``fire-exp run`` takes
    them in its argv)."""
    args = [*lean_args(agent), *extra]
    overrides = ["agent.args=[" + ",".join(_quote(a) for a in args) + "]"]
    return overrides + [f"agent.{k}={_quote(v)}" for k, v in LEAN_SETTINGS[agent].items()]


def lean_override(agent: str) -> str:
    """:func:`lean_overrides` as shell words (each double-quoted for the shell)."""
    return " ".join('"' + o.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'
                    for o in lean_overrides(agent))
