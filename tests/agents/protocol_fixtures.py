"""Load the protocol fixtures of tests/fixtures/protocols, with their placeholders filled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "protocols"


def _fill(value: Any, fields: dict[str, Any]) -> Any:
    if isinstance(value, str):
        for key, text in fields.items():
            value = value.replace("{" + key + "}", str(text))
        return value
    if isinstance(value, dict):
        return {k: _fill(v, fields) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_fill(v, fields) for v in value]
    return value


def fixture(name: str, **fields: Any) -> Any:
    """The fixture ``name`` (a file of FIXTURES) with ``{key}`` placeholders replaced."""
    return _fill(json.loads((FIXTURES / name).read_text(encoding="utf-8")), fields)


def lines(name: str) -> list[str]:
    """The lines of a JSONL transcript fixture."""
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()
