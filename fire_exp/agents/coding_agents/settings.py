"""The settings of a coding-agent CLI (``configs/agent/claude-code.yaml``, ``codex.yaml``):
one model for every CLI, with Codex's base instructions besides; the defaults of
:class:`~fire_exp.agents.coding_agents.agent.CodingCliAgent` are these. The ``install``
block's model is the box's (``environments/agent_install.InstallSettings``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from fire_exp.environments.agent_install import InstallSettings
from fire_exp.settings import DURATION_CEILING_S, Settings, ceiling, setting_error

__all__ = ["CodexSettings", "CodingCliSettings"]


class CodingCliSettings(Settings):
    """A coding-agent CLI's settings (see ``CodingCliAgent`` for each)."""

    binary: str | None = None
    model: str | None = None
    args: list[str] = []
    env_passthrough: list[str] = []
    prices: dict[str, dict[str, float]] | None = None
    hook_timeout_s: Annotated[int, Field(ge=0), ceiling(DURATION_CEILING_S)] = 60
    tier: str | None = None
    install: InstallSettings | None = None
    egress: list[str] = []
    user: str | None = "fire-agent"
    base_url: str | None = None
    api_key_env: str | None = None
    ca_bundle: str | None = None


def _some_text(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise setting_error("empty base instructions", "give a text, or null for Codex's own")
    return value


class CodexSettings(CodingCliSettings):
    """Codex's: a coding CLI's, and ``instructions``, the model's base instructions in
    place of Codex's own (None: Codex's)."""

    instructions: Annotated[str | None, AfterValidator(_some_text)] = None
