"""The coding-agent CLIs go through the environment contract, with one set of values.

Nothing above ``environments/`` names a backend class or reaches into a private member;
the Codex feature key is the same wherever fire-exp writes a Codex config.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from fire_exp.agents.coding_agents import ClaudeCode, Codex
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.local import LocalEnvironment
from fire_exp.policies.hook_files import with_feature_flag
from fire_exp.policies.hook_settings import CODEX_HOOKS_FEATURE, MATCHERS

PACKAGE = Path(__file__).resolve().parents[2] / "fire_exp"
BACKENDS = {"LocalEnvironment", "DockerEnvironment"}


def above_environments() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py")
            if "environments" not in p.relative_to(PACKAGE).parts and "suites" not in p.parts]


def test_no_module_above_environments_names_a_backend_class() -> None:
    offenders = []
    for path in above_environments():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else \
                [node.id] if isinstance(node, ast.Name) else []
            offenders += [f"{path.relative_to(PACKAGE)}: {n}" for n in names if n in BACKENDS]
    assert offenders == []


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
