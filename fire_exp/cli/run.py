"""``fire-exp run panel=NAME [overrides]``: verify or freeze, run, analyse, report.

``resume=RUN`` continues the run folder ``results/PANEL/RUN`` (same as ``run=RUN``, but
refuses to start a new run when that folder does not exist; both are Hydra config, see
``configs/config.yaml``). Before anything is recorded the agent and environment are
checked and every task's image is built or found (:func:`prepare_panel`). Ctrl-C or
SIGTERM stops the attempts in flight, keeps every finished one, and prints the command
that resumes.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import sys
from pathlib import Path
from types import FrameType

from fire_exp.cli._hydra import hydra_main
from fire_exp.cli.freeze import default_prereg_path
from fire_exp.config import RunConfig
from fire_exp.errors import InputError
from fire_exp.records import read_records
from fire_exp.runner.build import Panel, build_panel, prepare_panel
from fire_exp.runner.panel import RunResult, run_panel
from fire_exp.runner.prereg import verify_manifest, write_manifest
from fire_exp.runner.projection import pilot_records, projected_cost
from fire_exp.runner.replacement import owed_attempts


def preregister(panel: Panel, run_dir: Path) -> str:
    """Verify the panel against its manifest (or freeze it now); returns what happened."""
    config = panel.config
    frozen = default_prereg_path(config)
    in_run = run_dir / "prereg.json"
    if frozen.is_file():
        verify_manifest(panel, frozen)
        if in_run.is_file():
            verify_manifest(panel, in_run)
        else:
            run_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(frozen, in_run)
        return f"verified against {frozen}"
    if in_run.is_file():  # resuming a run that was frozen at launch
        verify_manifest(panel, in_run)
        return f"verified against {in_run}"
    if config.prereg:
        raise InputError(config.prereg, "<file>", "no such preregistration manifest",
                         f"freeze it first: fire-exp freeze panel={config.panel.name}")
    write_manifest(panel, in_run)
    return f"frozen at launch into {in_run} (no {frozen} was committed beforehand)"


def check_records_so_far(run_dir: Path) -> None:
    """Refuse to resume a run whose attempts file holds records its manifest never
    scheduled (a hand-edited or merged file), or records of a run of another name (the
    folder was renamed): the analysis would refuse them only after the last attempt.
    Checked as the analysis checks them (``analysis/conformance.py``)."""
    path = run_dir / "attempts.jsonl"
    if path.is_file():
        from fire_exp.analysis.conformance import check_conformance
        from fire_exp.manifest import read_prereg
        from fire_exp.records import read_records

        read = read_records(path)
        other = next((r for r in read.finished if r.run != run_dir.name), None)
        if other is not None:
            raise InputError(path, "run", f"records of run {other.run!r} in the folder "
                             f"{run_dir.name!r}: the folder was renamed or another run's "
                             "file copied in", f"rename the folder back to {other.run!r}")
        check_conformance(path, read, read_prereg(run_dir / "prereg.json"))


def claim_new_folder(run_dir: Path) -> Path:
    """A folder no other run holds: ``run_dir``, else ``run_dir-2``, ``-3`` … (two runs
    started in the same second get new_run's one name), created here atomically."""
    for n in range(1, 1000):
        candidate = run_dir if n == 1 else run_dir.with_name(f"{run_dir.name}-{n}")
        try:
            candidate.mkdir(parents=True)
        except FileExistsError:
            continue
        return candidate
    raise InputError(run_dir, "run", "a thousand runs of this name exist", "give run=NAME")


def resume_command(argv: list[str], run: str) -> str:
    """The command line that resumes ``run`` with the same overrides."""
    kept = [a for a in argv if not a.startswith(("run=", "resume="))]
    return shlex.join(["fire-exp", "run", *kept, f"resume={run}"])


def _summary(result: RunResult, analyze: bool) -> str:
    from fire_exp.analysis.accounting import node_losses

    replaced = ", ".join(f"{arm} {n}" for arm, n in sorted(result.replacements.items()))
    lines = [f"ran {result.ran} attempts in {result.seconds:.1f}s ({result.skipped} of "
             f"{result.scheduled} scheduled attempts already finished); "
             f"attempts: {result.attempts_path}",
             f"replacements per arm: {replaced or 'none'}"]
    lines += node_losses(read_records(result.attempts_path).finished)  # what lost nodes cost
    if result.reaped:
        lines.append(f"killed {result.reaped} leftover processes of the interrupted run")
    if result.stop is not None:
        lines.append(result.stop.line)
    elif result.sequential and not analyze:  # else the report's summary says it
        lines.append(f"sequential test: {result.sequential}")
    return "\n".join(lines)


def _projection(panel: Panel, run_dir: Path, pilot: str | None) -> str | None:
    """The projected cost of what the run owes (``fire_exp.runner.projection``)."""
    path = run_dir / "attempts.jsonl"
    finished = read_records(path).finished if path.is_file() else []
    return projected_cost(finished, len(owed_attempts(panel.schedule, finished)),
                          pilot=pilot_records(pilot) if pilot else (),
                          agent_params=panel.agent.params)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM stops a run as cleanly as Ctrl-C


def _run(config: RunConfig, argv: list[str]) -> int:
    panel = build_panel(config)
    run_dir = Path(config.results_dir) / panel.name / config.run
    if config.resume is not None and not run_dir.is_dir():
        raise InputError(run_dir, "resume", f"no run {config.resume!r} of panel {panel.name!r}",
                         "check resume=, panel= and results_dir=")
    made = _first_missing(run_dir)  # the folders this run creates, from the top one
    if config.fresh:
        run_dir = claim_new_folder(run_dir)
    try:
        return _run_in(panel, run_dir, config, argv)
    finally:
        if config.fresh:
            _remove_if_empty(run_dir, made)  # refused before anything was written


def _first_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` that does not exist yet (None: it all exists)."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


def _remove_if_empty(run_dir: Path, made: Path | None) -> None:
    """Leave no empty folder: the run folder, then the parents the run created up to
    ``made``, each only while empty."""
    stop = made.parent if made is not None else run_dir.parent
    folder = run_dir
    while folder != stop and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _run_in(panel: Panel, run_dir: Path, config: RunConfig, argv: list[str]) -> int:
    prepare_panel(panel)  # refuses before anything is recorded
    projection = _projection(panel, run_dir, config.cost_pilot)  # a bad pilot refuses here
    status = preregister(panel, run_dir)
    check_records_so_far(run_dir)
    print(f"panel {panel.name}: {len(panel.schedule)} attempts "
          f"({len(panel.tasks)} tasks x {len(panel.arms)} arms x {config.panel.attempts}); "
          f"preregistration {status}; run folder {run_dir}", file=sys.stderr)
    if projection is not None:
        print(projection, file=sys.stderr)
    saved = signal.signal(signal.SIGTERM, _terminate)
    try:
        result = run_panel(panel, run_dir)
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished attempts are in {run_dir / 'attempts.jsonl'}; "
              f"attempts in flight will run again. Resume with\n  "
              f"{resume_command(argv, run_dir.name)}", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, saved)
    print(_summary(result, config.analyze))
    if config.analyze:
        from fire_exp.report.summary import summarize_run

        print(summarize_run(run_dir, panel.analysis_plan))
        print(f"every attempt in the browser: fire-exp view {run_dir}")
    return 0


def main(argv: list[str]) -> int:
    return hydra_main("run", argv, lambda config: _run(config, argv))
