"""A minimal task image for the tests: Debian's ``busybox-static`` and nothing else.

No python3, no bash, no libc, no dynamic loader: a static busybox with its applets linked
in ``/bin`` (``sh``, ``mkdir``, ``httpd``, ``wget`` ...), and ``/etc/passwd`` naming root.
It is the shape of the prebuilt images a task may bring, where fire-exp's session host
must run on its own box runtime (``docker_runtime.py``). ``mmdebstrap --variant=extract``
unpacks the one package from the machine's apt sources, as ``fire-exp images bootstrap``
does for the base image; nothing is pulled from a registry. The tag carries the digest of
the recipe, so the image is made once per engine (about 10 s) and reused after.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from fire_exp.environments.host_lock import host_lock
from fire_exp.environments.images import LABEL, SUITE, _mirror_args, image_exists
from tests.ci import missing

PACKAGE = "busybox-static"
_ETC = {"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n", "etc/group": "root:x:0:\n"}
_RECIPE = f"{SUITE} {PACKAGE} extract applets-in-bin {sorted(_ETC.items())}"
TAG = f"fire-exp/test-busybox:{hashlib.sha256(_RECIPE.encode()).hexdigest()[:12]}"


def minimal_image(client: Any) -> str:
    """The minimal image's tag on the engine of ``client``, made unless it is there (a
    test without it and without mmdebstrap skips on a developer's machine, fails in CI)."""
    with host_lock(f"image {TAG}"):
        if image_exists(client, TAG) is None:
            if shutil.which("mmdebstrap") is None:
                missing("the minimal image is made with mmdebstrap (apt-get install "
                        "mmdebstrap)")
            _make(client)
    return TAG


def _make(client: Any) -> None:
    with tempfile.TemporaryDirectory(prefix="fire-exp-busybox-") as tmp:
        root = Path(tmp) / "root"
        subprocess.run(["mmdebstrap", "--variant=extract", f"--include={PACKAGE}",
                        "--aptopt=Acquire::Retries \"3\"", SUITE, str(root),
                        *_mirror_args()], check=True, capture_output=True, timeout=600)
        busybox = root / "bin" / "busybox"
        applets = subprocess.run([str(busybox), "--list"], check=True, capture_output=True,
                                 text=True).stdout.split()
        for applet in applets:
            link = root / "bin" / applet
            if not link.exists():
                link.symlink_to("busybox")
        for name, text in _ETC.items():
            (root / name).write_text(text)
        (root / "root").mkdir(exist_ok=True)
        os.chmod(root / "tmp", 0o1777)
        rootfs = Path(tmp) / "rootfs.tar"
        with tarfile.open(rootfs, "w") as tar:
            for child in sorted(root.iterdir()):
                tar.add(child, arcname=child.name)
        repository, tag = TAG.split(":")
        client.api.import_image_from_file(
            str(rootfs), repository=repository, tag=tag,
            changes=["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                     f"LABEL {LABEL}=1 {LABEL}.kind=test"])
