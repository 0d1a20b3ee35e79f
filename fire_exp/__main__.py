"""``python -m fire_exp`` is the ``fire-exp`` command."""

from fire_exp.cli import console

console()
