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


CONFIG_DIR = _resource("configs")
PORTFOLIOS_DIR = _resource("portfolios")
ANALYSIS_DIR = _resource("analysis")
SUITES_DIR = PACKAGE_DIR / "suites"
