"""What runs inside the box: the session host and the process utilities it imports.

Both modules use the standard library only. A backend ships the files :data:`FILES` into
one folder of the box and runs ``python3 FOLDER/session_host.py MARKER LOGFILE`` there with
a python3 of its own choosing: the Docker backend its box runtime's, which the image need
not have (``docker_runtime.py``), and the local environment the harness's own from here, so
one program serves every backend and none needs a compiler. The host side imports
:mod:`procs` (one copy of the ``/proc`` scan and ``kill_marked``) but never the program
itself: it speaks to it through :mod:`fire_exp.environments.session_client`.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "session_host.py"
FILES = ("session_host.py", "procs.py")


def sources() -> dict[str, bytes]:
    """The files to ship into the box's folder, by name."""
    return {name: (HERE / name).read_bytes() for name in FILES}
