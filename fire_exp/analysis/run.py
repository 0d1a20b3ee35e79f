"""What an analysis reads: the attempts file, its raw records, the run's preregistration
manifest, and the analysis plan — by default the one frozen with the run.

``read_run`` reads a run folder (``attempts.jsonl`` and optional ``prereg.json``) or an
attempts file (JSONL or CSV; a ``prereg.json`` beside it counts) once. ``choose_plan``
decides which plan analyses it: the plan given (``--plan``), else the one the run's
``prereg.json`` froze (found by its SHA-256). An attempts file without a manifest is
analysed only with a plan given explicitly, and the choice says so; a frame in memory
gets ``analysis/default.yaml``. The choice, and whether it matches the frozen plan, is
recorded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_exp.analysis.load import LoadedAttempts, load_attempts, loaded_from_records
from fire_exp.analysis.plan import AnalysisPlan, load_plan
from fire_exp.errors import InputError
from fire_exp.manifest import read_prereg
from fire_exp.paths import ANALYSIS_DIR
from fire_exp.records import ReadResult, RecordsFileError, read_records

__all__ = ["PlanChoice", "RunInputs", "attempts_path", "choose_plan", "read_prereg",
           "read_run", "resolve_plan"]


@dataclass(frozen=True)
class RunInputs:
    """Everything an analysis reads about one run.

    Attributes:
        loaded: the scored attempts (replacement rule applied) and what was left out.
        records: the raw records of a JSONL file (started lines included); None for a CSV
            or a frame.
        prereg: the run's preregistration manifest, or None when it has none.
        path: the attempts file (None for a frame).
        name: the run folder's name, or the file's stem.
    """

    loaded: LoadedAttempts
    records: ReadResult | None = None
    prereg: Mapping[str, Any] | None = None
    path: Path | None = None
    name: str = ""


def attempts_path(run: Path | str) -> Path:
    """The attempts file of ``run`` (a run folder or the file itself).

    Raises:
        InputError: there is no such file.
    """
    run = Path(run)
    path = run / "attempts.jsonl" if run.is_dir() else run
    if not path.is_file():
        raise InputError(path, "<file>", "no such attempts file",
                         "pass a run folder holding attempts.jsonl, a .jsonl or a .csv file")
    return path


def read_run(run: Path | str, *, merge_runs: bool = False,
             plan: AnalysisPlan | None = None) -> RunInputs:
    """Read a run folder or an attempts file once: records, scored attempts, manifest.

    The attempts are checked against a plan once it is chosen (``validate_attempts``);
    ``merge_runs`` lets one file hold several runs. A CSV is read with ``plan`` when the
    caller has one (its reward scale says which rewards pass), else on [0, 1].

    Raises:
        InputError: a missing or malformed attempts file or manifest (a malformed record
            names its line and field).
    """
    run = Path(run)
    path = attempts_path(run)
    records = None
    if path.suffix.lower() == ".csv":
        loaded = load_attempts(path, plan, merge_runs=merge_runs)
    else:
        records = _read_jsonl(path)
        loaded = loaded_from_records(records, path)
    return RunInputs(loaded, records, read_prereg(path.parent / "prereg.json"), path,
                     run.name if run.is_dir() else run.stem)


def _read_jsonl(path: Path) -> ReadResult:
    """The records of a JSONL file; a first line that is no JSON asks whether it is a CSV."""
    try:
        return read_records(path)
    except RecordsFileError as exc:
        if exc.line == 1 and exc.field == "<json>" and path.suffix.lower() != ".jsonl":
            raise RecordsFileError(path, 1, "<json>", exc.problem,
                                   "a table of attempts is read as CSV only when its name "
                                   "ends in .csv, comma-separated") from None
        raise


def resolve_plan(text: str | Path, *, field: str = "--plan") -> Path:
    """A plan file: a path as given, else a plan of the analysis folder by file or name
    (``default.yaml`` or ``default``). The one lookup of a plan, for ``--plan`` and for a
    panel's ``panel.analysis`` (``field`` names the option in the error).

    Raises:
        InputError: no such plan; the message lists the known ones.
    """
    given = Path(text)
    if given.is_file():
        return given
    for candidate in (ANALYSIS_DIR / given.name, ANALYSIS_DIR / f"{given.name}.yaml"):
        if candidate.is_file():
            return candidate
    known = sorted(p.stem for p in ANALYSIS_DIR.glob("*.yaml"))
    raise InputError(given, field, "no such analysis plan",
                     f"known plans in {ANALYSIS_DIR}: {', '.join(known) or 'none'}")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class PlanChoice:
    """The plan an analysis used and where it came from.

    Attributes:
        plan: the validated plan.
        path: its file (None for a plan given as an object).
        source: ``frozen`` (the run's prereg.json froze it), ``given`` (``--plan`` or a
            caller's choice) or ``default`` (the run has no prereg.json).
        frozen_sha256: the SHA-256 the run's manifest froze (None without a manifest).
        matches_frozen: whether the plan file is the frozen one (None when unknowable).
    """

    plan: AnalysisPlan
    path: Path | None
    source: str
    frozen_sha256: str | None = None
    matches_frozen: bool | None = None

    def describe(self) -> str:
        """One line for the terminal: which plan, from where."""
        where = f" ({self.path})" if self.path is not None else ""
        how = {"frozen": "the plan frozen with the run (prereg.json)",
               "default": "the default plan: the run has no prereg.json"}.get(self.source)
        if how is None and self.frozen_sha256 is None:
            how = ("given; NO PREREGISTRATION (no prereg.json): the attempts were checked "
                   "against this plan only, not a frozen schedule")
        elif how is None:
            how = {True: "given; identical to the plan frozen with the run",
                   False: "given; it DIFFERS FROM the plan frozen with the run",
                   None: "given; not compared with the plan frozen with the run"
                   }[self.matches_frozen]
        return f"analysis plan {self.plan.name}{where}: {how}"


def _frozen_plan(prereg: Mapping[str, Any], where: Path) -> PlanChoice:
    item = prereg["hashes"].get("analysis_plan")
    if not isinstance(item, dict) or not item.get("sha256"):
        raise InputError(where, "hashes.analysis_plan", "the manifest names no analysis plan",
                         "pass --plan analysis/NAME.yaml")
    frozen, sha = Path(str(item.get("path", ""))), str(item["sha256"])
    # The run may have moved (another checkout): a plan with the frozen bytes is the plan.
    for candidate in (frozen, *sorted(ANALYSIS_DIR.glob("*.yaml"))):
        if candidate.is_file() and _sha256(candidate) == sha:
            return PlanChoice(load_plan(candidate), candidate, "frozen", sha, True)
    problem = (f"the frozen analysis plan {frozen} has changed since the run was frozen"
               if frozen.is_file() else f"the frozen analysis plan {frozen} no longer exists")
    raise InputError(where, "hashes.analysis_plan", problem,
                     f"restore the file with SHA-256 {sha[:12]}…, or pass --plan to analyse "
                     "with another plan (the output then says so)")


def choose_plan(inputs: RunInputs, plan: AnalysisPlan | str | Path | None) -> PlanChoice:
    """The plan to analyse ``inputs`` with: ``plan`` if given, else the frozen one.

    Raises:
        InputError: no such plan, or the frozen plan changed or is gone.
    """
    item = (inputs.prereg or {}).get("hashes", {}).get("analysis_plan") or {}
    frozen_sha = item.get("sha256") if isinstance(item, dict) else None
    if isinstance(plan, AnalysisPlan):
        return PlanChoice(plan, None, "given", frozen_sha, None)
    if plan is not None:
        path = resolve_plan(plan)
        matches = None if frozen_sha is None else _sha256(path) == frozen_sha
        return PlanChoice(load_plan(path), path, "given", frozen_sha, matches)
    if inputs.prereg is not None and inputs.path is not None:
        return _frozen_plan(inputs.prereg, inputs.path.parent / "prereg.json")
    if inputs.path is not None:
        raise InputError(inputs.path.parent / "prereg.json", "<file>",
                         "no preregistration manifest beside the attempts, so no frozen plan "
                         "or schedule to check them against",
                         "to analyse them without one, pass --plan analysis/default.yaml "
                         "or another plan; the output then says so")
    default = ANALYSIS_DIR / "default.yaml"
    return PlanChoice(load_plan(default), default, "default")
