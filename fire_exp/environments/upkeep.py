"""What a backend keeps up between panels, as data the command line prints: what
``fire-exp cleanup`` removed and kept (:class:`CleanupReport`), the images a backend builds
from (:class:`ImageEntry`) and what bootstrapping a base image did
(:class:`BootstrapResult`). The backends' class methods (``Environment.cleanup``,
``list_images``, ``build_base_image``) return them, so the command line names no backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BootstrapResult", "CleanupReport", "ImageEntry"]


@dataclass
class CleanupReport:
    """What a cleanup removed, kept (with why) and could not remove."""

    containers: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)
    images: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)
    kept_networks: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)
    errors: list[str] = field(default_factory=list)

    @property
    def kept_live(self) -> list[str]:
        """Names of the containers kept (any reason)."""
        return [name for name, _ in self.kept]


@dataclass(frozen=True)
class ImageEntry:
    """One image a backend made: its kind (``base``, ``task``, ``cli``; ``runtime``: the
    volume of a box runtime made from a base image), tag and size."""

    kind: str
    tag: str
    size_mb: float


@dataclass(frozen=True)
class BootstrapResult:
    """What bootstrapping a base image did."""

    tag: str
    image_id: str
    built: bool  # False: the image existed and was kept
    tool: str = ""
    seconds: float = 0.0
