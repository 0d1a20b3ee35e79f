"""The environment backends a maintenance command (``cleanup``, ``images``) acts on, found
in the registry by name or by capability: the command line names no backend."""

from __future__ import annotations

from fire_exp.environments.base import Capability, Environment
from fire_exp.errors import InputError
from fire_exp.registry import REGISTRY


def backends(name: str | None, capability: Capability | None = None
             ) -> list[type[Environment]]:
    """The backend registered as ``name``, or (None) every registered backend that has
    ``capability`` (any, when None) and can be loaded here."""
    if name is not None:
        return [_backend(name, "--environment")]
    found = []
    for known in REGISTRY.names("environment"):
        try:
            backend = _backend(known, "environment")
        except InputError:
            continue  # its optional dependency is not installed: nothing of it to act on
        if capability is None or capability in backend.capabilities:
            found.append(backend)
    return found


def _backend(name: str, field: str) -> type[Environment]:
    backend = REGISTRY.get("environment", name)
    if not (isinstance(backend, type) and issubclass(backend, Environment)):
        raise InputError("configs/environment", field,
                         f"environment {name!r} is not an Environment class",
                         "name a registered environment backend")
    return backend
