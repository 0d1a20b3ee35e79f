"""What the served-model tests share besides fixtures: whether the model can be served,
how the suite runs a model server; and ``tests.signals.gone``."""

from __future__ import annotations

import os

from fire_exp.errors import PreflightError
from fire_exp.serve.models import DEFAULT, gguf_path, model_named
from fire_exp.serve.server import server_binary
from tests.ci import missing
from tests.signals import gone

__all__ = ["SUITE_NICE", "SUITE_THREADS", "gone", "need_model"]

# How the suite runs a model server beside its other tests on two cores: one thread, at
# niceness -10 where it may (root, as in CI). Measured (docs/testing.md): with
# 6 or 12 busy processes beside it, a two-thread server's generation fell from 22 to 7 and
# 0.4 tokens/s (its threads wait on each other at every step while one is descheduled),
# and CI saw 1.7 tokens/s; a one-thread server at -10 kept 11 tokens/s and its prompt speed
# (66 tokens/s) under both loads.
SUITE_THREADS = 1
SUITE_NICE = -10 if os.geteuid() == 0 else 0


def need_model() -> None:
    """The llama-server binary and the default model's weights, or the test is missing them."""
    try:
        server_binary()
        gguf_path(model_named(DEFAULT))
    except PreflightError as exc:
        missing(str(exc))

