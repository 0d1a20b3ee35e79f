"""Write the run explorer: a static site that opens from the file system or any web server.

Layout of ``OUT/``::

    .fire-exp-view                    the marker: this folder holds an explorer site
    index.html, *.js, view.css        the page and its code (copied from fire_exp/view/assets)
    data/index.js                     the overview, the grid and one short row per attempt
    data/a/<i // 500>/<i>.js          one attempt's page data, loaded when it is opened
    data/s/<i // 500>.js              the searchable text of 500 attempts, loaded on a search
    figures/*.png                     the report's figures, drawn from the same analysis

Data files are scripts (``FIRE_INDEX = {...}``, ``FIRE_ATTEMPT(i, {...})``) loaded with
``<script src>``: browsers refuse ``fetch()`` of local files, but not scripts. Integers a
browser cannot hold exactly (beyond 2^53) and every seed and id are strings in them.

The site writes only what it owns: into a new or empty folder, or over an earlier site
(which the marker names); anything else is refused before a byte is written.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_exp.analysis import arms_in_order, parse_contrast
from fire_exp.report.design import arm_designs, policy_arms, runs_policies
from fire_exp.view.attempt import attempt_detail, is_near_miss
from fire_exp.view.collect import Redact, RunData, format_cell, table_data, without_machine_paths
from fire_exp.view.figures import draw_figures
from fire_exp.view.out_folder import ASSETS, MARKER, check_out, clear_site

__all__ = ["SHARD", "Site", "attempt_script", "build_index", "write_site"]

SHARD = 500  # attempt files per folder, so no folder holds tens of thousands of files
SEARCH_OUTPUT_KEPT = 2000  # characters of one command's output the search reads
SEARCH_OUTPUTS_KEPT = 20_000  # and of all one attempt's outputs together
COLUMNS = ["task", "arm", "replicate", "cohort", "passed", "reward", "cause", "fired",
           "state", "behavior", "near_miss", "families", "valid", "replaced", "id",
           "tokens", "cost", "duration"]
_EXACT = 2**53 - 1  # the largest integer a browser's number holds exactly


@dataclass(frozen=True)
class Site:
    """What ``write_site`` wrote."""

    out: Path
    index: Path
    n_attempts: int
    figures: tuple[Path, ...]
    plan_used: str = ""  # which plan analysed the run, and where it came from


def exact(value: Any, key: str = "") -> Any:
    """``value`` with every seed and id, and every integer past 2^53, as a string."""
    if isinstance(value, dict):
        return {k: exact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [exact(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and (
            abs(value) > _EXACT or key == "seed" or key.endswith(("_seed", "_id"))):
        return str(value)
    return value


def _js(value: Any) -> str:
    # "<" escaped so no text can close a script element, even if one inlines the file.
    return json.dumps(exact(value), ensure_ascii=False, separators=(",", ":"),
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
    rows: list[list[Any]] = []
    for r in data.records:
        default_id = f"{r.task}/{r.arm}/r{r.replicate}"
        rows.append([lk["tasks"][r.task], lk["arms"][r.arm], r.replicate,
                     lk["cohorts"][r.cohort], int(r.passed), r.reward,
                     lk["causes"][r.cause.value] if r.cause else None, int(r.funnel.fired),
                     _tri(r.funnel.state), _tri(r.funnel.behavior), _tri(is_near_miss(r)),
                     [lk["families"][f] for f in r.families], int(r.valid),
                     int(r.lineage.replaced_by is not None),
                     None if r.attempt_id == default_id else r.attempt_id,
                     r.usage.input_tokens + r.usage.output_tokens, r.usage.cost_usd,
                     r.timings.total_s])
    return rows


def _frame_rows(data: RunData, lk: dict[str, dict[str, int]]) -> list[list[Any]]:
    """Rows of a CSV attempts file: no record, no logs, only what the file holds (a column
    the file lacks is unknown, not 0)."""
    rows: list[list[Any]] = []
    given = _csv_columns(data)
    for a in data.inputs.loaded.attempts.to_dict("records"):
        rows.append([lk["tasks"][a["task"]], lk["arms"][a["arm"]], int(a["replicate"]),
                     lk["cohorts"][a["cohort"]], int(a["passed"]), float(a["reward"]),
                     lk["causes"][a["cause"]] if a["cause"] else None, None, None, None,
                     None, [], 1, 0, None, None,
                     float(a["cost_usd"]) if "cost_usd" in given else None,
                     float(a["agent_seconds"]) if "agent_seconds" in given else None])
    return rows


def _csv_columns(data: RunData) -> set[str]:
    """The columns a CSV attempts file names (its loaded frame fills the others in)."""
    with open(data.source, encoding="utf-8-sig", newline="") as f:
        return {c.strip() for c in next(csv.reader(f), [])}


def _contrasts(data: RunData, arms: list[str]) -> list[dict[str, str]]:
    """The plan's contrasts (primary first) whose arms the run has, for the grid's
    differences."""
    roles = ["primary"] + ["secondary"] * (len(data.result.plan.contrasts) - 1)
    pairs = [(c, *parse_contrast(c), role)
             for c, role in zip(data.result.plan.contrasts, roles, strict=True)]
    return [{"name": c, "a": a, "b": b, "role": role} for c, a, b, role in pairs
            if a in arms and b in arms]


POLICY_TABLES = ("funnel", "family_funnel", "near_miss")  # what policies did
POLICY_COLUMNS = ("tasks_fired",)


def _tables(data: RunData) -> list[dict[str, Any]]:
    """The analysis' tables; of a panel whose arms run no policy, without the funnel's."""
    res = data.result
    policies = runs_policies(res)
    return [table_data(n, f if policies else f.drop(columns=[c for c in POLICY_COLUMNS
                                                           if c in f.columns]))
            for n, f in res.tables().items()
            if not f.empty and (policies or n not in POLICY_TABLES)]


def _design(data: RunData) -> dict[str, Any]:
    """The panel's design as the pages word it: each arm's changes and frozen items, which
    arms run policies, the primary contrast's pair and cohort, the sequential test."""
    res = data.result
    a, b = parse_contrast(res.plan.primary.contrast)
    return {"design": [{"arm": d.arm, "declared": d.declared, "policies": d.policies,
                        "changes": list(d.changes), "description": d.description,
                        "items": [list(x) for x in d.items]} for d in arm_designs(res)],
            "policyArms": policy_arms(res),
            "primary": {"contrast": res.plan.primary.contrast, "a": a, "b": b,
                        "cohort": res.main_cohort},
            "sequential": _finite(json.loads(json.dumps(res.sequential, default=str)))
            if res.sequential is not None else None}


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float as text (JSON has no such numbers)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


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
    index: dict[str, Any] = without_machine_paths({
        "title": f"{recs[0].panel} / {recs[0].run}" if recs else data.source.stem,
        "source": f"{data.run_dir.name}/{data.source.name}", "prereg": _prereg_summary(data),
        "plan": {k: format_meta(plan_meta.get(k)) for k in
                 ("plan", "plan_hash", "seed", "plan_used")},
        "metadata": json.loads(json.dumps(dict(plan_meta), default=str)),
        "notes": list(res.notes), "contrasts": _contrasts(data, names["arms"]),
        **_design(data),
        "tables": _tables(data),
        "figures": [{"name": p.stem, "src": p.relative_to(out).as_posix()} for p in figures],
        **names, "taskCohort": [lk["cohorts"][cohort_of[t]] for t in tasks],
        "grid": _grid(data, lk["tasks"], lk["arms"]), "columns": COLUMNS,
        "hasLogs": bool(recs), "shard": SHARD,
        "attempts": _record_rows(data, lk) if recs else _frame_rows(data, lk),
    }, data)
    return index


