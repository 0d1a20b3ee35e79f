"""What the served-model tests share besides fixtures: whether the model can be served,
whether a process is gone."""

from __future__ import annotations

import os

from fire_exp.errors import PreflightError
from fire_exp.serve.models import DEFAULT, gguf_path, model_named
from fire_exp.serve.server import server_binary
from tests.ci import missing

__all__ = ["gone", "need_model"]


def need_model() -> None:
    """The llama-server binary and the default model's weights, or the test is missing them."""
    try:
        server_binary()
        gguf_path(model_named(DEFAULT))
    except PreflightError as exc:
        missing(str(exc))


def gone(pid: int) -> bool:
    """Whether process ``pid`` no longer exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
