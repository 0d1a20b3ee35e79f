"""``fire-exp run panel=NAME [overrides]``: verify or freeze, run, analyse, report.

``resume=RUN`` continues the run folder ``results/PANEL/RUN`` (same as ``run=RUN``, but
refuses to start a new run when that folder does not exist; both are Hydra config, see
``configs/config.yaml``). Before anything is recorded the agent and environment are
checked and every task's image is built or found. Ctrl-C or SIGTERM stops the attempts in
flight, keeps every finished one, and prints the command that resumes. The run itself is
:func:`fire_exp.runner.launch.launch_run`; this command parses and prints.
"""

from __future__ import annotations

import shlex
import sys

from fire_exp.cli._hydra import hydra_main
from fire_exp.config import RunConfig
from fire_exp.runner.launch import RunOutcome, RunStart, launch_run


def resume_command(argv: list[str], run: str) -> str:
    """The command line that resumes ``run`` with the same overrides."""
    kept = [a for a in argv if not a.startswith(("run=", "resume="))]
    return shlex.join(["fire-exp", "run", *kept, f"resume={run}"])


def _summary(outcome: RunOutcome, analyze: bool) -> str:
    result = outcome.result
    assert result is not None  # an interrupted run has no summary
    replaced = ", ".join(f"{arm} {n}" for arm, n in sorted(result.replacements.items()))
    lines = [f"ran {result.ran} attempts in {result.seconds:.1f}s ({result.skipped} of "
             f"{result.scheduled} scheduled attempts already finished); "
             f"attempts: {result.attempts_path}",
             f"replacements per arm: {replaced or 'none'}"]
    lines += outcome.node_losses  # what lost nodes cost
    if result.reaped:
        lines.append(f"killed {result.reaped} leftover processes of the interrupted run")
    if result.stop is not None:
        lines.append(result.stop.line)
    elif result.sequential and not analyze:  # else the report's summary says it
        lines.append(f"sequential test: {result.sequential}")
    return "\n".join(lines)


class _Printer:
    """Prints what the run says (:class:`fire_exp.runner.launch.RunListener`)."""

    def __init__(self, config: RunConfig, argv: list[str]) -> None:
        self.config, self.argv = config, argv

    def started(self, start: RunStart) -> None:
        print(f"panel {start.panel}: {start.attempts} attempts "
              f"({start.tasks} tasks x {start.arms} arms x {start.replicates}); "
              f"preregistration {start.preregistration}; run folder {start.run_dir}",
              file=sys.stderr)
        if start.projection is not None:
            print(start.projection, file=sys.stderr)

    def ended(self, outcome: RunOutcome) -> None:
        run_dir = outcome.run_dir
        if outcome.interrupted:
            print(f"\ninterrupted: finished attempts are in {run_dir / 'attempts.jsonl'}; "
                  f"attempts in flight will run again. Resume with\n  "
                  f"{resume_command(self.argv, run_dir.name)}", file=sys.stderr)
        else:
            print(_summary(outcome, self.config.analyze))

    def summarized(self, summary: str) -> None:
        print(summary)


def _run(config: RunConfig, argv: list[str]) -> int:
    printer = _Printer(config, argv)
    outcome = launch_run(config, printer)
    if outcome.interrupted:
        return 130
    if config.analyze:
        print(f"every attempt in the browser: fire-exp view {outcome.run_dir}")
    return 0


def main(argv: list[str]) -> int:
    return hydra_main("run", argv, lambda config: _run(config, argv))
