"""``fire-exp cleanup [--environment NAME] [--run RUN] [--all] [--images] [--base]``: remove
what dead runs left, through each environment backend's ``cleanup`` (every registered one
unless ``--environment`` names one; a backend with no resources of its own has nothing).

By default only containers of runs provably dead on this host go (their owner has exited
and their run folder's lock is free); every container kept is listed with the reason.
``--run RUN`` limits the cleanup to one run (and then also removes its containers kept for
inspection); ``--all`` removes every fire-exp container, live or not, of any host, and
the networks no container uses (the shared egress network is kept otherwise).
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> int:
    """Remove dead runs' containers; print each one removed or kept; returns the status."""
    parser = argparse.ArgumentParser(
        prog="fire-exp cleanup",
        description="Remove the containers (label fire-exp=1) of runs provably dead on "
                    "this host; list the ones kept and why.")
    parser.add_argument("--environment", default=None, metavar="NAME",
                        help="only this environment backend (default: every registered one)")
    parser.add_argument("--run", default=None, metavar="RUN",
                        help="only the containers of this run (its folder name); also "
                             "removes its keep_container ones")
    parser.add_argument("--all", action="store_true", dest="everything",
                        help="every fire-exp container, live or not, of any host, and "
                             "the fire-exp networks no container uses")
    parser.add_argument("--images", action="store_true",
                        help="also remove the cached task images (fire-exp/task-*)")
    parser.add_argument("--base", action="store_true",
                        help="also remove the base images and the box runtimes made from "
                             "them (rebuild: fire-exp images bootstrap)")
    args = parser.parse_args(argv)
    from fire_exp.cli._backends import backends
    from fire_exp.environments.upkeep import CleanupReport

    report = CleanupReport()
    for backend in backends(args.environment):  # EnvironmentFailure: the dispatcher, exit 2
        done = backend.cleanup(everything=args.everything, images=args.images,
                               base=args.base, run=args.run)
        for name in vars(report):
            getattr(report, name).extend(getattr(done, name))
    for kind, names in (("container", report.containers), ("network", report.networks),
                        ("image", report.images), ("volume", report.volumes)):
        for name in names:
            print(f"removed {kind} {name}")
    for name, reason in report.kept:
        how = "--run RUN removes it" if "keep_container" in reason else "--all removes it"
        print(f"kept container {name} ({reason}; {how})")
    for name, reason in report.kept_networks:
        how = "" if "in use" in reason else "; --all removes it once no container uses it"
        print(f"kept network {name} ({reason}{how})")
    for error in report.errors:
        print(f"fire-exp cleanup: could not remove {error}", file=sys.stderr)
    scope = f" of run {args.run}" if args.run else ""
    print(f"cleanup{scope}: {len(report.containers)} containers, {len(report.networks)} "
          f"networks, {len(report.images)} images removed; {len(report.kept)} containers kept")
    return 1 if report.errors else 0
