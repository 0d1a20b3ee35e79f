"""The folder ``fire-exp view --out`` writes into: the site writes only what it owns.

A site carries the marker file ``.fire-exp-view``. ``--out`` may name a new or empty folder
or an earlier site (one with the marker, or one written before the marker existed, holding
nothing but a site's files); then only the files a site writes are replaced, and anything
else of the user's beside them stays. Any other folder, or a file, is refused before
anything is read or written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fire_exp.errors import InputError

__all__ = ["ASSETS", "MARKER", "OWNED", "check_out", "clear_site", "is_site"]

ASSETS = Path(__file__).with_name("assets")  # the page and its code, copied into every site
MARKER = ".fire-exp-view"
OWNED = ("data", "figures", MARKER, *sorted(p.name for p in ASSETS.iterdir()))


def is_site(folder: Path) -> bool:
    """Whether ``folder`` holds an explorer site: it carries the marker, or (a site written
    before the marker existed) holds nothing but a site's files, its index among them."""
    if (folder / MARKER).is_file():
        return True
    index = folder / "data" / "index.js"
    with_index = index.is_file() and index.read_bytes()[:11] == b"FIRE_INDEX="
    return with_index and all(p.name in OWNED for p in folder.iterdir())


def check_out(out: Path) -> None:
    """Refuse an ``out`` the site does not own: a file, or a folder with other content.

    Raises:
        InputError: ``out`` is a file, or a folder that is neither empty nor an earlier
            explorer site (one holding the ``.fire-exp-view`` marker).
    """
    if out.exists() and not out.is_dir():
        raise InputError(out, "--out", "is a file, not a folder", "name a new or empty folder")
    if out.is_dir() and not is_site(out) and any(out.iterdir()):
        raise InputError(out, "--out", f"holds files of its own and no earlier explorer site "
                         f"(no {MARKER} marker); nothing was written",
                         "name a new or empty folder")


def clear_site(out: Path) -> None:
    """Remove an earlier site's files from ``out`` (only those the site writes)."""
    for name in OWNED:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
