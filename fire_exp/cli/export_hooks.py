"""``fire-exp export-hooks --target claude-code|codex --portfolio P --arm A [--out DIR]``.

Merges the hooks that run the arm's policies through ``fire-exp hook`` into
``DIR/.claude/settings.json`` or ``DIR/.codex/hooks.json`` (and, for Codex, turns on
``[features].hooks`` in ``DIR/.codex/config.toml``): a team can deploy a frozen portfolio
outside any experiment. Every other key and hook in those files stays, a second export adds
nothing twice, each changed file is backed up first (``FILE.fire-exp-backup-TIME``), and
``--remove`` takes exactly fire-exp's entries out again. The portfolio and arm are loaded
(and a manifest's hashes verified) first, so hooks are only written for policies that load.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fire_exp.errors import InputError
from fire_exp.files import read_text
from fire_exp.policies.hook_files import (
    merged,
    read_json,
    with_feature_flag,
    without_feature_flag,
    without_ours,
    write_with_backup,
)
from fire_exp.policies.hook_settings import DEFAULT_TIMEOUT_S, TARGETS, hook_settings
from fire_exp.policies.hooks import load_arm_families

CODEX_CONFIG = Path(".codex") / "config.toml"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fire-exp export-hooks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, choices=sorted(TARGETS))
    parser.add_argument("--portfolio",
                        help="portfolio name or folder, or a frozen *.prereg.json manifest")
    parser.add_argument("--arm", help="real | sham | always_verify | reconsider")
    parser.add_argument("--out", default=".", help="project folder to write into")
    parser.add_argument("--state", default=None,
                        help="hook state and activity log folder (default: OUT/.fire-exp/hooks)")
    parser.add_argument("--controls", default=None, help="control sources (default: controls)")
    parser.add_argument("--command", default="fire-exp",
                        help="how the CLI calls fire-exp (e.g. 'python3 -m fire_exp')")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S,
                        help="seconds each hook may take")
    parser.add_argument("--remove", action="store_true",
                        help="take fire-exp's hooks (and its config.toml lines) out again")
    return parser


def _absolute(value: str) -> str:
    path = Path(value).expanduser()
    return str(path.resolve()) if path.exists() else value  # a bare name stays a name


def _report(path: Path, result: tuple[bool, Path | None]) -> None:
    changed, backup = result
    saved = f" (the previous file is kept as {backup.name})" if backup else ""
    print(f"{'wrote' if changed else 'unchanged'} {path}{saved}", file=sys.stderr)


def _remove(out: Path, target: str) -> int:
    path = out / TARGETS[target]
    config = out / CODEX_CONFIG
    doc = without_ours(read_json(path)) if path.is_file() else None
    text = without_feature_flag(read_text(config), str(config)) \
        if target == "codex" and config.is_file() else None  # both checked before writing
    if doc is not None:
        _report(path, write_with_backup(path, json.dumps(doc, indent=2) + "\n"))
    if text is not None:
        _report(config, write_with_backup(config, text))
    return 0


def _trust_steps(out: Path) -> str:
    return (
        "codex: hooks run only when Codex trusts them, and untrusted ones are skipped "
        "silently:\n"
        f"  1. trust the project: start `codex` in {out} and accept the trust prompt (project "
        "hooks load only from a trusted project's .codex/ folder);\n"
        "  2. trust each hook: run `/hooks` in Codex, review the fire-exp hooks and trust "
        "them (trust is kept per hook hash: after a new export, trust them again);\n"
        "  for a one-off headless run, `codex exec --dangerously-bypass-hook-trust` skips "
        "the review.")


def main(argv: list[str]) -> int:
    """Merge (or remove) the hooks; prints what changed and where."""
    args = _parser().parse_args(argv)
    out = Path(args.out).resolve()
    if args.remove:
        return _remove(out, args.target)
    if not args.portfolio or not args.arm:
        raise InputError("fire-exp export-hooks", "--portfolio/--arm", "missing",
                         "give both (or --remove to take fire-exp's hooks out)")
    if not 1 <= args.timeout <= 86_400:
        raise InputError("fire-exp export-hooks", "--timeout", f"{args.timeout} seconds is "
                         "outside 1..86400", "give each hook between a second and a day")
    families = load_arm_families(args.portfolio, args.arm, args.controls)
    state = Path(args.state).expanduser().resolve() if args.state else out / ".fire-exp" / "hooks"
    settings = hook_settings(args.target, families, portfolio=_absolute(args.portfolio),
                             arm=args.arm, state_dir=str(state), prefix=args.command,
                             controls=_absolute(args.controls) if args.controls else None,
                             timeout_s=args.timeout)
    path = out / TARGETS[args.target]
    doc = merged(read_json(path), settings)
    config = out / CODEX_CONFIG
    if args.target == "codex":  # both files checked before either is written
        text = read_text(config) if config.is_file() else ""
        flagged = with_feature_flag(text, str(config))
    _report(path, write_with_backup(path, json.dumps(doc, indent=2) + "\n"))
    print(f"hooks: {', '.join(settings['hooks'])}; activity log: {state / 'activity.jsonl'}",
          file=sys.stderr)
    if args.target == "codex":
        _report(config, write_with_backup(config, flagged))
        print(_trust_steps(out), file=sys.stderr)
    return 0
