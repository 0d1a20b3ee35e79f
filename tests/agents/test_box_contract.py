"""The coding-agent CLIs go through the environment contract, with one set of values.

Nothing above ``environments/`` imports a backend's module, names its class or compares a
string with its name, and no agent reaches into a private member;
the Codex feature key is the same wherever fire-exp writes a Codex config.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from fire_exp.agents.coding_agents import ClaudeCode, Codex
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.local import LocalEnvironment
from fire_exp.policies.hook_files import with_feature_flag
from fire_exp.policies.hook_settings import CODEX_HOOKS_FEATURE, MATCHERS
from fire_exp.registry import REGISTRY

PACKAGE = Path(__file__).resolve().parents[2] / "fire_exp"
# The modules of environments/ that code above it may import: the contract (the base
# class, its capabilities and results, failures), what agents put into any box (the agent
# install, the hook transport) and helpers that know no backend: ``inbox`` for its process
# utilities (``inbox.procs``, the one copy the host side shares with the in-box program,
# which no host-side module imports: tests/environments/test_inbox.py).
CONTRACT = {"base", "capabilities", "failure", "upkeep", "agent_install", "hook_transport",
            "redaction", "reward", "archives", "fetch", "inbox"}
BACKEND_NAMES = set(REGISTRY.names("environment"))  # "local", "docker", plug-ins
BACKEND_CLASSES = {"DockerEngine", *(REGISTRY.get("environment", n).__name__
                                    for n in BACKEND_NAMES)}


def above_environments() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py")
            if "environments" not in p.relative_to(PACKAGE).parts and "suites" not in p.parts]


def _imported_modules(node: ast.AST) -> list[str]:
    """The ``fire_exp.environments`` modules an import statement names (a name imported
    from the package itself counts as its module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module is not None:
        if node.module == "fire_exp.environments":
            return [f"fire_exp.environments.{a.name}" for a in node.names]
        return [node.module]
    return []


def _compared_strings(node: ast.AST) -> list[str]:
    """The string constants a comparison (``==``, ``!=``, ``in``, ``match``) holds."""
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        found = [n for side in sides for n in ast.walk(side) if isinstance(n, ast.Constant)]
    elif isinstance(node, ast.MatchValue):
        found = [node.value] if isinstance(node.value, ast.Constant) else []
    else:
        return []
    return [c.value for c in found if isinstance(c.value, str)]


def offences(source: str, where: str) -> list[str]:
    """What a module above environments/ does that names a backend: imports one of its
    modules (anything of environments/ but the contract), names its class, or compares
    a string with a backend's name (``environment != "local"``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        for module in _imported_modules(node):
            parts = module.split(".")
            if parts[:2] == ["fire_exp", "environments"] and len(parts) > 2 and \
                    parts[2] not in CONTRACT:
                found.append(f"{line}: imports {module}")
        names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else \
            [node.id] if isinstance(node, ast.Name) else \
            [node.attr] if isinstance(node, ast.Attribute) else []
        found += [f"{line}: names {n}" for n in names if n in BACKEND_CLASSES]
        found += [f"{line}: compares with {s!r}" for s in _compared_strings(node)
                  if s in BACKEND_NAMES]
    return found


def test_no_module_above_environments_imports_a_backend_or_compares_its_name() -> None:
    offenders = []
    for path in above_environments():
        offenders += offences(path.read_text(encoding="utf-8"),
                              str(path.relative_to(PACKAGE)))
    assert offenders == []


@pytest.mark.parametrize("planted", [
    "from fire_exp.environments.docker_engine import docker_client",
    "import fire_exp.environments.local",
    "from fire_exp.environments import docker",
    "from fire_exp.environments import LocalEnvironment",
    "def f(environment):\n    return environment != 'local'",
    "def f(panel):\n    return panel.environment.name in ('docker', 'k8s')",
    "def f(name):\n    match name:\n        case 'docker':\n            return 1",
    "import fire_exp.environments.docker as d\nd.DockerEnvironment",
])
def test_the_scan_finds_each_planted_violation(planted: str) -> None:
    assert offences(planted, "planted.py") != []


def test_the_scan_lets_the_contract_through() -> None:
    clean = ("from fire_exp.environments.base import Capability, Environment\n"
             "from fire_exp.environments.hook_transport import HookEndpoint\n"
             "def f(caps):\n    return Capability.HOST_PROGRAMS in caps and 'x' != 'y'\n")
    assert offences(clean, "clean.py") == []


def private_reach_ins(folder: Path) -> list[str]:
    """ruff's SLF001 over ``folder``, a ``# noqa`` not honoured: each ``obj._member`` of an
    object not ``self``/``cls``, as ``path:line:col``."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "SLF001", "--ignore-noqa",
         "--no-cache", "--output-format", "concise", "--quiet", str(folder)],
        capture_output=True, text=True, check=False)
    found = [line.split(" ", 1)[0] for line in done.stdout.splitlines() if "SLF001" in line]
    assert found or done.returncode == 0, done.stderr  # ruff itself failed
    return found


def test_no_agent_reaches_into_a_private_member() -> None:
    assert private_reach_ins(PACKAGE / "agents") == []


def test_a_reach_into_a_private_member_is_found_even_with_noqa(tmp_path: Path) -> None:
    agents = shutil.copytree(PACKAGE / "agents", tmp_path / "agents")
    (agents / "planted.py").write_text("def peek(env: object) -> object:\n"
                                       "    return env._session  # noqa: SLF001\n")
    assert private_reach_ins(agents) == [f"{agents / 'planted.py'}:2:12:"]


def test_the_codex_config_uses_the_canonical_feature_key_everywhere() -> None:
    box = Codex().files("/opt/fire-exp/agent", None)["/opt/fire-exp/agent/codex-home/config.toml"]
    exported = with_feature_flag("")
    for text in (box.decode(), exported):
        assert tomllib.loads(text)["features"] == {CODEX_HOOKS_FEATURE: True}
        assert "codex_hooks" not in text
    assert CODEX_HOOKS_FEATURE == "hooks"


def test_each_dialect_names_the_version_its_values_were_checked_against() -> None:
    for dialect in (ClaudeCode(), Codex()):
        assert dialect.checked_version and dialect.tool_matcher == MATCHERS[dialect.target]


def test_the_backends_declare_what_they_can_do() -> None:
    assert {c.value for c in LocalEnvironment.capabilities} == {
        "services", "host_hooks", "host_programs"}
    assert {c.value for c in DockerEnvironment.capabilities} == {
        "services", "network_policy", "egress_allowlist", "hook_relay", "install_agent",
        "agent_user", "images"}
