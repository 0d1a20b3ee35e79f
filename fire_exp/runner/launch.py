"""One place runs a configured panel: :func:`launch_run`, which ``fire-exp run`` calls.

From the typed config down: build the panel, find its run folder (``results/PANEL/RUN``;
``resume=`` refuses a folder that does not exist, a fresh run claims one no other run
holds), prepare the agent and environment (every task's image built or found), project
the cost of what the run owes, preregister (verify against the manifest, or freeze it into
the run folder), check the records so far, then run the panel
(:func:`fire_exp.runner.panel.run_panel`) and, with ``analyze``, summarize the run. Any
refusal before the first attempt leaves no folder behind. The command line only parses
the config and prints what its :class:`RunListener` hears: a :class:`RunStart` before the
first attempt, the :class:`RunOutcome` when the attempts end, then the run's summary.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Protocol

from fire_exp.config import RunConfig
from fire_exp.errors import InputError
from fire_exp.records import read_records
from fire_exp.runner.build import Panel, build_panel, prepare_panel
from fire_exp.runner.panel import RunResult, run_panel
from fire_exp.runner.preregister import preregister
from fire_exp.runner.projection import pilot_records, projected_cost
from fire_exp.runner.replacement import owed_attempts
from fire_exp.runner.run_folder import (
    check_records_so_far,
    claim_new_folder,
    first_missing,
    remove_if_empty,
)

__all__ = ["RunListener", "RunOutcome", "RunStart", "launch_run"]


@dataclass(frozen=True)
class RunStart:
    """What a run is about to do, known before its first attempt."""

    panel: str
    run_dir: Path
    attempts: int  # scheduled
    tasks: int
    arms: int
    replicates: int  # attempts per task and arm
    preregistration: str  # verified against what, or frozen where
    projection: str | None  # the projected cost line, when it can be known


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended: interrupted (``result`` None), or run to its end or its stop."""

    run_dir: Path
    result: RunResult | None
    node_losses: tuple[str, ...] = ()  # what lost nodes cost (analysis/accounting.py)

    @property
    def interrupted(self) -> bool:
        """Ctrl-C or SIGTERM stopped it: finished attempts are kept, the rest run on resume."""
        return self.result is None


class RunListener(Protocol):
    """Hears a run as it goes (``fire-exp run`` prints what it hears)."""

    def started(self, start: RunStart) -> None:
        """The run is about to start its first attempt."""

    def ended(self, outcome: RunOutcome) -> None:
        """The attempts ended: all run, the run stopped, or it was interrupted."""

    def summarized(self, summary: str) -> None:
        """The run's analysis summary (``analyze=true``, after :meth:`ended`)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM stops a run as cleanly as Ctrl-C


def _projection(panel: Panel, run_dir: Path, pilot: str | None) -> str | None:
    """The projected cost of what the run owes (``fire_exp.runner.projection``)."""
    path = run_dir / "attempts.jsonl"
    finished = read_records(path).finished if path.is_file() else []
    return projected_cost(finished, len(owed_attempts(panel.schedule, finished)),
                          pilot=pilot_records(pilot) if pilot else (),
                          agent_params=panel.agent.params)


def launch_run(config: RunConfig, listener: RunListener) -> RunOutcome:
    """Run the configured panel into its run folder, telling ``listener`` as it goes.

    SIGTERM stops the attempts as Ctrl-C does while they run (the handler is put back
    after).

    Raises:
        InputError, PreregistrationError: refused before anything is recorded (no folder
            is left behind), or another process is running into the folder.
    """
    panel = build_panel(config)
    run_dir = Path(config.results_dir) / panel.name / config.run
    if config.resume is not None and not run_dir.is_dir():
        raise InputError(run_dir, "resume", f"no run {config.resume!r} of panel {panel.name!r}",
                         "check resume=, panel= and results_dir=")
    made = first_missing(run_dir)  # the folders this run creates, from the top one
    if config.fresh:
        run_dir = claim_new_folder(run_dir)
    try:
        return _run_in(panel, run_dir, config, listener)
    finally:
        if config.fresh:
            remove_if_empty(run_dir, made)  # refused before anything was written


def _run_in(panel: Panel, run_dir: Path, config: RunConfig,
            listener: RunListener) -> RunOutcome:
    prepare_panel(panel)  # refuses before anything is recorded
    projection = _projection(panel, run_dir, config.cost_pilot)  # a bad pilot refuses here
    status = preregister(panel, run_dir)
    check_records_so_far(run_dir)
    listener.started(RunStart(panel=panel.name, run_dir=run_dir, attempts=len(panel.schedule),
                               tasks=len(panel.tasks), arms=len(panel.arms),
                               replicates=config.panel.attempts, preregistration=status,
                               projection=projection))
    saved = signal.signal(signal.SIGTERM, _terminate)
    try:
        result = run_panel(panel, run_dir)
    except KeyboardInterrupt:
        outcome = RunOutcome(run_dir=run_dir, result=None)
        listener.ended(outcome)
        return outcome
    finally:
        signal.signal(signal.SIGTERM, saved)
    from fire_exp.analysis.accounting import node_losses

    losses = tuple(node_losses(read_records(result.attempts_path).finished))
    outcome = RunOutcome(run_dir=run_dir, result=result, node_losses=losses)
    listener.ended(outcome)
    if config.analyze:
        from fire_exp.report.summary import summarize_run

        listener.summarized(summarize_run(run_dir, panel.analysis_plan))
    return outcome
