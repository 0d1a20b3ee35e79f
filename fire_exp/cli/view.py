"""``fire-exp view RUN [--plan analysis/NAME.yaml] [--out DIR]``: the run explorer.

RUN is a run folder (``attempts.jsonl``, optional ``prereg.json``) or an attempts file.
Writes a self-contained static site to DIR (default ``RUN/view``): open ``index.html`` in
a browser, from the file system or any static file server. The plan is the one the run's
preregistration froze unless ``--plan`` names another (as ``fire-exp report``); the
output says which.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Write the explorer of a run; returns the exit status."""
    parser = argparse.ArgumentParser(prog="fire-exp view", description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, metavar="RUN",
                        help="run folder or attempts file (JSONL or CSV)")
    parser.add_argument("--plan", default=None,
                        help="analysis plan (default: the one frozen with the run)")
    parser.add_argument("--out", type=Path, default=None, help="site folder (default RUN/view)")
    args = parser.parse_args(argv)

    from fire_exp.view import build_view

    site = build_view(args.run, args.plan, args.out)
    print(f"{site.plan_used}\nrun explorer of {site.n_attempts} attempts: "
          f"{site.index.resolve()}\nopen it in a browser, or serve it: "
          f"python -m http.server -d {site.out}")
    return 0
