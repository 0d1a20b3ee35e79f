"""Reading a plain CSV of attempts (one scored row per attempt), checked as it is read.

Columns: ``task``, ``arm``, ``replicate`` and ``reward`` or ``passed`` are required;
``cohort``, ``run``, ``cost_usd``, ``agent_seconds``, ``infrastructure_failure``, ``valid``
and ``gave_up`` are optional. A byte-order mark is ignored. Large files take a vectorized
path; a file it finds fault with is read again row by row, so the error names the line.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from fire_exp.analysis.frame import FAMILY_COLUMNS, LoadedAttempts, normalize_frame
from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.analysis.validate import Entry, check_columns, check_entries, frame_is_clean
from fire_exp.errors import InputError
from fire_exp.files import INVISIBLE, control_character, read_text

__all__ = ["load_csv"]

_TRUE = {"1", "true", "yes", "y", "t", "1.0"}
_FALSE = {"0", "false", "no", "n", "f", "0.0"}  # an empty cell is neither: refused
_REQUIRED = ("task", "arm", "replicate")
_CONTROL = r"[\x00-\x1f\x7f-\x9f]"  # a name holding one is refused row by row
# Numbers as a spreadsheet writes them, in ASCII digits (pandas reads the same, no more)
_WHOLE = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _cell(path: Path, line: int, col: str, text: str, kind: str) -> object:
    where = f"line {line}, column '{col}'"
    t = (text or "").strip()
    if kind in ("str", "name"):
        if not t:
            raise InputError(path, where, "is empty", "every attempt needs a value here")
        control = control_character(t)
        if control:
            raise InputError(path, where, f"{t!r} {control}", "fix the name")
        return t
    if kind == "int":
        # int() reads '1_0' as 10 and '١' (Arabic-Indic) as 1; '1.0' is read as the
        # CSV reader of the fast path reads it
        whole = _WHOLE.fullmatch(t) or (_DECIMAL.fullmatch(t) and float(t).is_integer())
        if not whole:
            raise InputError(path, where, f"{t!r} is not a whole number")
        if float(t) < 0:
            raise InputError(path, where, f"{t} is negative", "replicates count from 0")
        return int(float(t)) if not _WHOLE.fullmatch(t) else int(t)
    if kind in {"float", "reward"}:
        if not t:
            raise InputError(path, where, "is empty", "every attempt needs its reward; an "
                             "attempt without one is a failure: write 0" if kind == "reward"
                             else "write the attempt's value (0 if it had none), or leave "
                             "the column out")
        if not _DECIMAL.fullmatch(t):  # float() reads '0_1' as 1.0
            if t.lower().lstrip("+-") in ("nan", "inf", "infinity"):
                raise InputError(path, where, f"{t!r} is not a finite number")
            raise InputError(path, where, f"{t!r} is not a number")
        v = float(t)
        if not math.isfinite(v):
            raise InputError(path, where, f"{t!r} is not a finite number")
        if kind == "float" and v < 0:
            raise InputError(path, where, f"{t} is negative", "a cost or a time is 0 or more")
        return v
    if t.lower() in _TRUE:
        return True
    if t.lower() in _FALSE:
        return False
    if not t:
        raise InputError(path, where, "is empty (an empty cell is not false)",
                         "write true or false for every attempt")
    raise InputError(path, where, f"{t!r} is not a boolean", "use 1/0 or true/false")


# "name": text read as a category (grouped by its code from here on); "str": text.
_CSV_KINDS = {"task": "name", "arm": "name", "replicate": "int", "cohort": "name",
              "run": "str", "reward": "reward", "passed": "bool", "cost_usd": "float",
              "agent_seconds": "float", "infrastructure_failure": "bool", "valid": "bool",
              "gave_up": "bool"}


def _csv_entry(line: int, row: dict[str, object], scale: tuple[float, float]) -> Entry:
    """The checked fields of a CSV row; a missing reward or passed column follows the other."""
    passed = bool(row["passed"]) if "passed" in row else float(row["reward"]) >= scale[1]  # type: ignore[arg-type]
    reward = float(row["reward"]) if "reward" in row else scale[int(passed)]  # type: ignore[arg-type]
    return Entry(line, str(row["task"]), str(row["arm"]), str(row.get("cohort", "all")),
                 reward, passed, str(row.get("run", "")))


def _load_rows(path: Path, plan: AnalysisPlan | None, merge_runs: bool) -> LoadedAttempts:
    """Row by row: every cell parsed and checked, the first fault named by line."""
    scale = plan.reward_scale if plan is not None else (0.0, 1.0)
    high = scale[1]
    entries: list[Entry] = []
    # utf-8-sig: a spreadsheet's byte-order mark is not part of the first column's name
    with io.StringIO(read_text(path), newline="") as fh:  # a byte not UTF-8 names its line
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        check_columns(path, header, _CSV_KINDS)
        missing = [c for c in _REQUIRED if c not in header]
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
    return _loaded(path, frame, len(rows) + n_invalid, n_invalid)


def _loaded(path: Path, frame: pd.DataFrame, n_rows: int, n_invalid: int) -> LoadedAttempts:
    """Scored attempts of checked rows; merged runs number their replicates in turn."""
    if "run" in frame and frame["run"].nunique() > 1:
        runs = {r: i for i, r in enumerate(dict.fromkeys(frame["run"]))}
        frame = frame.assign(_run=frame["run"].map(runs)).sort_values(
            ["_run", "replicate"], kind="stable")
        frame["replicate"] = frame.groupby(["task", "arm"]).cumcount()
        frame = frame.drop(columns="_run").sort_index()
    frame = normalize_frame(frame.drop(columns=["run"], errors="ignore"))
    return LoadedAttempts(frame, pd.DataFrame(columns=FAMILY_COLUMNS), str(path), n_rows,
                          n_invalid, 0)


def _fast_column(column: pd.Series, kind: str) -> np.ndarray | pd.Categorical | None:
    """One column parsed by the CSV reader (numbers, true/false) or through its distinct
    cells (few, even in a large file), or None."""
    numeric = column.dtype.kind in "iuf"
    if kind in ("reward", "float", "int") and numeric:
        parsed: np.ndarray = column.to_numpy(dtype=float)
        if not np.all(np.isfinite(parsed)) or (kind != "reward" and np.any(parsed < 0)):
            return None  # row by row names the cell (a reward outside the scale later)
        if kind == "int":
            return parsed.astype(np.int64) if np.all(parsed == np.rint(parsed)) else None
        return parsed
    if kind == "bool" and column.dtype.kind == "b":
        flags: np.ndarray = column.to_numpy(dtype=bool)
        return flags
    if kind not in ("str", "name"):  # a cell the reader left as text: read distinct cells
        column = column.astype(str)
    codes, uniques = pd.factorize(column)
    text = pd.Series(uniques, dtype=object).str.strip()
    if kind in ("str", "name"):
        if not bool((text != "").all()) or text.str.contains(_CONTROL).any() \
                or text.str.contains(INVISIBLE.pattern).any():
            return None
        if kind == "str":
            return text.to_numpy(dtype=object)[codes]
        # categories in sorted order, as pandas would make them
        names, place = np.unique(text.to_numpy(dtype=object), return_inverse=True)
        return pd.Categorical.from_codes(place[codes], categories=names)
    if kind == "bool":
        low = text.str.lower()
        values: np.ndarray = low.isin(_TRUE).to_numpy()
        ok = bool(low.isin(_TRUE | _FALSE).all())
    else:
        if (text == "").any():  # an empty number is not 0: refused row by row
            return None
        values = pd.to_numeric(text, errors="coerce").to_numpy(float)
        ok = bool(np.all(np.isfinite(values))) and (kind == "reward" or bool(np.all(values >= 0)))
        if kind == "int":
            ok = ok and bool(np.all(values == np.rint(values)))
            values = values.astype(np.int64) if ok else values
    return values[codes] if ok else None


def _fast(path: Path, plan: AnalysisPlan | None, merge_runs: bool) -> LoadedAttempts | None:
    """The whole file at once, or None when any cell needs a closer look."""
    try:
        # Names stay text ("007" is not 7); the reader parses numbers and true/false.
        text = {c: str for c, k in _CSV_KINDS.items() if k in ("str", "name")}
        raw = pd.read_csv(path, dtype=text, keep_default_na=False, encoding="utf-8-sig")
    except (ValueError, UnicodeDecodeError):  # ragged rows, bad encoding: row by row
        return None
    header = list(raw.columns)
    check_columns(path, header, _CSV_KINDS)
    if raw.isna().to_numpy().any() or not all(c in header for c in _REQUIRED) \
            or not ({"reward", "passed"} & set(header)):
        return None
    frame = pd.DataFrame(index=raw.index)
    for col, kind in _CSV_KINDS.items():
        if col in raw:
            parsed = _fast_column(raw[col], kind)
            if parsed is None:
                return None
            frame[col] = parsed
    n_rows = len(frame)
    if "valid" in frame:
        frame = frame[frame["valid"]].drop(columns="valid")
    key = [c for c in ("run", "task", "arm", "replicate") if c in frame]
    if frame.duplicated(key).any():
        return None
    scale = plan.reward_scale if plan is not None else (0.0, 1.0)
    checked = frame.assign(
        reward=frame["reward"] if "reward" in frame else np.where(frame["passed"], *scale[::-1]),
        passed=frame["passed"] if "passed" in frame else frame["reward"] >= scale[1],
        cohort=frame["cohort"] if "cohort" in frame else "all")
    if not frame_is_clean(checked, plan=plan, merge_runs=merge_runs):
        return None
    if "passed" not in frame:
        frame["passed"] = checked["passed"]
    return _loaded(path, frame.reset_index(drop=True), n_rows, n_rows - len(frame))


def load_csv(path: Path, plan: AnalysisPlan | None, merge_runs: bool) -> LoadedAttempts:
    """Read and check a CSV of attempts (see the module docstring).

    Raises:
        InputError: naming the line and the column of the first fault, and what to do.
    """
    try:
        return _fast(path, plan, merge_runs) or _load_rows(path, plan, merge_runs)
    except csv.Error as exc:  # a cell of more than 128 KiB, a stray quote in strict mode
        raise InputError(path, "<csv>", f"not a readable CSV ({exc})",
                         "one attempt per row, plain cells") from None
