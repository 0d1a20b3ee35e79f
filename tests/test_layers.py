"""The imports of ``fire_exp/`` follow the layers of ``docs/architecture.md`` and never
go round in a circle.

Every ``import`` statement counts: at module level, inside a function, and under
``if TYPE_CHECKING:`` (a type is a dependency too, and a function-level import is how a
circle hides). Importing ``fire_exp.a.b`` also runs ``fire_exp/a/__init__.py``; that
implicit edge is not counted, since every package's ``__init__`` re-exports its modules
(an explicit import of the package itself is counted).
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"

# Circles that exist on purpose, for now: each entry is one circle exactly (the set of its
# modules), so a new circle, or one of these that grows, still fails. None is left.
ALLOWED_CIRCLES: set[frozenset[str]] = set()

Graph = dict[str, dict[str, int]]  # module -> {imported module: first line}

# One place runs a panel: the command line hands the run's config to these and prints what
# comes back, so a run's path goes down the layers without climbing back to a command.
RUN_ENTRY_POINTS = frozenset({"fire_exp.runner.launch", "fire_exp.runner.preregister"})


def package_modules(package: Path) -> dict[str, Path]:
    """Every module of the package at ``package``, by dotted name (packages by their own
    name); folders without ``__init__.py`` (task suites, data) are not code."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if not all((package.parent.joinpath(*parts[:i]) / "__init__.py").is_file()
                   for i in range(1, len(parts))):
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imported(node: ast.AST, module: str, is_package: bool, known: set[str]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: from the module's package, up level - 1 more
            package = module.split(".") if is_package else module.split(".")[:-1]
            anchor = package[: len(package) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            full = f"{base}.{alias.name}"
            yield full if full in known else base


def import_graph(package: Path) -> Graph:
    """Who imports whom inside the package at ``package`` (every import statement)."""
    modules = package_modules(package)
    known = set(modules)
    graph: Graph = {name: {} for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for target in _imported(node, name, path.name == "__init__.py", known):
                if target in known and target != name:
                    graph[name].setdefault(target, getattr(node, "lineno", 0))
    return graph


def read_layers(markdown: str) -> list[tuple[str, list[str]]]:
    """The ```layers block: (layer, the names it covers), top layer first."""
    block = re.search(r"^```layers\n(.*?)^```", markdown, re.S | re.M)
    assert block, f"{ARCHITECTURE}: no ```layers block"
    layers = []
    for line in block.group(1).splitlines():
        if line.strip():
            name, *covers = line.split()
            layers.append((name, covers))
    return layers


def layer_of(module: str, layers: list[tuple[str, list[str]]]) -> int | None:
    """The index (0 = top) of the layer whose most specific name covers ``module``."""
    best: tuple[int, int] | None = None
    for index, (_, covers) in enumerate(layers):
        for name in covers:
            if name.endswith(".__init__"):
                hit = module == name.removesuffix(".__init__")
            else:
                hit = module == name or module.startswith(name + ".")
            if hit and (best is None or len(name) > best[0]):
                best = (len(name), index)
    return None if best is None else best[1]


def upward_imports(graph: Graph, layers: list[tuple[str, list[str]]]) -> list[str]:
    """Every import from a module to one of a layer above its own."""
    found = []
    for module, targets in sorted(graph.items()):
        here = layer_of(module, layers)
        for target, line in sorted(targets.items()):
            there = layer_of(target, layers)
            if here is not None and there is not None and there < here:
                found.append(f"{module} (line {line}) imports {target}: layer "
                             f"{layers[here][0]} imports {layers[there][0]}, which is above it")
    return found


def commands_reaching_into_the_runner(graph: Graph, cli: str = "fire_exp.cli",
                                      runner: str = "fire_exp.runner",
                                      entry_points: frozenset[str] = RUN_ENTRY_POINTS,
                                      ) -> list[str]:
    """Every import by a command's module of the runner past its entry points, or of
    another command's module (the shared ``_private`` helpers and the package aside)."""
    found = []
    for module, targets in sorted(graph.items()):
        if not module.startswith(cli + "."):
            continue
        for target, line in sorted(targets.items()):
            into_runner = target.startswith(runner + ".") and target not in entry_points
            command = (target.startswith(cli + ".")
                       and not target.removeprefix(cli + ".").startswith("_"))
            if into_runner or command:
                found.append(f"{module} (line {line}) imports {target}: "
                             + ("a command hands its run to the runner's entry points "
                                f"({', '.join(sorted(entry_points))}) and prints what "
                                "comes back" if into_runner else
                                "a command borrows nothing of another command"))
    return found


def circles(graph: Graph) -> list[frozenset[str]]:
    """The import circles: strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def one_cycle(graph: Graph, component: frozenset[str]) -> str:
    """A shortest import path round the circle, for the message."""
    start = min(component)
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return " -> ".join([start, *reversed(path[:-1]), start])
            if w in component and w not in previous:
                previous[w] = v
                queue.append(w)
    return ", ".join(sorted(component))


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(ROOT / "fire_exp")


@pytest.fixture(scope="module")
def layers() -> list[tuple[str, list[str]]]:
    return read_layers(ARCHITECTURE.read_text(encoding="utf-8"))


def test_every_module_has_a_layer_and_every_layer_names_code(graph, layers) -> None:
    unplaced = [m for m in sorted(graph) if layer_of(m, layers) is None]
    assert not unplaced, (f"modules no line of the ```layers block in {ARCHITECTURE} "
                          f"covers (add them to their layer): {unplaced}")
    stale = [name for _, covers in layers for name in covers
             if name.removesuffix(".__init__") not in graph]
    assert not stale, f"the ```layers block names what fire_exp/ does not hold: {stale}"


def test_no_import_runs_up_the_layers(graph, layers) -> None:
    found = upward_imports(graph, layers)
    assert not found, "imports up the layers of docs/architecture.md:\n" + "\n".join(found)


def test_a_command_hands_its_run_to_the_runner_whole(graph) -> None:
    found = commands_reaching_into_the_runner(graph)
    assert not found, "the command line does the runner's work:\n" + "\n".join(found)


def test_the_attempt_record_sits_at_the_bottom(graph) -> None:
    assert set(graph["fire_exp.records"]) <= {"fire_exp.errors", "fire_exp.files"}
    assert set(graph["fire_exp.files"]) <= {"fire_exp.errors"}
    assert not graph["fire_exp.errors"]


def test_no_import_circle_beyond_the_allowed_ones(graph) -> None:
    found = circles(graph)
    new = [one_cycle(graph, c) for c in found if c not in ALLOWED_CIRCLES]
    assert not new, "import circles:\n" + "\n".join(new)
    gone = [sorted(c) for c in ALLOWED_CIRCLES if c not in found]
    assert not gone, f"these circles are gone: remove them from ALLOWED_CIRCLES: {gone}"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_the_checks_catch_a_circle_and_an_upward_import(tmp_path) -> None:
    package = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/top/__init__.py": "from pkg.top.a import A\n",
        "pkg/top/a.py": "from pkg.low import B\nA = 1\n",
        "pkg/low/__init__.py": "from pkg.low.b import B\n",
        # b reaches up lazily, and under TYPE_CHECKING into a module that imports it back
        "pkg/low/b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    from pkg.low import c\nB = 2\n"
                         "def f():\n    from pkg.top.a import A\n    return A\n"),
        "pkg/low/c.py": "from . import b\n",
        "pkg/data/task.py": "import pkg.top\n",  # no __init__.py: not code
    })
    graph = import_graph(package)
    assert "pkg.data.task" not in graph
    layers = read_layers("```layers\ntop pkg.top\nlow pkg.low pkg.__init__\n```\n")
    assert upward_imports(graph, layers) == [
        "pkg.low.b (line 6) imports pkg.top.a: layer low imports top, which is above it"]
    assert sorted(map(sorted, circles(graph))) == [
        ["pkg.low", "pkg.low.b", "pkg.low.c", "pkg.top.a"]]
    assert layer_of("pkg", layers) == 1 and layer_of("pkg.other", layers) is None


def test_the_check_catches_a_command_doing_the_runners_work(tmp_path) -> None:
    package = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/cli/__init__.py": "",
        "pkg/cli/_shared.py": "",
        "pkg/cli/freeze.py": "from pkg.runner.launch import go\n",
        "pkg/cli/run.py": ("from pkg.cli import _shared\nfrom pkg.cli.freeze import x\n"
                           "from pkg.runner.launch import go\n"
                           "def f():\n    from pkg.runner.build import b\n"),
        "pkg/runner/__init__.py": "",
        "pkg/runner/launch.py": "from pkg.runner.build import b\n",
        "pkg/runner/build.py": "",
    })
    found = commands_reaching_into_the_runner(import_graph(package), "pkg.cli", "pkg.runner",
                                              frozenset({"pkg.runner.launch"}))
    assert [line.split(":")[0] for line in found] == [
        "pkg.cli.run (line 2) imports pkg.cli.freeze",
        "pkg.cli.run (line 5) imports pkg.runner.build"]


def test_the_doc_states_as_many_layers_as_its_block_holds(layers) -> None:
    stated = re.search(r"held to finer layers, (\d+) of them", ARCHITECTURE.read_text())
    assert stated, f"{ARCHITECTURE} no longer says how many layers its block holds"
    assert int(stated.group(1)) == len(layers)
