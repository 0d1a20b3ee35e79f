"""The box runtime: the ``python3`` and ``bash`` fire-exp brings into every Docker box.

The session host is a Python program and the agent's commands run in bash, but a task's
image need have neither (prebuilt images often carry no Python, and a minimal one no
bash). So every container gets, read-only at :data:`RUNTIME`, a named volume holding
Debian's python3 and bash as the base image has them, with every library they and
Python's extension modules load, and the dynamic loader itself::

    RUNTIME/usr/bin/python3, RUNTIME/usr/lib/python3.X/   the interpreter and its stdlib
    RUNTIME/usr/bin/bash
    RUNTIME/lib/                                          their libraries (ldd's closure)
    RUNTIME/loader/python3, RUNTIME/loader/bash           the dynamic loader, two names
    RUNTIME/bin/bash                                      a ``#!/bin/sh`` launcher

Nothing of the image is used to run them: each program is started by the runtime's own
loader with the runtime's library folder (:data:`PYTHON`, :data:`BASH`), so the image's
libc, if it has one, plays no part; no variable is set that a child could inherit. The
loader is a hard link named after the program it runs, so the kernel names the process
``python3`` or ``bash`` as before (``ps``, ``pkill python3``). Python finds its stdlib
from its own path (``RUNTIME/usr``) and runs with ``-E -s -S -B``: no ``PYTHON*`` variable
of the task's and no site folder reaches the session host. The loader honours
``--library-path`` also for a shielded command (``session_host``'s ``bash -p`` with real
and effective group apart, where the kernel sets ``AT_SECURE``): it is an argument, not
the ``LD_LIBRARY_PATH`` a secure process ignores.

``RUNTIME/bin`` is appended to the box's ``PATH``: it holds ``bash`` alone, so a box whose
image lacks bash still runs ``bash script`` (the oracle's ``solve.sh``, the verifier's
``test.sh``), while the image's own programs, its ``python3`` included, come first or not
at all. The launcher needs the image's ``/bin/sh`` (busybox's will do).

The volume is made once per engine and base image (:func:`ensure_runtime`), by a short
container of the base image that copies those files into it (``_FILL``, about 2 s and
50 MB for ``fire-exp/base:bookworm``); it is named after the base image's id and the fill
script, labelled ``fire-exp=1``, ``fire-exp.kind=runtime``, and ``fire-exp cleanup
--base`` removes it with the base image. A Docker image mount would spare the copy, but
it needs Docker 28 (API 1.48), and a volume works on every engine fire-exp supports.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from fire_exp.environments.failure import EnvironmentFailure
from fire_exp.environments.host_lock import host_lock
from fire_exp.environments.images import LABEL, image_exists

RUNTIME = "/opt/fire-exp/runtime"
LIBS = f"{RUNTIME}/lib"
BIN = f"{RUNTIME}/bin"
PYTHON = (f"{RUNTIME}/loader/python3", "--library-path", LIBS, f"{RUNTIME}/usr/bin/python3",
          "-E", "-s", "-S", "-B")
# argv[0] "bash", as a bash started by name has: ``$0`` of ``bash -c`` is unchanged.
BASH = (f"{RUNTIME}/loader/bash", "--argv0", "bash", "--library-path", LIBS,
        f"{RUNTIME}/usr/bin/bash")
KIND = "runtime"
_FILL_MOUNT = "/fire-exp-runtime"

# Runs in the base image as ``sh -c _FILL sh FOLDER``; FOLDER is the volume. A fill that was
# cut short is done again (``.complete`` is written last); flock: one filler at a time.
_FILL = r"""set -eu
rt=$1
for p in python3 bash ldd flock; do
  command -v $p > /dev/null || { echo "the base image has no $p" >&2; exit 1; }
