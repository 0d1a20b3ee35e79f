"""``fire-exp export-hooks --target claude-code|codex --portfolio P --arm A [--out DIR]``.

Writes ``DIR/.claude/settings.json`` or ``DIR/.codex/hooks.json`` so that the CLI runs the
arm's policies through ``fire-exp hook``: a team can deploy a frozen portfolio outside any
experiment. The portfolio and arm are loaded (and a manifest's hashes verified) first, so
a settings file is only written for policies that load.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fire_exp.policies.hook_settings import DEFAULT_TIMEOUT_S, TARGETS, hook_settings
from fire_exp.policies.hooks import load_arm_families


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fire-exp export-hooks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, choices=sorted(TARGETS))
    parser.add_argument("--portfolio", required=True,
                        help="portfolio name or folder, or a frozen *.prereg.json manifest")
    parser.add_argument("--arm", required=True, help="real | sham | always_verify | reconsider")
    parser.add_argument("--out", default=".", help="project folder to write into")
    parser.add_argument("--state", default=None,
                        help="hook state and activity log folder (default: OUT/.fire-exp/hooks)")
    parser.add_argument("--controls", default=None, help="control sources (default: controls)")
    parser.add_argument("--command", default="fire-exp",
                        help="how the CLI calls fire-exp (e.g. 'python3 -m fire_exp')")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S,
                        help="seconds each hook may take")
    return parser


def _absolute(value: str) -> str:
    path = Path(value).expanduser()
    return str(path.resolve()) if path.exists() else value  # a bare name stays a name


def main(argv: list[str]) -> int:
    """Write the settings file; prints its path."""
    args = _parser().parse_args(argv)
    out = Path(args.out).resolve()
    families = load_arm_families(args.portfolio, args.arm, args.controls)
    state = Path(args.state).expanduser().resolve() if args.state else out / ".fire-exp" / "hooks"
    settings = hook_settings(args.target, families, portfolio=_absolute(args.portfolio),
                             arm=args.arm, state_dir=str(state), prefix=args.command,
                             controls=_absolute(args.controls) if args.controls else None,
                             timeout_s=args.timeout)
    path = out / TARGETS[args.target]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path} ({', '.join(settings['hooks'])}); activity log: "
          f"{state / 'activity.jsonl'}", file=sys.stderr)
    if args.target == "codex":
        print("codex: trust these hooks (`codex exec --dangerously-bypass-hook-trust`, or "
              "review them once interactively), or Codex skips them silently", file=sys.stderr)
    return 0
