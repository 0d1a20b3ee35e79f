"""Load policy sources: every ``*.py`` file of a portfolio folder, each defining ``FAMILIES``.

A portfolio is a folder under ``portfolios/`` (or any path). Its files are hashed with
SHA-256; the hashes are what a preregistration freezes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from fire_exp.errors import InputError
from fire_exp.paths import PORTFOLIOS_DIR, resolve_folder
from fire_exp.policies.model import Family


@dataclass(frozen=True)
class Portfolio:
    """Families loaded from a folder of policy sources, with each source's SHA-256."""

    name: str
    path: Path
    families: tuple[Family, ...]
    sources: dict[str, str]  # file name -> sha256

    def family(self, name: str) -> Family:
        for family in self.families:
            if family.name == name:
                return family
        raise KeyError(name)


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resolve_portfolio(name: str) -> Path:
    """A portfolio's name under ``portfolios/`` or a path to a folder of sources."""
    return resolve_folder(PORTFOLIOS_DIR, name, "portfolio", "portfolio")


def _import_source(path: Path, digest: str) -> object:
    module_name = f"fire_exp_policy_{path.stem}_{digest[:12]}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise InputError(path, "<source>", "cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise InputError(path, "<import>", f"{type(exc).__name__}: {exc}",
                         "fix the policy source") from exc
    sys.modules[module_name] = module
    return module


def load_portfolio(name_or_path: str | Path) -> Portfolio:
    """Import every policy source of a portfolio folder.

    Raises:
        InputError: a source fails to import, lacks ``FAMILIES``, or repeats a family name.
    """
    path = resolve_portfolio(str(name_or_path))
    families: list[Family] = []
    sources: dict[str, str] = {}
    for source in sorted(path.glob("*.py")):
        if source.name.startswith("_"):
            continue
        digest = sha256_file(source)
        sources[source.name] = digest
        module = _import_source(source, digest)
        declared = getattr(module, "FAMILIES", None)
        if not isinstance(declared, list | tuple) or not declared:
            raise InputError(source, "FAMILIES", "missing or empty",
                             "define FAMILIES = [YourFamily()] in the source")
        for family in declared:
            if not isinstance(family, Family) or not family.name:
                raise InputError(source, "FAMILIES",
                                 f"{family!r} is not a named fire_exp.policies.Family")
            if any(f.name == family.name for f in families):
                raise InputError(source, f"FAMILIES.{family.name}",
                                 "family name already defined by another source")
            families.append(family)
    if not families:
        raise InputError(path, "<portfolio>", "no policy sources (*.py) found")
    return Portfolio(name=path.name, path=path, families=tuple(families), sources=sources)
