"""The attempt record: the one contract between the panel runner and the analysis.

One JSON line per finished attempt in ``results/PANEL/RUN/attempts.jsonl``. The runner
writes these lines; the analysis reads only them (and the analysis plan). This module sits
at the bottom of the import graph: it imports nothing from fire_exp but its errors.

A line carries ``"kind": "finished"`` (an attempt that ended, whatever its outcome) or
``"kind": "started"`` (written when an attempt begins, so the store shows what was in
flight). Readers that analyse outcomes keep only finished records.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from fire_exp.errors import InputError
from fire_exp.files import control_character, parse_json, unknown_key_message

SCHEMA_VERSION = 1


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds (every timestamp fire-exp writes)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Cause(StrEnum):
    """Why an attempt did not end with a verifier reward from a completed agent phase.

    Follows Harbor's classification (reference/harbor-tasks.md). The sets below are the
    only classification of causes in fire-exp: whose failure a cause is, whether the model
    had a fair attempt, whether the verifier still runs, and what may be replaced.
    """

    ENVIRONMENT_FAILED = "environment_failed"  # image build, container start, setup script
    PROVIDER_FAILED = "provider_failed"  # model provider error before the agent acted
    HARNESS_FAILED = "harness_failed"  # a fault in fire-exp itself
    AGENT_TIMEOUT = "agent_timeout"  # agent exhausted its time budget (verifier still runs)
    AGENT_STEP_LIMIT = "agent_step_limit"  # agent exhausted its step budget
    AGENT_ERROR = "agent_error"  # the agent crashed after acting
    AGENT_CONTEXT_EXCEEDED = "agent_context_exceeded"  # the conversation outgrew the model
    VERIFIER_FAILED = "verifier_failed"  # no reward file, empty or malformed reward
    VERIFIER_TIMEOUT = "verifier_timeout"
    CANCELLED = "cancelled"  # interrupted by the user; never scored, rerun on resume


# The agent's own failures: an attempt ending so was a fair attempt, scored as a failure.
AGENT_CAUSES = frozenset({Cause.AGENT_TIMEOUT, Cause.AGENT_STEP_LIMIT, Cause.AGENT_ERROR,
                          Cause.AGENT_CONTEXT_EXCEEDED})
# The agent phase never gave the model a fair attempt, so there is nothing to verify.
NO_VERIFIER_CAUSES = frozenset(
    {Cause.ENVIRONMENT_FAILED, Cause.PROVIDER_FAILED, Cause.HARNESS_FAILED})
# Causes that leave no fair model attempt (the analysis keeps a chain's first fair one).
UNFAIR_CAUSES = NO_VERIFIER_CAUSES | {Cause.CANCELLED}
# What a panel's replacement rule may name: a cancelled attempt is never written as
# finished (it reruns on resume), so it cannot be replaced.
REPLACEABLE_CAUSES = NO_VERIFIER_CAUSES
# Failures outside the agent's control (the analysis's sensitivity rows leave them out).
INFRASTRUCTURE_CAUSES = frozenset(Cause) - AGENT_CAUSES
# Timeouts, the agent's or the verifier's (the suite table counts them apart from crashes).
TIMEOUT_CAUSES = frozenset({Cause.AGENT_TIMEOUT, Cause.VERIFIER_TIMEOUT})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def _as_cause(value: Any) -> Any:
    """A cause read from a file (a string) as :class:`Cause`: the records are validated
    strictly (a reward ``true`` or ``"1"`` is not a number), and strict validation takes
    an enum only as itself."""
    if isinstance(value, str):
        try:
            return Cause(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a cause fire-exp knows (one of "
                             f"{', '.join(c.value for c in Cause)})") from None
    return value


class Funnel(_Model):
    """FIRE's attempt-level funnel: risky state → fired → registered behavior → pass.

    ``state`` and ``behavior`` come from the coding portfolio's deterministic extractors,
    applied identically in every arm; ``None`` means not applicable (no family is eligible
    on the task, or the family's marker cannot be coded from the command log).
    """

    state: bool | None = None
    fired: bool = False
    behavior: bool | None = None
    passed: bool = False


class FamilyFunnel(Funnel):
    """The funnel of one eligible family of the coding portfolio."""

    family: str


class Timings(_Model):
    """Wall-clock seconds of each phase."""

    environment_s: float = 0.0
    agent_s: float = 0.0
    verifier_s: float = 0.0
    total_s: float = 0.0


class Usage(_Model):
    """What the agent consumed. Simulated agents report modelled tokens and cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None
    route: str | None = None  # the provider's model/route identifier
    cached_input_tokens: int = 0  # of input_tokens, those served from the provider's cache
    model_calls: int = 0  # completed model calls (0: the agent does not report them)
    malformed_tool_calls: int = 0  # tool calls the model got wrong; answered as tool errors


class Lineage(_Model):
    """Replacement chain under the frozen replacement rule."""

    replaces: str | None = None
    replaced_by: str | None = None
    cause: str | None = None


class AttemptRecord(_Model):
    """One finished attempt: one agent on one task under one arm, ending in a reward."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["finished"] = "finished"
    run: str
    panel: str
    attempt_id: str
    task: str
    task_digest: str
    cohort: str  # "eligible" or "silent" as preregistered
    families: list[str] = Field(default_factory=list)  # eligible families (coding portfolio)
    arm: str
    replicate: int
    order: int  # position of the arm within its (replicate, task) block
    seed: int
    agent: str
    tier: str | None = None
    environment: str
    reward: float | None = Field(allow_inf_nan=False)  # None: no reward read (see cause)
    passed: bool
    cause: Annotated[Cause | None, BeforeValidator(_as_cause)] = None
    error: str | None = None
    gave_up: bool = False
    valid: bool = True
    invalid_reason: str | None = None
    funnel: Funnel = Field(default_factory=Funnel)
    family_funnel: list[FamilyFunnel] = Field(default_factory=list)
    # Coding-portfolio families whose extractor (or eligibility) raised: family -> error.
    # Such a family stays in family_funnel with state and behavior None.
    coding_errors: dict[str, str] = Field(default_factory=dict)
    events: int = 0  # policy events raised during the agent phase
    decisions: int = 0  # non-allow policy decisions
    n_commands: int = 0
    timings: Timings = Field(default_factory=Timings)
    usage: Usage = Field(default_factory=Usage)
    lineage: Lineage = Field(default_factory=Lineage)
    config_hash: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    started_at: str = ""
    finished_at: str = ""
    log_dir: str = ""  # relative to the run folder
    node: str | None = None  # the Ray node that ran it (executor=ray on a cluster), by name
    # What bringing the box's files home left out or changed, one line each: unsafe
    # members (links out of the folder, FIFOs, devices), what passed the fetch cap, names
    # the redaction renamed. The agent's own doing: the attempt stays as it ended.
    withheld: list[str] = Field(default_factory=list)
    # The task's network_mode when its box did not enforce it (local, run with
    # environment.allow_network=true); written only then (record_to_line).
    network_not_enforced: str | None = None

    @property
    def fair(self) -> bool:
        """Whether the model had a fair attempt (the replacement rule keeps these)."""
        return self.cause not in UNFAIR_CAUSES

    @property
    def infrastructure_failure(self) -> bool:
        """Whether the attempt failed for a reason outside the agent's control."""
        return self.cause in INFRASTRUCTURE_CAUSES


class StartedRecord(_Model):
    """Written when an attempt begins; a started line without a finished one was in flight."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["started"] = "started"
    run: str
    attempt_id: str
    task: str
    arm: str
    replicate: int
    started_at: str


class RecordsFileError(InputError, ValueError):
    """A malformed attempts file: names the file, the line and the field.

    An :class:`InputError`, so the CLI prints it as one line without converting it;
    ``line`` is the line number and ``field`` the record's field (not the whole location).
    """

    def __init__(self, path: Path | str, line: int, field: str, message: str,
                 fix: str = "fix or remove that line") -> None:
        super().__init__(path, f"line {line}, field '{field}'", message, fix)
        self.line, self.field = line, field


@dataclass(frozen=True)
class ReadResult:
    """Records read from an attempts file, plus what a crash left behind."""

    finished: list[AttemptRecord]
    started: list[StartedRecord]
    torn_tail: bool  # the last line was incomplete (a crash mid-write) and was ignored
    lines: tuple[int, ...] = ()  # the line number of each finished record, when read


def record_to_line(record: AttemptRecord | StartedRecord) -> str:
    """Serialise a record as one JSON line (keys in schema order, no trailing newline);
    ``network_not_enforced`` only where the network was not enforced."""
    data = record.model_dump(mode="json")
    if data.get("network_not_enforced", "") is None:
        del data["network_not_enforced"]
    return json.dumps(data, separators=(",", ":"), allow_nan=False)


def append_records(path: Path, records: Iterable[AttemptRecord | StartedRecord]) -> None:
    """Append records to ``path`` and fsync, so a finished attempt survives a crash."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        for record in records:
            fh.write(record_to_line(record) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


# The fields that name things: a control character in one makes a task (or arm) of its own.
_NAMES = ("run", "panel", "attempt_id", "task", "arm", "cohort")


def _parse_line(path: Path, lineno: int, text: str) -> AttemptRecord | StartedRecord:
    try:
        raw = parse_json(text, path)
    except InputError as exc:
        raise RecordsFileError(path, lineno, "<json>", exc.problem) from None
    if not isinstance(raw, dict):
        raise RecordsFileError(path, lineno, "<json>", "expected a JSON object per line")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
        raise RecordsFileError(path, lineno, "schema_version",
                               f"is {version!r}; this fire-exp reads version {SCHEMA_VERSION}")
    model = StartedRecord if raw.get("kind") == "started" else AttemptRecord
    try:  # strictly: a reward true or "1", a replicate 1.0, passed "true" are not values
        record = model.model_validate(raw, strict=True)
    except ValidationError as exc:
        errors = exc.errors()
        # a misspelt field is both missing and unknown: name the typo and the field meant
        err = next((e for e in errors if e["type"] == "extra_forbidden"
                    and "did you mean" in _unknown(model, e["loc"])), errors[0])
        field = ".".join(str(p) for p in err["loc"]) or "<record>"
        message = _unknown(model, err["loc"]) if err["type"] == "extra_forbidden" \
            else err["msg"]
        raise RecordsFileError(path, lineno, field, message) from exc
    for name in _NAMES:
        control = control_character(str(getattr(record, name, "")))
        if control:
            raise RecordsFileError(path, lineno, name, f"{getattr(record, name)!r} {control}")
    if isinstance(record, StartedRecord):
        _check_amount(path, lineno, "replicate", record.replicate)
        return record
    if record.cause in NO_VERIFIER_CAUSES \
            and (record.passed or record.reward not in (None, 0.0)):
        raise RecordsFileError(path, lineno, "reward", f"is {record.reward}, passed "
                               f"{str(record.passed).lower()}, but cause "
                               f"{record.cause.value!r} means no verifier ran (no reward)")
    for field, value in _amounts(record):
        _check_amount(path, lineno, field, value)
    _check_lineage(path, lineno, record)
    return record


# Counts, seconds, tokens and dollars: a negative or NaN one reads as a cost or a time
# (a cost of -5 made an arm's cost per success negative; a NaN cost was summed as 0).
_COUNTS = ("replicate", "order", "seed", "events", "decisions", "n_commands")


def _amounts(record: AttemptRecord) -> Iterator[tuple[str, int | float]]:
    for name in _COUNTS:
        yield name, getattr(record, name)
    for part in ("timings", "usage"):
        model = getattr(record, part)
        for name, value in model:
            if isinstance(value, int | float):
                yield f"{part}.{name}", value


def _check_amount(path: Path, lineno: int, field: str, value: int | float) -> None:
    if not math.isfinite(value) or value < 0:
        raise RecordsFileError(path, lineno, field, f"is {value}; a count, a time or a cost "
                               "is a finite number of 0 or more")


def _check_lineage(path: Path, lineno: int, record: AttemptRecord) -> None:
    """A chain links ``ID``, ``ID#1``, ``ID#2``…: a record names its own successor and
    predecessor only (a record naming itself once made a resume loop for ever)."""
    base, sep, suffix = record.attempt_id.partition("#")
    number = int(suffix) if sep and suffix.isdecimal() and suffix.isascii() else 0
    links = (("lineage.replaced_by", record.lineage.replaced_by, f"{base}#{number + 1}"),
             ("lineage.replaces", record.lineage.replaces,
              None if not sep else base if number == 1 else f"{base}#{number - 1}"))
    for field, named, expected in links:
        if named is not None and named != expected:
            meant = f"{expected!r}" if expected else "nothing (an original replaces none)"
            raise RecordsFileError(path, lineno, field, f"{named!r} is not the link of "
                                   f"{record.attempt_id!r} in its chain: it can only be "
                                   f"{meant}")


def _unknown(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    return unknown_key_message(str(loc[-1]), _fields_at(model, loc))


def _fields_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The field names of the (nested) model an error location points into."""
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        inner = getattr(field, "annotation", None) if field is not None else None
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return []
        model = inner
    return list(model.model_fields)


def iter_lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """Yield (line number, text, complete) for each non-empty line of ``path``."""
    with open(path, "rb") as fh:  # decoded line by line, so a bad byte names its line
        for lineno, data in enumerate(fh, start=1):
            try:  # -sig: a BOM some editors add is no data
                text = data.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                if not data.endswith(b"\n"):  # a torn last line, cut inside a character
                    text = data.decode("utf-8", errors="replace")
                else:
                    raise RecordsFileError(path, lineno, "<text>", "is not UTF-8 text",
                                           "save the file as UTF-8") from None
            complete = text.endswith("\n")
            if text.strip():
                yield lineno, text.rstrip("\n"), complete


def read_records(path: Path | str) -> ReadResult:
    """Read an attempts file, tolerating only a torn final line (a crash mid-append).

    Raises:
        RecordsFileError: a complete line is malformed; the message names line and field.
        FileNotFoundError: the file does not exist.
    """
    path = Path(path)
    finished: list[AttemptRecord] = []
    started: list[StartedRecord] = []
    torn = False
    lines: list[int] = []
    for lineno, text, complete in iter_lines(path):
        if not complete:
            # Only the last line can lack its newline; if it does not parse it was torn.
            try:
                record = _parse_line(path, lineno, text)
            except RecordsFileError:
                torn = True
                continue
        else:
            record = _parse_line(path, lineno, text)
        if isinstance(record, StartedRecord):
            started.append(record)
        else:
            finished.append(record)
            lines.append(lineno)
    return ReadResult(finished=finished, started=started, torn_tail=torn, lines=tuple(lines))
