"""Write the run explorer: a static site that opens from the file system or any web server.

Layout of ``OUT/``::

    index.html, view.js, view.css     the page and its code (copied from fire_exp/view/assets)
    data/index.js                     the overview, the grid and one short row per attempt
    data/a/<i // 500>/<i>.js          one attempt's page data, loaded when it is opened
    figures/*.png                     the report's figures, drawn from the same analysis

Data files are scripts (``FIRE_INDEX = {...}``, ``FIRE_ATTEMPT(i, {...})``) loaded with
``<script src>``: browsers refuse ``fetch()`` of local files, but not scripts.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_exp.analysis import arms_in_order
from fire_exp.view.attempt import attempt_detail, is_near_miss
from fire_exp.view.collect import Redact, RunData, format_cell, table_data
from fire_exp.view.figures import draw_figures

__all__ = ["SHARD", "Site", "attempt_script", "write_site"]

ASSETS = Path(__file__).with_name("assets")
SHARD = 500  # attempt files per folder, so no folder holds tens of thousands of files
COLUMNS = ["task", "arm", "replicate", "cohort", "passed", "reward", "cause", "fired",
           "state", "behavior", "near_miss", "families", "valid", "replaced", "id"]


@dataclass(frozen=True)
class Site:
    """What ``write_site`` wrote."""

    out: Path
    index: Path
    n_attempts: int
    figures: tuple[Path, ...]
    plan_used: str = ""  # which plan analysed the run, and where it came from


def _js(value: Any) -> str:
    # "<" escaped so no text can close a script element, even if one inlines the file.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).replace("<", "\\u003c")


def attempt_script(index: int) -> str:
    """Path of attempt ``index``'s data file, relative to the site folder."""
    return f"data/a/{index // SHARD}/{index}.js"


def _tri(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _lookup(values: list[str]) -> dict[str, int]:
    return {v: i for i, v in enumerate(values)}


def _prereg_summary(data: RunData) -> dict[str, Any] | None:
    p = data.inputs.prereg
    if p is None:
        return None
    hashes = p.get("hashes", {})
    items = [[name, str(h.get("sha256", ""))[:12] if isinstance(h, dict) else str(h)[:12]]
             for name, h in hashes.items()]
    keys = ("panel", "format", "frozen_at", "harness_version", "seed", "n_attempts",
            "config_hash")
    return {"sha256": data.prereg_sha256, **{k: p.get(k) for k in keys}, "items": items}


def _grid(data: RunData, tasks: dict[str, int], arms: dict[str, int]) -> list[list[int]]:
    """[task, arm, successes, attempts] per cell, from the analysis' ``tasks`` table."""
    cells = data.result.tasks.drop_duplicates(["task", "arm"])
    return [[tasks[t], arms[a], int(s), int(n)] for t, a, s, n in
            cells[["task", "arm", "successes", "attempts"]].itertuples(index=False)]


def _record_rows(data: RunData, lk: dict[str, dict[str, int]]) -> list[list[Any]]:
    rows = []
    for r in data.records:
        default_id = f"{r.task}/{r.arm}/r{r.replicate}"
        rows.append([lk["tasks"][r.task], lk["arms"][r.arm], r.replicate,
                     lk["cohorts"][r.cohort], int(r.passed), r.reward,
                     lk["causes"][r.cause.value] if r.cause else None, int(r.funnel.fired),
                     _tri(r.funnel.state), _tri(r.funnel.behavior), _tri(is_near_miss(r)),
                     [lk["families"][f] for f in r.families], int(r.valid),
                     int(r.lineage.replaced_by is not None),
                     None if r.attempt_id == default_id else r.attempt_id])
    return rows


def _frame_rows(data: RunData, lk: dict[str, dict[str, int]]) -> list[list[Any]]:
    """Rows of a CSV attempts file: no record, no logs, only what the table holds."""
    rows: list[list[Any]] = []
    for a in data.inputs.loaded.attempts.to_dict("records"):
        rows.append([lk["tasks"][a["task"]], lk["arms"][a["arm"]], int(a["replicate"]),
                     lk["cohorts"][a["cohort"]], int(a["passed"]), float(a["reward"]),
                     lk["causes"][a["cause"]] if a["cause"] else None, None, None, None,
                     None, [], 1, 0, None])
    return rows


def build_index(data: RunData, figures: list[Path], out: Path) -> dict[str, Any]:
    """The overview and one short row per attempt, as JSON-ready data."""
    att = data.inputs.loaded.attempts
    recs = data.records
    tasks = sorted({r.task for r in recs} | set(att["task"]))
    cohort_of = {r.task: r.cohort for r in recs} | dict(zip(att["task"], att["cohort"],
                                                             strict=True))
    names = {"tasks": tasks, "arms": arms_in_order(sorted({r.arm for r in recs} | set(att["arm"]))),
             "cohorts": sorted(set(cohort_of.values())),
             "families": sorted({f for r in recs for f in r.families}),
             "causes": sorted({r.cause.value for r in recs if r.cause}
                              | {c for c in att["cause"] if c})}
    lk = {k: _lookup(v) for k, v in names.items()}
    res = data.result
    plan_meta = res.metadata
    return {
        "title": f"{recs[0].panel} / {recs[0].run}" if recs else data.source.stem,
        "source": str(data.source), "prereg": _prereg_summary(data),
        "plan": {k: format_meta(plan_meta.get(k)) for k in
                 ("plan", "plan_hash", "seed", "plan_path", "plan_used")},
        "metadata": json.loads(json.dumps(dict(plan_meta), default=str)),
        "notes": list(res.notes),
        "tables": [table_data(n, f) for n, f in res.tables().items() if not f.empty],
        "figures": [{"name": p.stem, "src": p.relative_to(out).as_posix()} for p in figures],
        **names, "taskCohort": [lk["cohorts"][cohort_of[t]] for t in tasks],
        "grid": _grid(data, lk["tasks"], lk["arms"]), "columns": COLUMNS,
        "hasLogs": bool(recs), "shard": SHARD,
        "attempts": _record_rows(data, lk) if recs else _frame_rows(data, lk),
    }


def format_meta(value: object) -> object:
    """Metadata values as JSON (numbers and strings as they are, others as text)."""
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def _write_attempts(data: RunData, out: Path, redact: Redact) -> int:
    if not data.records:
        rows = data.inputs.loaded.attempts.to_dict("records")
        details = ({k: format_cell(v) for k, v in r.items()} for r in rows)
    else:
        task_dirs = {t: data.task_dir(t) for t in {r.task for r in data.records}}
        details = (attempt_detail(r, data.run_dir, task_dirs[r.task], redact)
                   for r in data.records)
    n = 0
    for n, detail in enumerate(details, start=1):
        path = out / attempt_script(n - 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"FIRE_ATTEMPT({n - 1},{_js(detail)});\n", encoding="utf-8")
    return n


def write_site(data: RunData, out: Path, redact: Redact = str) -> Site:
    """Write the explorer of ``data`` into ``out`` (replacing a previous one there)."""
    out.mkdir(parents=True, exist_ok=True)
    if (out / "data").is_dir():
        shutil.rmtree(out / "data")
    for asset in ASSETS.iterdir():
        shutil.copyfile(asset, out / asset.name)
    figures = draw_figures(data.result, out / "figures")
    index = build_index(data, figures, out)
    (out / "data").mkdir()
    (out / "data" / "index.js").write_text(f"FIRE_INDEX={_js(index)};\n", encoding="utf-8")
    n = _write_attempts(data, out, redact)
    return Site(out, out / "index.html", n, tuple(figures),
                str(data.result.metadata.get("plan_used", "")))
