"""Read attempts (fire-exp JSONL here, a plain CSV in ``load_csv``) into the tidy frame of
``analysis/frame.py``, one row per attempt.

Replacement chains (JSONL): per (task, arm, replicate), in file order, keep the first *fair*
record; if none is fair keep the last one, scored as a failure. Records with
``valid=False`` are excluded from scoring and counted. Infrastructure failures stay in the
frame (flagged); the primary analysis scores them as failures.

Every attempt is checked as it is read (``fire_exp.analysis.validate``): rewards, arms and
cohorts against the plan, one cohort per task, one run per file unless ``merge_runs``.
Merged runs keep their replacement chains apart and number their replicates in turn.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fire_exp.analysis.frame import (
    ATTEMPT_COLUMNS,
    FAMILY_COLUMNS,
    KEY,
    LoadedAttempts,
    normalize_frame,
)
from fire_exp.analysis.load_csv import load_csv
from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.analysis.validate import Entry, check_entries, frame_is_clean
from fire_exp.errors import InputError
from fire_exp.records import AttemptRecord, ReadResult, read_records

# The frame's names (analysis/frame.py) are named here too: the loaders' public face.
__all__ = ["ATTEMPT_COLUMNS", "LoadedAttempts", "check_records", "load_attempts",
           "loaded_from_records", "normalize_frame", "validate_attempts"]


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


def _read(path: Path) -> ReadResult:
    return read_records(path)  # a malformed line is a RecordsFileError (an InputError)


def check_records(path: Path | str, read: ReadResult, plan: AnalysisPlan | None, *,
                  merge_runs: bool = False) -> None:
    """Check records already read from ``path`` against ``plan`` (see ``validate``).

    Raises:
        InputError: the first record breaking a rule, by line and field.
    """
    lines = read.lines or tuple(range(1, len(read.finished) + 1))
    check_entries(Path(path), [Entry(n, r.task, r.arm, r.cohort, r.reward, r.passed, r.run)
                               for n, r in zip(lines, read.finished, strict=True)],
                  plan=plan, merge_runs=merge_runs, column="field")


def validate_attempts(path: Path | str, plan: AnalysisPlan, *, merge_runs: bool = False,
                      read: ReadResult | None = None,
                      loaded: LoadedAttempts | None = None) -> None:
    """Check an attempts file against a plan chosen after it was read.

    For callers that read a run before they know its plan (the plan frozen with the run):
    call this once the plan is chosen; ``read`` spares a JSONL file a second read, and
    ``loaded`` (a CSV already loaded) spares a clean CSV one: only a CSV the plan refuses
    is read again, row by row, to name the first offending line.

    Raises:
        InputError: the first attempt breaking a rule, by line and field or column.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        # The run-per-file rule was applied at load; the plan's rules remain.
        if loaded is not None and frame_is_clean(loaded.attempts, plan=plan, merge_runs=True):
            return
        load_csv(path, plan, merge_runs)
        return
    check_records(path, read if read is not None else _read(path), plan,
                  merge_runs=merge_runs)


def _load_jsonl(path: Path, plan: AnalysisPlan | None, merge_runs: bool) -> LoadedAttempts:
    read = _read(path)
    check_records(path, read, plan, merge_runs=merge_runs)
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
                                 for r in superseded], columns=[*KEY, "cause"]),
        coding_errors=sum(1 for r, _ in chosen if r.coding_errors))


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
        return load_csv(path, plan, merge_runs)
    return _load_jsonl(path, plan, merge_runs)
