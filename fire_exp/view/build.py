"""``build_view``: the explorer of one run, from its attempts, its plan and its logs."""

from __future__ import annotations

from pathlib import Path

from fire_exp.analysis import AnalysisPlan
from fire_exp.view.collect import collect, secret_redactor
from fire_exp.view.out_folder import check_out
from fire_exp.view.site import Site, write_site

__all__ = ["build_view", "default_out"]


def default_out(run: Path) -> Path:
    """``RUN/view`` for a run folder, ``<file stem>-view`` beside an attempts file."""
    return run / "view" if run.is_dir() else run.parent / f"{run.stem}-view"


def build_view(run: Path | str, plan: AnalysisPlan | Path | str | None = None,
               out: Path | str | None = None) -> Site:
    """Analyse ``run`` with ``plan`` and write its explorer into ``out``.

    Args:
        run: a run folder (``attempts.jsonl``, optional ``prereg.json``) or an attempts
            file (JSONL, or CSV without per-attempt logs).
        plan: the analysis plan (object, file or name); None: the one frozen with the run.
        out: the site folder (default: ``default_out(run)``).

    Raises:
        InputError: a missing or malformed attempts file, manifest or plan; an ``out``
            that holds anything but an earlier explorer site (refused before any work).
    """
    run = Path(run)
    site = Path(out) if out is not None else default_out(run)
    check_out(site)
    return write_site(collect(run, plan), site, secret_redactor())
