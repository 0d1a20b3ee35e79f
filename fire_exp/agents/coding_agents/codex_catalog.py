"""Model metadata for a model outside Codex's bundled catalogue.

Codex decides a model's tools from its catalogue entry: a slug it does not know (any local
model's) gets no ``apply_patch`` tool at all (reference/real-cli.md). Codex 0.163 reads a
replacement catalogue from the file the config key ``model_catalog_json`` names (a
``{"models": [ModelInfo, ...]}`` document, the shape ``codex debug models`` prints). The
entry fire-exp writes for such a model is the binary's own entry of a template model
(:data:`TEMPLATE`, read with ``codex debug models --bundled`` from the very binary that
runs), with the slug and display name changed: the same tools, instructions and shell the
template gets, so a local model meets the agent Codex gives its own models.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from typing import Any

from fire_exp.environments.failure import EnvironmentFailure

__all__ = ["TEMPLATE", "bundled_catalog", "catalog_for"]

TEMPLATE = "gpt-5.5"  # bundled in 0.163 with the freeform apply_patch tool
_TIMEOUT_S = 60.0


def bundled_catalog(binary: str) -> list[dict[str, Any]]:
    """The model entries the Codex binary at ``binary`` ships (cached per file)."""
    st = os.stat(binary)
    return _bundled(binary, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _bundled(binary: str, size: int, mtime_ns: int) -> list[dict[str, Any]]:
    # A throwaway CODEX_HOME: nothing of the user's configuration leaks in.
    with tempfile.TemporaryDirectory(prefix="fire-exp-codex-home-") as home:
        try:
            proc = subprocess.run([binary, "debug", "models", "--bundled"], capture_output=True,
                                  text=True, timeout=_TIMEOUT_S, stdin=subprocess.DEVNULL,
                                  env={"PATH": os.environ.get("PATH", ""), "HOME": home,
                                       "CODEX_HOME": home})
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvironmentFailure(f"`{binary} debug models --bundled` failed: {exc}") \
                from None
    try:
        models = json.loads(proc.stdout)["models"]
    except (json.JSONDecodeError, KeyError, TypeError):
        detail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
        raise EnvironmentFailure(f"`{binary} debug models --bundled` printed no model "
                                 f"catalogue (exit {proc.returncode}): {detail}") from None
    return [m for m in models if isinstance(m, dict)]


def catalog_for(model: str, binary: str, template: str = TEMPLATE) -> bytes | None:
    """The ``model_catalog_json`` document that gives ``model`` the template's metadata
    (None: the binary knows ``model`` already, so nothing is to be written).

    Raises:
        EnvironmentFailure: the binary's catalogue lacks the template model.
    """
    models = bundled_catalog(binary)
    if any(m.get("slug") == model for m in models):
        return None
    found = [m for m in models if m.get("slug") == template]
    if not found:
        slugs = ", ".join(str(m.get("slug")) for m in models)
        raise EnvironmentFailure(f"Codex at {binary} has no model {template!r} to copy the "
                                 f"metadata of model {model!r} from (it has {slugs})")
    entry = dict(found[0], slug=model, display_name=model, upgrade=None)
    return json.dumps({"models": [entry]}).encode()
