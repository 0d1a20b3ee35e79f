"""``fire-exp cleanup``: remove the containers (and images) an interrupted run left behind."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="fire-exp cleanup",
        description="Remove Docker containers labeled fire-exp=1 whose run is no longer alive.")
    parser.add_argument("--all", action="store_true", dest="everything",
                        help="also containers of runs that are still alive")
    parser.add_argument("--images", action="store_true",
                        help="also remove the cached task images (fire-exp/task-*)")
    parser.add_argument("--base", action="store_true",
                        help="also remove the base images (rebuild: fire-exp images bootstrap)")
    args = parser.parse_args(argv)
    from fire_exp.environments.docker import docker_client
    from fire_exp.environments.docker_cleanup import cleanup

    client = docker_client()  # EnvironmentFailure: the dispatcher prints it, exit 2
    report = cleanup(client, everything=args.everything, images=args.images, base=args.base)
    for kind, names in (("container", report.containers), ("network", report.networks),
                        ("image", report.images)):
        for name in names:
            print(f"removed {kind} {name}")
    for name in report.kept_live:
        print(f"kept container {name} (its run is still alive; --all removes it)")
    for error in report.errors:
        print(f"fire-exp cleanup: could not remove {error}", file=sys.stderr)
    print(f"cleanup: {len(report.containers)} containers, {len(report.networks)} networks, "
          f"{len(report.images)} images removed")
    return 1 if report.errors else 0
