"""The path of a run's config from ``fire-exp run`` to the report, as docs/architecture.md
counts it: run ``fire-exp run ARGS`` in this process and list every hand-off, a call from a
function of one ``fire_exp`` module to one of another that receives the run (its
``RunConfig``, the ``Panel`` built from it, or its run folder), in call order.

    python -m benchmarks.run_path panel=demo panel.attempts=1 results_dir=/tmp/x run=r

Prints the hand-offs (caller -> callee, with the callee's layer), then ``passes`` (the
hand-offs), ``modules`` (the modules they join) and ``climbs``: hand-offs by a command's
module after its first (the run came back up to the command line and went down again),
and hand-offs to a module of a higher layer than the caller's. Calls inside one module,
and an attempt's own work (its spec, environment and agent: no config), are not hand-offs.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from fire_exp.cli import main
from fire_exp.config import RunConfig
from fire_exp.runner.model import Panel
from tests.test_layers import ARCHITECTURE, layer_of, read_layers

PACKAGE = str(Path(__file__).resolve().parents[1] / "fire_exp")


def _carries_run(value: Any, run_dir: Path | None) -> bool:
    if isinstance(value, RunConfig | Panel):
        return True
    return run_dir is not None and isinstance(value, Path) and value.resolve() == run_dir


def trace(argv: list[str]) -> list[tuple[str, str]]:
    """The hand-offs of ``fire-exp ARGV`` (caller module, callee module), in call order."""
    options = dict(a.split("=", 1) for a in argv if "=" in a)
    run_dir = (Path(options["results_dir"]).resolve() / options["panel"] / options["run"]
               if {"results_dir", "panel", "run"} <= set(options) else None)
    traced: set[FrameType] = set()
    handoffs: list[tuple[str, str]] = []

    def module_of(frame: FrameType) -> str | None:
        return frame.f_globals.get("__name__") if frame.f_code.co_filename.startswith(
            PACKAGE) else None

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or (callee := module_of(frame)) is None:
            return
        names = frame.f_code.co_varnames[:frame.f_code.co_argcount
                                         + frame.f_code.co_kwonlyargcount]
        if not any(_carries_run(frame.f_locals.get(n), run_dir) for n in names):
            return
        traced.add(frame)
        caller = frame.f_back
        while caller is not None and caller not in traced:
            caller = caller.f_back
        if caller is not None and (name := module_of(caller)) and name != callee:
            handoffs.append((name, callee))

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        main(["run", *argv])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return handoffs


def count(handoffs: list[tuple[str, str]]) -> tuple[int, int, int]:
    """passes, modules, climbs (see the module's docstring)."""
    layers = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    entry = {"fire_exp.cli", "fire_exp.__main__"}
    climbs, seen_command = 0, False
    for caller, callee in handoffs:
        command = any(caller == e or caller.startswith(e + ".") for e in entry)
        if command and seen_command:
            climbs += 1
        seen_command = seen_command or command
        up, down = layer_of(callee, layers), layer_of(caller, layers)
        if up is not None and down is not None and up < down:
            climbs += 1
    modules = {m for pair in handoffs for m in pair}
    return len(handoffs), len(modules), climbs


if __name__ == "__main__":
    found = trace(sys.argv[1:])
    layers = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    seen: set[tuple[str, str]] = set()
    for caller, callee in found:
        if (caller, callee) not in seen:
            seen.add((caller, callee))
            index = layer_of(callee, layers)
            print(f"{caller} -> {callee} ({layers[index][0] if index is not None else '?'})")
    passes, modules, climbs = count(found)
    print(f"passes {passes} (distinct {len(seen)}), modules {modules}, climbs {climbs}")
