"""Where fire-exp finds its configs, portfolios, analysis plans and bundled task suites.

In a source checkout (and an editable install) these are the top-level folders of the
repository; an installed wheel carries copies under ``fire_exp/_data``.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
_REPO_ROOT = PACKAGE_DIR.parent
_DATA = PACKAGE_DIR / "_data"


def _resource(name: str) -> Path:
    repo = _REPO_ROOT / name
    return repo if repo.is_dir() else _DATA / name


def resolve_folder(root: Path, name: str, field: str, kind: str) -> Path:
    """``root/name`` if it is a folder, else ``name`` as a path to a folder.

    Raises:
        InputError: neither exists; the message lists the bundled names.
    """
    from fire_exp.errors import InputError

    bundled = root / name
    if bundled.is_dir():
        return bundled
    path = Path(name).expanduser()
    if path.is_dir():
        return path.resolve()
    known = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_"))
    raise InputError(field, name, f"no bundled {kind} or folder of that name",
                     f"bundled {kind}s: {', '.join(known)}")


CONFIG_DIR = _resource("configs")
PORTFOLIOS_DIR = _resource("portfolios")
ANALYSIS_DIR = _resource("analysis")
SUITES_DIR = PACKAGE_DIR / "suites"
