"""The ``fire-exp`` command: a thin dispatcher to one module per subcommand.

Each subcommand lives in ``fire_exp/cli/<module>.py`` and exposes ``main(argv) -> int``.
``run`` and ``freeze`` compose the Hydra config and take Hydra overrides (``panel=demo
seed=7``, ``-m agent.tier=weak,strong``); ``audit-routing`` takes ``key=value`` arguments; the
others take ordinary options (``--help``).
"""

from __future__ import annotations

import errno
import gc
import importlib
import sys
from collections.abc import Callable
from typing import NoReturn

from fire_exp.errors import FireExpError

__all__ = ["COMMANDS", "UNREADABLE", "console", "error_line", "main"]

# command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("fire_exp.cli.run", "freeze, run, analyse and report a panel (Hydra overrides)"),
    "freeze": ("fire_exp.cli.freeze", "write panels/NAME.prereg.json for a panel"),
    "analyze": ("fire_exp.cli.analyze", "analyse an attempts file (JSONL or CSV)"),
    "report": ("fire_exp.cli.report", "paper tables and figures from a run folder"),
    "view": ("fire_exp.cli.view", "browse a run's attempts in a static site (run explorer)"),
    "tasks": ("fire_exp.cli.tasks", "list | show | validate | convert Harbor tasks"),
    "images": ("fire_exp.cli.images", "build base images without a registry"),
    "cleanup": ("fire_exp.cli.cleanup", "remove containers and images an interrupted run left"),
    "audit-routing": ("fire_exp.cli.audit_routing", "which families route to which tasks"),
    "hook": ("fire_exp.cli.hook", "Claude Code / Codex hook bridge (reads JSON on stdin)"),
    "export-hooks": ("fire_exp.cli.export_hooks", "write a CLI's hook settings for a portfolio"),
    "import": ("fire_exp.cli.import_", "import another harness's results as an attempts file"),
    "power": ("fire_exp.cli.power", "power of a panel's preregistered analysis (Hydra overrides)"),
    "serve-model": ("fire_exp.cli.serve_model",
                    "serve a local model to the real Codex / Claude Code CLIs (until Ctrl-C)"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: fire-exp COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


_OS_FIXES = {
    errno.EACCES: "make it writable, or write elsewhere (results_dir=, --out)",
    errno.EPERM: "make it writable, or write elsewhere (results_dir=, --out)",
    errno.EROFS: "the file system is read-only: write elsewhere (results_dir=, --out)",
    errno.ENOSPC: "the disk is full: free space, then resume; finished attempts are kept",
    errno.EDQUOT: "the disk quota is exhausted: free space, then resume",
    errno.ENOTDIR: "a file stands where a folder should be: move it or choose another path",
    errno.EEXIST: "a file stands where a folder should be: move it or choose another path",
    errno.EISDIR: "a folder stands where a file should be: choose another path",
}


# Decoding faults no reader turned into an InputError (each reader at an entry point names
# its file; this is the net under them): still one line, never a traceback.
UNREADABLE = (UnicodeDecodeError, RecursionError)


def error_line(command: str, exc: BaseException) -> str:
    """The one line a user-facing error or an OS error prints (no traceback)."""
    if isinstance(exc, UnicodeDecodeError):
        return (f"fire-exp {command}: error: a file it read is not UTF-8 text ({exc.reason} "
                f"at byte {exc.start}) (save it as UTF-8)")
    if isinstance(exc, RecursionError):
        return (f"fire-exp {command}: error: a file it read is nested too deeply to read "
                "(flatten it)")
    if isinstance(exc, OSError) and not isinstance(exc, FireExpError):
        where = exc.filename if exc.filename is not None else "<file system>"
        what = exc.strerror or type(exc).__name__
        fix = _OS_FIXES.get(exc.errno or 0)
        return f"fire-exp {command}: error: {where}: {what}" + (f" ({fix})" if fix else "")
    return f"fire-exp {command}: error: {exc}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fire-exp`` command (``console`` is the installed script)."""
    return _dispatch(argv, lambda: None)


def console() -> NoReturn:
    """The ``fire-exp`` console script and ``python -m fire_exp``: ``main`` in a process
    that ends with it.

    Start-up (the command's module, and numpy, pandas and pydantic under it) leaves about
    120,000 objects the collector tracks, all living until exit, and no garbage: the
    collector is off while it imports, the survivors are then frozen out of every later
    collection, and the collector runs as usual for the command. At exit, freezing the
    heap spares the interpreter a last collection over all of it. Together about 70 ms of
    a 0.5 s ``analyze``; atexit handlers still run and open files are still closed.
    (``main`` leaves the collector alone: tests call it many times in one process.)
    """
    gc.disable()
    try:
        status = _dispatch(None, _started)
    finally:
        gc.enable()
    gc.freeze()
    sys.exit(status)


def _started() -> None:
    gc.freeze()  # what start-up loaded lives until exit: never scanned again
    gc.enable()


def _dispatch(argv: list[str] | None, started: Callable[[], None]) -> int:
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
    try:
        module = importlib.import_module(COMMANDS[name][0])
        started()
        return int(module.main(rest) or 0)
    except (FireExpError, OSError, *UNREADABLE) as exc:  # OSError: permissions, a full disk
        print(error_line(name, exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        print(f"fire-exp {name}: interrupted", file=sys.stderr)
        return 130