def format_meta(value: object) -> object:
    """Metadata values as JSON (numbers and strings as they are, others as text)."""
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def _search_text(detail: dict[str, Any]) -> list[list[str]]:
    """What a text search reads of one attempt: its commands, outputs and messages, one
    entry per step, so a phrase matches within one step and a snippet quotes one."""
    commands: list[str] = []
    outputs: list[str] = []
    messages: list[str] = []
    left = SEARCH_OUTPUTS_KEPT
    for item in detail.get("timeline", []):
        if item["kind"] in ("command", "edit"):
            commands.append(item["command"])
            output = item["output"][:min(SEARCH_OUTPUT_KEPT, max(left, 0))]
            left -= len(output)
            outputs.append(output)
        elif item["kind"] == "message":
            messages += [t for t in (item["text"], *item["calls"], *item["commands"]) if t]
    return [commands, outputs, messages]


def _csv_details(data: RunData) -> list[dict[str, Any]]:
    given = _csv_columns(data) | {"cohort", "passed", "reward"}
    rows = data.inputs.loaded.attempts.to_dict("records")
    return [{k: format_cell(v) if k in given else None for k, v in r.items()} for r in rows]


def _write_attempts(data: RunData, out: Path, redact: Redact) -> int:
    """One data file per attempt, and the search shards; returns the number of attempts."""
    if not data.records:
        details: Any = iter(_csv_details(data))
    else:
        task_dirs = {t: data.task_dir(t) for t in {r.task for r in data.records}}
        details = (attempt_detail(r, data.run_dir, task_dirs[r.task], redact)
                   for r in data.records)
    n, shard = 0, []
    (out / "data" / "s").mkdir(parents=True)
    for n, detail in enumerate(details, start=1):
        path = out / attempt_script(n - 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"FIRE_ATTEMPT({n - 1},{_js(detail)});\n", encoding="utf-8")
        shard.append(_search_text(detail))
        if len(shard) == SHARD:
            _write_search(out, (n - 1) // SHARD, shard)
            shard = []
    if shard:
        _write_search(out, (n - 1) // SHARD, shard)
    return n


def _write_search(out: Path, k: int, rows: list[list[list[str]]]) -> None:
    (out / "data" / "s" / f"{k}.js").write_text(f"FIRE_SEARCH({k},{_js(rows)});\n",
                                               encoding="utf-8")


def write_site(data: RunData, out: Path, redact: Redact = str) -> Site:
    """Write the explorer of ``data`` into ``out`` (replacing an earlier site there).

    Raises:
        InputError: ``out`` holds anything but an earlier site (``check_out``).
    """
    check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    clear_site(out)
    (out / MARKER).write_text("fire-exp view: this folder is a run explorer site; "
                              "`fire-exp view --out` may replace it\n", encoding="utf-8")
    for asset in ASSETS.iterdir():
        shutil.copyfile(asset, out / asset.name)
    figures = draw_figures(data.result, out / "figures")
    index = build_index(data, figures, out)
    (out / "data").mkdir()
    (out / "data" / "index.js").write_text(f"FIRE_INDEX={_js(index)};\n", encoding="utf-8")
    n = _write_attempts(data, out, redact)
    return Site(out, out / "index.html", n, tuple(figures),
                str(data.result.metadata.get("plan_used", "")))
