"""``fire-exp images [--environment NAME] bootstrap|list``: base images without a registry,
through the backends with the ``images`` capability (``Environment.build_base_image``,
``list_images``)."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fire-exp images",
                                     description="Base images without a registry.")
    parser.add_argument("--environment", default=None, metavar="NAME",
                        help="the environment backend (default: the one that builds images)")
    sub = parser.add_subparsers(dest="command", required=True)
    boot = sub.add_parser("bootstrap", help="build fire-exp/base:bookworm with mmdebstrap "
                          "(or debootstrap) and docker-import it")
    boot.add_argument("--force", action="store_true", help="rebuild even if it exists")
    boot.add_argument("--tag", default=None, help="image tag (default fire-exp/base:bookworm)")
    sub.add_parser("list", help="list fire-exp's images (base and cached task images)")
    args = parser.parse_args(argv)
    from fire_exp.cli._backends import backends
    from fire_exp.environments.base import Capability

    found = backends(args.environment, Capability.IMAGES)
    if args.command == "list":
        for backend in found:  # EnvironmentFailure: the dispatcher prints it, exit 2
            for image in backend.list_images():
                print(f"{image.kind:5}  {image.tag}  {image.size_mb:.0f} MB")
        return 0
    if len(found) != 1:
        names = ", ".join(b.name for b in found) or "none"
        print(f"fire-exp images bootstrap: {len(found)} environment backends build images "
              f"({names}); name one with --environment NAME", file=sys.stderr)
        return 2
    backend = found[0]
    print(f"bootstrapping {args.tag or 'the base image'} ...", file=sys.stderr, flush=True)
    result = backend.build_base_image(args.tag, force=args.force)
    if result.built:
        print(f"built {result.tag} ({result.image_id[:19]}) with {result.tool} "
              f"in {result.seconds:.0f} s")
    else:
        print(f"{result.tag} already exists ({result.image_id[:19]}); --force rebuilds it")
    return 0