done
exec 9> "$rt/.lock"
flock 9
if [ -e "$rt/.complete" ]; then echo "$READY"; exit 0; fi
find "$rt" -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf {} +
py=$(readlink -f "$(command -v python3)")
sh=$(readlink -f "$(command -v bash)")
ld=$(ldd "$py" | awk '$1 ~ /^\// && $2 != "=>" {print $1}' | head -n 1)
ver=${py##*/}
stdlib=$(dirname "$(dirname "$py")")/lib/$ver
[ -f "$stdlib/os.py" ] || { echo "no standard library of $py at $stdlib" >&2; exit 1; }
[ -n "$ld" ] || { echo "no dynamic loader of $py" >&2; exit 1; }
mkdir -p "$rt/usr/bin" "$rt/usr/lib" "$rt/lib" "$rt/loader" "$rt/bin"
cp "$py" "$rt/usr/bin/python3"
cp "$sh" "$rt/usr/bin/bash"
cp -a "$stdlib" "$rt/usr/lib/$ver"
cp -L "$ld" "$rt/lib/ld.so"
for f in "$py" "$sh" "$stdlib"/lib-dynload/*.so; do ldd "$f"; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  while read -r f; do cp -L "$f" "$rt/lib/"; done
gcc_s=$(dirname "$(readlink -f "$ld")")/libgcc_s.so.1  # dlopened by thread cancellation
if [ -e "$gcc_s" ]; then cp -L "$gcc_s" "$rt/lib/"; fi
ln "$rt/lib/ld.so" "$rt/loader/python3"
ln "$rt/lib/ld.so" "$rt/loader/bash"
printf '#!/bin/sh\nexec %s "$@"\n' "$RUNTIME_BASH" > "$rt/bin/bash"
chmod 755 "$rt/bin/bash"
touch "$rt/.complete"
echo "$READY"
"""
_READY_LINE = "fire-exp box runtime ready"

_READY: dict[tuple[str, str], str] = {}  # (engine, base image id) -> its volume, this process
_LOCK = threading.Lock()


def volume_name(base_image_id: str) -> str:
    """``fire-exp-runtime-DIGEST12``: the base image's id and the fill script."""
    key = f"{base_image_id}\0{_FILL}\0{' '.join(BASH)}"
    return f"fire-exp-runtime-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def ensure_runtime(client: Any, base_image: str) -> str:
    """The runtime volume made from ``base_image`` on the engine of ``client`` (made, or
    found complete, once per process and engine). Raises EnvironmentFailure when the base
    image is missing or lacks python3 or bash."""
    image_id = image_exists(client, base_image)
    if image_id is None:
        raise EnvironmentFailure(f"base image {base_image} is not on this Docker engine; "
                                 "the box runtime is made from it (run: fire-exp images "
                                 "bootstrap)")
    key = (str(client.api.base_url), image_id)
    volume = volume_name(image_id)
    with _LOCK:
        if _READY.get(key) == volume:
            return volume
        with host_lock(f"volume {volume}"):
            _fill(client, base_image, image_id, volume)
        _READY[key] = volume
    return volume


def forget_runtime(client: Any, volume: str) -> None:
    """Check ``volume`` again before its next use (a box found it incomplete)."""
    with _LOCK:
        for key, name in list(_READY.items()):
            if name == volume and key[0] == str(client.api.base_url):
                del _READY[key]


def _fill(client: Any, base_image: str, image_id: str, volume: str) -> None:
    """Fill ``volume`` unless it is complete. The container removes itself when it ends
    (``auto_remove``: also when this process dies meanwhile), so success is the last line
    of its output, read from an attach made before it starts."""
    import docker.errors
    from docker.types import Mount

    try:
        client.volumes.create(name=volume, labels={LABEL: "1", f"{LABEL}.kind": KIND,
                                                   f"{LABEL}.base": image_id})
        container = client.containers.create(
            base_image, ["-c", _FILL, "sh", _FILL_MOUNT], entrypoint=["sh"],
            auto_remove=True, network_mode="none", labels={LABEL: "1", f"{LABEL}.kind": KIND},
            environment={"RUNTIME_BASH": " ".join(BASH), "READY": _READY_LINE},
            mounts=[Mount(_FILL_MOUNT, volume, type="volume")])
        output = container.attach(stdout=True, stderr=True, stream=True, logs=True)
        container.start()
        text = b"".join(output).decode(errors="replace").strip()
    except docker.errors.DockerException as exc:
        raise EnvironmentFailure(f"the box runtime volume {volume}: {exc}") from exc
    if not text.endswith(_READY_LINE):
        _remove_quietly(client, container, volume)  # nothing in it is of use
        raise EnvironmentFailure(f"the box runtime could not be made from {base_image} "
                                 f"(it needs python3 and bash): {text[-600:]}")


def _remove_quietly(client: Any, container: Any, volume: str) -> None:
    try:
        container.wait(condition="removed", timeout=30)
    except Exception:  # noqa: BLE001, S110 - removed already
        pass
    try:
        client.volumes.get(volume).remove()
    except Exception:  # noqa: BLE001, S110 - in use or gone: a later cleanup has it
        pass


def runtime_mount(volume: str) -> Any:
    """The read-only mount of ``volume`` at :data:`RUNTIME` (docker-py's ``Mount``)."""
    from docker.types import Mount

    return Mount(RUNTIME, volume, type="volume", read_only=True, no_copy=True)


def box_path(image_path: str | None) -> str:
    """The box's ``PATH``: the image's (or Docker's default), then :data:`BIN`."""
    path = image_path or "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return f"{path}:{BIN}"


def runtime_volumes(client: Any) -> list[Any]:
    """fire-exp's runtime volumes on the engine of ``client``."""
    return list(client.volumes.list(filters={"label": [f"{LABEL}=1",
                                                       f"{LABEL}.kind={KIND}"]}))
