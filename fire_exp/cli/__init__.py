"""The ``fire-exp`` command: a thin dispatcher to one module per subcommand.

Each subcommand lives in ``fire_exp/cli/<module>.py`` and exposes ``main(argv) -> int``.
``run`` and ``freeze`` compose the Hydra config and take Hydra overrides (``panel=demo
seed=7``, ``-m agent.tier=weak,strong``); ``audit-routing`` takes ``key=value`` arguments; the
others take ordinary options (``--help``).
"""

from __future__ import annotations

import importlib
import sys

from fire_exp.errors import FireExpError

__all__ = ["COMMANDS", "main"]

# command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("fire_exp.cli.run", "freeze, run, analyse and report a panel (Hydra overrides)"),
    "freeze": ("fire_exp.cli.freeze", "write panels/NAME.prereg.json for a panel"),
    "analyze": ("fire_exp.cli.analyze", "analyse an attempts file (JSONL or CSV)"),
    "report": ("fire_exp.cli.report", "paper tables and figures from a run folder"),
    "tasks": ("fire_exp.cli.tasks", "list | show | validate | convert Harbor tasks"),
    "images": ("fire_exp.cli.images", "build base images without a registry"),
    "cleanup": ("fire_exp.cli.cleanup", "remove containers and images an interrupted run left"),
    "audit-routing": ("fire_exp.cli.audit_routing", "which families route to which tasks"),
    "hook": ("fire_exp.cli.hook", "Claude Code / Codex hook bridge (reads JSON on stdin)"),
    "export-hooks": ("fire_exp.cli.export_hooks", "write a CLI's hook settings for a portfolio"),
    "import": ("fire_exp.cli.import_", "import another harness's results as an attempts file"),
    "power": ("fire_exp.cli.power", "power of a panel's preregistered analysis (Hydra overrides)"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: fire-exp COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fire-exp`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        print(_usage())
        return 0
    if args[0] in {"--version", "-V"}:
        from fire_exp import __version__

        print(f"fire-exp {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"fire-exp: unknown command '{name}'\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    try:
        return int(module.main(rest) or 0)
    except FireExpError as exc:
        print(f"fire-exp {name}: error: {exc}", file=sys.stderr)
        return 2
