"""``fire-exp run panel=NAME [overrides]``: verify or freeze, run, analyse, report."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from fire_exp.cli._hydra import hydra_main
from fire_exp.cli.freeze import default_prereg_path
from fire_exp.config import RunConfig
from fire_exp.runner.build import Panel, build_panel
from fire_exp.runner.panel import run_panel
from fire_exp.runner.prereg import verify_manifest, write_manifest


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
        from fire_exp.errors import InputError

        raise InputError(config.prereg, "<file>", "no such preregistration manifest",
                         f"freeze it first: fire-exp freeze panel={config.panel.name}")
    write_manifest(panel, in_run)
    return f"frozen at launch into {in_run} (no {frozen} was committed beforehand)"


def _run(config: RunConfig) -> int:
    panel = build_panel(config)
    run_dir = Path(config.results_dir) / panel.name / config.run
    status = preregister(panel, run_dir)
    print(f"panel {panel.name}: {len(panel.schedule)} attempts "
          f"({len(panel.tasks)} tasks x {len(panel.arms)} arms x {config.panel.attempts}); "
          f"preregistration {status}", file=sys.stderr)
    try:
        result = run_panel(panel, run_dir)
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished attempts are in {run_dir / 'attempts.jsonl'}; resume with"
              f"\n  fire-exp run panel={panel.name} run={config.run} <same overrides>",
              file=sys.stderr)
        return 130
    print(f"ran {result.ran} attempts in {result.seconds:.1f}s "
          f"({result.skipped} already finished); attempts: {result.attempts_path}")
    if config.analyze:
        from fire_exp.report.summary import summarize_run

        print(summarize_run(run_dir, panel.analysis_plan))
    return 0


def main(argv: list[str]) -> int:
    return hydra_main("run", argv, _run)
