"""The panel a worker runs is the driver's: the driver sends the digest of its verified
panel with every job (:func:`panel_digest`); a worker builds its panel from the driver's
config once per process and checks it against that digest (:func:`worker_panel`)."""

from __future__ import annotations

import hashlib
import json
import threading

from fire_exp.config import RunConfig
from fire_exp.runner.build import build_panel
from fire_exp.runner.model import Panel
from fire_exp.runner.prereg import panel_hashes

__all__ = ["panel_digest", "worker_panel"]


def panel_digest(panel: Panel) -> str:
    """SHA-256 over the content hashes the preregistration freezes (not their paths)."""
    hashes = {key: value["sha256"] for key, value in panel_hashes(panel).items()}
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()


_PANELS: dict[str, Panel] = {}
_PANELS_LOCK = threading.Lock()


def worker_panel(config: RunConfig, digest: str) -> Panel:
    """The panel a worker builds from the driver's config (once per process), checked
    against the driver's panel digest.

    Raises:
        RuntimeError: this machine's tasks or policy sources differ from the driver's.
        FireExpError: the panel does not build here.
    """
    key = config.config_hash()
    with _PANELS_LOCK:
        if key not in _PANELS:
            _PANELS[key] = build_panel(config)
        panel = _PANELS[key]
    if digest and panel_digest(panel) != digest:
        raise RuntimeError("this machine's tasks or policy sources differ from the "
                           "driver's preregistered panel")
    return panel
