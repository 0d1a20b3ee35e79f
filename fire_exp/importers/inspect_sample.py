"""One inspect_ai sample (one epoch of one dataset sample) as one fire-exp attempt record.

What each field comes from (docs/importers.md has the table): the reward is the named
scorer's value mapped as inspect_ai's ``value_to_float`` documents it (``C`` 1, ``P`` 0.5,
``I`` and ``N`` 0, ``yes``/``true`` 1, ``no``/``false`` 0, numbers and numeric strings as
themselves), except that a value it would turn into 0 with a warning (a list, a dict, any
other string) is refused by name here: a silent 0 would make a pass rate wrong. The cause
comes from the sample's ``error`` (its exception type, classified as Harbor's are) or its
``limit`` (:data:`LIMIT_CAUSES`); tokens and time from ``model_usage``, ``total_time`` and
``working_time``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.importers.harbor import cause_for
from fire_exp.records import AttemptRecord, Cause, Timings, Usage

__all__ = ["LIMIT_CAUSES", "Placement", "SampleRef", "Scorer", "cause_of", "digest",
           "sample_record", "score_value"]

# inspect_ai's EvalSampleLimit.type → cause. The limit ended the agent's turn; inspect_ai
# still scores the sample, so its reward is kept (as an agent timeout's is).
LIMIT_CAUSES = {"time": Cause.AGENT_TIMEOUT, "working": Cause.AGENT_TIMEOUT,
                "context": Cause.AGENT_CONTEXT_EXCEEDED, "token": Cause.AGENT_STEP_LIMIT,
                "message": Cause.AGENT_STEP_LIMIT, "turn": Cause.AGENT_STEP_LIMIT,
                "cost": Cause.AGENT_STEP_LIMIT, "custom": Cause.AGENT_STEP_LIMIT,
                "operator": Cause.CANCELLED}
_LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}  # CORRECT, PARTIAL, INCORRECT, NOANSWER
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
_EXCEPTION = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(\(|:|$)")


@dataclass(frozen=True)
class SampleRef:
    """Where a sample is, for messages: its log file, id and epoch."""

    path: Path
    id: str
    epoch: int

    def where(self, field: str) -> str:
        """``sample ID epoch N: FIELD``, the field part of an InputError."""
        return f"sample {self.id!r} epoch {self.epoch}: {field}"


@dataclass(frozen=True)
class Scorer:
    """The score a reward is read from: a scorer's name and, for a scorer whose value is a
    dict (several metrics in one score), the key."""

    name: str
    key: str | None = None

    def __str__(self) -> str:
        return self.name if self.key is None else f"{self.name}.{self.key}"


def score_value(value: Any, ref: SampleRef, scorer: Scorer) -> float:
    """A score value as a reward (module docstring); anything else refused by name.

    >>> ref = SampleRef(Path("x.eval"), "a", 1)
    >>> [score_value(v, ref, Scorer("s")) for v in ("C", "P", "I", "N", "yes", "0.25", 3, True)]
    [1.0, 0.5, 0.0, 0.0, 1.0, 0.25, 3.0, 1.0]
    """
    if scorer.key is not None:
        if not isinstance(value, dict) or scorer.key not in value:
            keys = ", ".join(sorted(value)) if isinstance(value, dict) else "none: not a dict"
            raise InputError(ref.path, ref.where(f"scores.{scorer.name}.value"),
                             f"has no key {scorer.key!r} (keys: {keys})",
                             "name a key the scorer writes: --scorer NAME.KEY")
        value = value[scorer.key]
    if isinstance(value, str) and value in _LETTERS:
        return _LETTERS[value]
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _WORDS:
            return _WORDS[text]
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
    fix = (f"name one of its keys: --scorer {scorer.name}.KEY (keys: "
           f"{', '.join(sorted(value))})" if isinstance(value, dict) else
           "use a scorer whose values are C/I/P/N, yes/no, true/false or numbers")
    raise InputError(ref.path, ref.where(f"scores.{scorer}"),
                     f"value {value!r:.80} cannot be mapped to a reward", fix)


def cause_of(sample: dict[str, Any], ref: SampleRef) -> Cause | None:
    """The cause of a sample: its error first (the exception type in the message, as
    Harbor's exception types), else its limit, else None."""
    error = sample.get("error")
    if isinstance(error, dict):
        match = _EXCEPTION.match(str(error.get("message") or ""))
        return cause_for(match.group(1).rsplit(".", 1)[-1] if match else "Error")
    limit = sample.get("limit")
    if isinstance(limit, dict):
        kind = limit.get("type")
        if kind not in LIMIT_CAUSES:
            raise InputError(ref.path, ref.where("limit.type"), f"unknown limit {kind!r}",
                             f"known: {', '.join(LIMIT_CAUSES)}; a newer inspect_ai may need "
                             "a newer fire-exp")
        return LIMIT_CAUSES[kind]
    return None


def _count(value: Any, ref: SampleRef, field: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value < 0:
        raise InputError(ref.path, ref.where(field), f"expected a number of 0 or more, got "
                         f"{value!r:.60}", "fix or regenerate the log")
    return float(value)


def _usage(sample: dict[str, Any], ref: SampleRef, model: str | None) -> Usage:
    """Token counts and cost summed over every model the sample used."""
    totals = {"input_tokens": 0.0, "output_tokens": 0.0, "input_tokens_cache_read": 0.0,
              "total_cost": 0.0}
    usage = sample.get("model_usage") or {}
    for name, per_model in (usage.items() if isinstance(usage, dict) else []):
        for key in totals:
            value = per_model.get(key) if isinstance(per_model, dict) else None
            totals[key] += _count(value, ref, f"model_usage.{name}.{key}")
    return Usage(input_tokens=int(totals["input_tokens"]),
                 output_tokens=int(totals["output_tokens"]),
                 cached_input_tokens=int(totals["input_tokens_cache_read"]),
                 cost_usd=totals["total_cost"], model=model)


def digest(sample: dict[str, Any]) -> str:
    """A digest of what the sample asked (its input and target), so the same task can be
    recognised under each arm."""
    text = json.dumps([sample.get("input"), sample.get("target")], sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Placement:
    """Where a sample goes in the panel: run, task, arm, cohort, the reward threshold."""

    run: str
    task: str
    arm: str
    cohort: str
    pass_threshold: float
    agent: str
    environment: str
    model: str | None
    versions: dict[str, str]


def sample_record(sample: dict[str, Any], ref: SampleRef, scorer: Scorer,
                  place: Placement) -> AttemptRecord:
    """The attempt record of one sample (module docstring)."""
    score = (sample.get("scores") or {}).get(scorer.name)
    value = score.get("value") if isinstance(score, dict) else None
    reward = None if value is None else score_value(value, ref, scorer)
    cause = cause_of(sample, ref) or (Cause.VERIFIER_FAILED if reward is None else None)
    error = sample.get("error")
    invalid = sample.get("invalidation")
    return AttemptRecord(
        run=place.run, panel="inspect", attempt_id=f"{ref.path.name}:{ref.id}:{ref.epoch}",
        task=place.task, task_digest=digest(sample), cohort=place.cohort, arm=place.arm,
        replicate=ref.epoch - 1, order=0, seed=0, agent=place.agent,
        environment=place.environment, reward=reward,
        passed=reward is not None and reward >= place.pass_threshold, cause=cause,
        error=str(error.get("message")) if isinstance(error, dict) else None,
        valid=invalid is None, invalid_reason=None if invalid is None else
        str(invalid.get("reason") if isinstance(invalid, dict) else invalid),
        timings=Timings(agent_s=_count(sample.get("working_time"), ref, "working_time"),
                        total_s=_count(sample.get("total_time"), ref, "total_time")),
        usage=_usage(sample, ref, place.model), versions=place.versions,
        started_at=str(sample.get("started_at") or ""),
        finished_at=str(sample.get("completed_at") or ""), log_dir=str(ref.path))
