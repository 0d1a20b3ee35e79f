"""Read attempts (fire-exp JSONL or a plain CSV) into one tidy frame, one row per attempt.

Replacement chains (JSONL): per (task, arm, replicate), in file order, keep the first *fair*
record; if none is fair keep the last one, scored as a failure. Records with
``valid=False`` are excluded from scoring and counted. Infrastructure failures stay in the
frame (flagged); the primary analysis scores them as failures.

Every attempt is checked as it is read (``fire_exp.analysis.validate``): rewards, arms and
cohorts against the plan, one cohort per task, one run per file unless ``merge_runs``.
Merged runs keep their replacement chains apart and number their replicates in turn.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.analysis.validate import Entry, check_entries
from fire_exp.errors import InputError
from fire_exp.records import AttemptRecord, ReadResult, RecordsFileError, read_records

__all__ = ["ATTEMPT_COLUMNS", "LoadedAttempts", "load_attempts", "loaded_from_records",
           "normalize_frame"]

KEY = ["task", "arm", "replicate"]
ATTEMPT_COLUMNS = [*KEY, "cohort", "reward", "passed", "cost_usd", "agent_seconds",
                   "infrastructure_failure", "gave_up", "cause", "no_fair_attempt",
                   "funnel_state", "funnel_fired", "funnel_behavior", "funnel_passed"]
FAMILY_COLUMNS = [*KEY, "cohort", "family", "state", "fired", "behavior", "passed"]
_TRUE = {"1", "true", "yes", "y", "t", "1.0"}
_FALSE = {"0", "false", "no", "n", "f", "0.0", ""}


@dataclass(frozen=True)
class LoadedAttempts:
    """The scored attempts plus what was left out and why.

    Attributes:
        attempts: one row per (task, arm, replicate), columns ``ATTEMPT_COLUMNS``.
        families: one row per (attempt, eligible family) of the family funnel.
        source: where the attempts came from.
        n_records: finished records (or CSV rows) read.
        n_invalid: records with ``valid=False``, excluded from scoring.
        n_superseded: records dropped by the replacement rule.
        torn_tail: the file's last line was torn by a crash and ignored.
        superseded: the records the replacement rule dropped (task, arm, replicate,
            cause), kept so error rates per arm count every failed attempt.
    """

    attempts: pd.DataFrame
    families: pd.DataFrame
    source: str
    n_records: int
    n_invalid: int
    n_superseded: int
    torn_tail: bool = False
    superseded: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=[*KEY, "cause"]))


def _tri(value: bool | None) -> float:
    return float("nan") if value is None else float(value)


def _select_chains(records: list[AttemptRecord],
                   ) -> tuple[list[tuple[AttemptRecord, bool]], list[AttemptRecord]]:
    chains: dict[tuple[str, str, str, int], list[AttemptRecord]] = {}
    for r in records:
        chains.setdefault((r.run, r.task, r.arm, r.replicate), []).append(r)
    chosen, dropped = [], []
    for chain in chains.values():
        fair = next((r for r in chain if r.fair), None)
        keep = fair if fair is not None else chain[-1]
        chosen.append((keep, fair is None))
        dropped += [r for r in chain if r is not keep]
    return chosen, dropped


def _renumber(chosen: list[tuple[AttemptRecord, bool]]) -> list[tuple[AttemptRecord, bool]]:
    """Number the replicates of merged runs 0, 1, ... per (task, arm), run by run."""
    runs = list(dict.fromkeys(r.run for r, _ in chosen))
    if len(runs) < 2:
        return chosen
    order = sorted(range(len(chosen)), key=lambda i: (runs.index(chosen[i][0].run),
                                                      chosen[i][0].replicate))
    count: dict[tuple[str, str], int] = {}
    out = list(chosen)
    for i in order:
        r, nf = chosen[i]
        n = count.get((r.task, r.arm), 0)
        count[(r.task, r.arm)] = n + 1
        out[i] = (r.model_copy(update={"replicate": n}), nf)
    return out


def _record_row(r: AttemptRecord, no_fair: bool) -> dict[str, object]:
    passed = bool(r.passed) and not no_fair
    return {
        "task": r.task, "arm": r.arm, "replicate": r.replicate, "cohort": r.cohort,
        "reward": 0.0 if no_fair or r.reward is None else float(r.reward), "passed": passed,
        "cost_usd": r.usage.cost_usd, "agent_seconds": r.timings.agent_s,
        "infrastructure_failure": r.infrastructure_failure, "gave_up": r.gave_up,
        "cause": r.cause.value if r.cause is not None else "", "no_fair_attempt": no_fair,
        "funnel_state": _tri(r.funnel.state), "funnel_fired": float(r.funnel.fired),
        "funnel_behavior": _tri(r.funnel.behavior), "funnel_passed": float(passed),
    }


def _load_jsonl(path: Path, plan: AnalysisPlan | None, merge_runs: bool) -> LoadedAttempts:
    try:
        read = read_records(path)
    except RecordsFileError as exc:
        raise InputError(exc.path, f"line {exc.line}, field '{exc.field}'",
                         str(exc).split(": ", 2)[-1], "fix or remove that line") from exc
    lines = read.lines or tuple(range(1, len(read.finished) + 1))
    check_entries(path, [Entry(n, r.task, r.arm, r.cohort, r.reward, r.passed, r.run)
                         for n, r in zip(lines, read.finished, strict=True)],
                  plan=plan, merge_runs=merge_runs, column="field")
    return loaded_from_records(read, path)


def loaded_from_records(read: ReadResult, path: Path | str) -> LoadedAttempts:
    """Score records already read from ``path`` (the report reads the file only once).

    Records of several runs keep their chains apart; their replicates are renumbered.
    """
    valid = [r for r in read.finished if r.valid]
    chosen, superseded = _select_chains(valid)
    chosen = _renumber(chosen)
    rows = [_record_row(r, nf) for r, nf in chosen]
    fam_rows = [{"task": r.task, "arm": r.arm, "replicate": r.replicate, "cohort": r.cohort,
                 "family": f.family, "state": _tri(f.state), "fired": float(f.fired),
                 "behavior": _tri(f.behavior), "passed": float(f.passed and not nf)}
                for r, nf in chosen for f in r.family_funnel]
    return LoadedAttempts(
        attempts=pd.DataFrame(rows, columns=ATTEMPT_COLUMNS),
        families=pd.DataFrame(fam_rows, columns=FAMILY_COLUMNS), source=str(path),
        n_records=len(read.finished), n_invalid=len(read.finished) - len(valid),
        n_superseded=len(superseded), torn_tail=read.torn_tail,
        superseded=pd.DataFrame([{"task": r.task, "arm": r.arm, "replicate": r.replicate,
                                  "cause": r.cause.value if r.cause else ""}
                                 for r in superseded], columns=[*KEY, "cause"]))


def _cell(path: Path, line: int, col: str, text: str, kind: str) -> object:
    where = f"line {line}, column '{col}'"
    t = (text or "").strip()
    if kind == "str":
        if not t:
            raise InputError(path, where, "is empty", "every attempt needs a value here")
        return t
    if kind == "int":
        try:
            return int(t)
        except ValueError:
            raise InputError(path, where, f"{t!r} is not a whole number") from None
    if kind in {"float", "reward"}:
        if not t and kind == "reward":
            raise InputError(path, where, "is empty", "every attempt needs its reward; an "
                             "attempt without one is a failure: write 0")
        try:
            v = float(t) if t else 0.0
        except ValueError:
            raise InputError(path, where, f"{t!r} is not a number") from None
        if not math.isfinite(v):
            raise InputError(path, where, f"{t!r} is not a finite number")
        return v
    if t.lower() in _TRUE:
        return True
    if t.lower() in _FALSE:
        return False
    raise InputError(path, where, f"{t!r} is not a boolean", "use 1/0 or true/false")


_CSV_KINDS = {"task": "str", "arm": "str", "replicate": "int", "cohort": "str",
              "run": "str", "reward": "reward", "passed": "bool", "cost_usd": "float",
              "agent_seconds": "float", "infrastructure_failure": "bool", "valid": "bool",
              "gave_up": "bool"}


def _csv_entry(line: int, row: dict[str, object], scale: tuple[float, float]) -> Entry:
    """The checked fields of a CSV row; a missing reward or passed column follows the other."""
    passed = bool(row["passed"]) if "passed" in row else float(row["reward"]) >= scale[1]  # type: ignore[arg-type]
    reward = float(row["reward"]) if "reward" in row else scale[int(passed)]  # type: ignore[arg-type]
    return Entry(line, str(row["task"]), str(row["arm"]), str(row.get("cohort", "all")),
                 reward, passed, str(row.get("run", "")))


def _load_csv(path: Path, plan: AnalysisPlan | None, merge_runs: bool) -> LoadedAttempts:
    scale = plan.reward_scale if plan is not None else (0.0, 1.0)
    high = scale[1]
    entries: list[Entry] = []
    # utf-8-sig: a spreadsheet's byte-order mark is not part of the first column's name
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in ("task", "arm", "replicate") if c not in header]
        if missing or not ({"reward", "passed"} & set(header)):
            need = missing or ["reward or passed"]
            raise InputError(path, "line 1 (header)", f"missing column(s) {need}",
                             "a CSV needs task, arm, replicate and reward or passed")
        rows: list[dict[str, object]] = []
        seen: dict[tuple[object, ...], int] = {}
        n_invalid = 0
        for raw in reader:
            line = reader.line_num
            if None in raw or any(v is None for v in raw.values()):
                raise InputError(path, f"line {line}", f"has a different number of cells "
                                 f"than the header's {len(header)}")
            row = {c: _cell(path, line, c, raw[c], k) for c, k in _CSV_KINDS.items()
                   if c in raw}
            if not row.get("valid", True):
                n_invalid += 1
                continue
            entries.append(_csv_entry(line, row, scale))
            key = (row.get("run", ""), row["task"], row["arm"], row["replicate"])
            if key in seen:
                raise InputError(path, f"line {line}, column 'replicate'",
                                 f"repeats task/arm/replicate of line {seen[key]}",
                                 "a CSV holds one scored row per attempt")
            seen[key] = line
            rows.append(row)
    check_entries(path, entries, plan=plan, merge_runs=merge_runs)
    columns = [c for c in _CSV_KINDS if c in header]
    frame = pd.DataFrame(rows, columns=columns)
    if "passed" not in frame and "reward" in frame:
        frame["passed"] = frame["reward"].astype(float) >= high
    if "run" in frame and frame["run"].nunique() > 1:
        runs = {r: i for i, r in enumerate(dict.fromkeys(frame["run"]))}
        frame = frame.assign(_run=frame["run"].map(runs)).sort_values(
            ["_run", "replicate"], kind="stable")
        frame["replicate"] = frame.groupby(["task", "arm"]).cumcount()
        frame = frame.drop(columns="_run").sort_index()
    frame = normalize_frame(frame.drop(columns=["run"], errors="ignore"))
    return LoadedAttempts(frame, pd.DataFrame(columns=FAMILY_COLUMNS), str(path),
                          len(rows) + n_invalid, n_invalid, 0)


def normalize_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Bring a user frame (CSV columns) to ``ATTEMPT_COLUMNS``, filling optional ones.

    ``passed`` defaults to ``reward >= 1``; ``reward`` defaults to ``passed``.
    """
    f = frame.copy()
    if "reward" not in f and "passed" not in f:
        raise ValueError("the attempts need a reward or a passed column")
    if "passed" not in f:
        f["passed"] = f["reward"].astype(float) >= 1.0
    if "reward" not in f:
        f["reward"] = f["passed"].astype(float)
    if "valid" in f:
        f = f[f["valid"].astype(bool)]
    defaults = {"cohort": "all", "cost_usd": 0.0, "agent_seconds": 0.0,
                "infrastructure_failure": False, "gave_up": False, "cause": "",
                "no_fair_attempt": False, "funnel_state": np.nan, "funnel_fired": 0.0,
                "funnel_behavior": np.nan}
    for col, default in defaults.items():
        if col not in f:
            f[col] = default
    f["passed"] = f["passed"].astype(bool)
    f["funnel_passed"] = f["passed"].astype(float)
    f["replicate"] = f["replicate"].astype(int)
    return f[ATTEMPT_COLUMNS].reset_index(drop=True)


def load_attempts(path: Path | str, plan: AnalysisPlan | None = None, *,
                  merge_runs: bool = False) -> LoadedAttempts:
    """Load a JSONL attempts file, a CSV, or a run folder holding ``attempts.jsonl``.

    Args:
        path: the attempts file or run folder.
        plan: check arms, cohorts and the reward scale against it (None: rewards in [0, 1]).
        merge_runs: pool the attempts of several runs in one file (else refused).

    Raises:
        InputError: missing file, malformed line or value breaking a rule (names the line
            and the field or column, and what to do).
    """
    path = Path(path)
    if path.is_dir():
        path = path / "attempts.jsonl"
    if not path.is_file():
        raise InputError(path, "<file>", "no such attempts file",
                         "pass a run folder with attempts.jsonl, a .jsonl or a .csv file")
    if path.suffix.lower() == ".csv":
        return _load_csv(path, plan, merge_runs)
    return _load_jsonl(path, plan, merge_runs)
