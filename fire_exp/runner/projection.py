"""The projected cost of a run, printed by ``fire-exp run`` before its first attempt.

Known when attempts with a cost exist to project from: the run's own finished attempts
(a resumed run), else a pilot (``cost_pilot=RUN_FOLDER_OR_ATTEMPTS_FILE``): its tokens per
attempt priced with the agent's ``prices`` when the agent has a price for its model, else
the pilot's recorded cost per attempt. Unknown (nothing printed) otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fire_exp.agents.transcript import price_tokens
from fire_exp.errors import InputError
from fire_exp.records import AttemptRecord, read_records

__all__ = ["pilot_cost", "pilot_records", "projected_cost"]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def pilot_records(path: Path | str) -> list[AttemptRecord]:
    """The finished attempts of a pilot run folder or attempts file.

    Raises:
        InputError: no such file.
    """
    path = Path(path)
    file = path / "attempts.jsonl" if path.is_dir() else path
    if not file.is_file():
        raise InputError(file, "cost_pilot", "no such attempts file",
                         "pass a run folder holding attempts.jsonl, or its attempts.jsonl")
    return read_records(file).finished


def _priced(records: Sequence[AttemptRecord], price: Mapping[str, float]) -> float:
    """Mean cost per attempt of ``records``' tokens at ``price`` (USD per 1M tokens)."""
    return _mean([price_tokens(dict(price), r.usage.input_tokens, r.usage.output_tokens,
                               r.usage.cached_input_tokens) for r in records])


def pilot_cost(pilot: Sequence[AttemptRecord], agent_params: Mapping[str, Any] | None,
               ) -> tuple[float, str] | None:
    """A pilot's cost per attempt and how it was found: its tokens at the agent's price for
    its model when there is one, else its recorded cost; None when neither is known."""
    params = agent_params or {}
    price = (params.get("prices") or {}).get(str(params.get("model") or ""))
    tokens = [r for r in pilot if r.usage.input_tokens or r.usage.output_tokens]
    costs = [r.usage.cost_usd for r in pilot if r.usage.cost_usd > 0]
    if price and tokens:
        return _priced(tokens, price), (f"the pilot's tokens per attempt ({len(tokens)} "
                                        f"attempts) at the agent's prices for "
                                        f"{params.get('model')}")
    if costs:
        return _mean(costs), f"the pilot's cost per attempt ({len(costs)} attempts)"
    return None


def projected_cost(records: Sequence[AttemptRecord], owed: int, *,
                   pilot: Sequence[AttemptRecord] = (),
                   agent_params: Mapping[str, Any] | None = None) -> str | None:
    """One line projecting the cost of ``owed`` attempts, or None when it cannot be known.

    Args:
        records: the run's own finished attempts (a resumed run).
        owed: attempts still to run.
        pilot: a pilot's finished attempts.
        agent_params: the agent's parameters (``model``, ``prices``).
    """
    if owed <= 0:
        return None
    costs = [r.usage.cost_usd for r in records if r.usage.cost_usd > 0]
    known = ((_mean(costs), f"mean of {len(costs)} finished attempts of this run") if costs
             else pilot_cost(pilot, agent_params))
    if known is None:
        return None
    per, how = known
    return (f"projected cost: ~${per * owed:,.2f} for {owed} owed attempts at ${per:.4f} per "
            f"attempt ({how})")
