"""``fire-exp images bootstrap|list``: base images without a registry."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fire-exp images",
                                     description="Base images without a registry.")
    sub = parser.add_subparsers(dest="command", required=True)
    boot = sub.add_parser("bootstrap", help="build fire-exp/base:bookworm with mmdebstrap "
                          "(or debootstrap) and docker-import it")
    boot.add_argument("--force", action="store_true", help="rebuild even if it exists")
    boot.add_argument("--tag", default=None, help="image tag (default fire-exp/base:bookworm)")
    sub.add_parser("list", help="list fire-exp's images (base and cached task images)")
    args = parser.parse_args(argv)
    from fire_exp.environments.docker_panel import docker_client
    from fire_exp.environments.images import BASE_IMAGE, LABEL, bootstrap_base_image

    client = docker_client()  # EnvironmentFailure: the dispatcher prints it, exit 2
    if args.command == "list":
        for image in client.images.list(filters={"label": f"{LABEL}=1"}):
            kind = image.labels.get(f"{LABEL}.kind", "?")
            size = image.attrs.get("Size", 0) / 1e6
            for tag in image.tags or [image.short_id]:
                print(f"{kind:5}  {tag}  {size:.0f} MB")
        return 0
    tag = args.tag or BASE_IMAGE
    print(f"bootstrapping {tag} ...", file=sys.stderr, flush=True)
    result = bootstrap_base_image(tag, force=args.force, client=client)
    if result.built:
        print(f"built {result.tag} ({result.image_id[:19]}) with {result.tool} "
              f"in {result.seconds:.0f} s")
    else:
        print(f"{result.tag} already exists ({result.image_id[:19]}); --force rebuilds it")
    return 0
