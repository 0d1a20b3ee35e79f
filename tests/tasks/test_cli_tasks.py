"""``fire-exp tasks list|show|validate|convert``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fire_exp.cli.tasks import main
from fire_exp.paths import SUITES_DIR
from tests.conftest import run_cli

DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRE_EXP_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A folder of two good tasks and three broken ones."""
    root = tmp_path / "tasks"
    for name in ("word-count", "prebuilt-greeting"):
        shutil.copytree(DATA / name, root / name)
    bad_type = Path(shutil.copytree(DATA / "word-count", root / "bad-type"))
    toml = bad_type / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 1", 'cpus = "one"'))
    no_tests = Path(shutil.copytree(DATA / "prebuilt-greeting", root / "no-tests"))
    shutil.rmtree(no_tests / "tests")
    no_toml = Path(shutil.copytree(DATA / "word-count", root / "no-toml"))
    (no_toml / "task.toml").unlink()
    return root


def test_validate_accepts_terminal_bench_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(DATA), str(DATA / "tb1"), str(SUITES_DIR / "fire-mini")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert all(line.startswith("ok ") for line in out)
    assert any("word-count" in line for line in out)
    assert any("sum-numbers" in line and "Terminal-Bench 1" in line for line in out)


def test_validate_prints_one_line_per_broken_task(mixed: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(mixed)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 5
    fails = [line for line in out if line.startswith("FAIL")]
    assert len(fails) == 3
    assert any(f"{mixed / 'bad-type' / 'task.toml'}: environment.cpus: expected a number"
               in line for line in fails)
    assert any(f"{mixed / 'no-tests'}: tests/test.sh: missing" in line for line in fails)
    assert any(f"{mixed / 'no-toml'}: task.toml: missing" in line for line in fails)


def test_list_and_show(mixed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", str(mixed)]) == 1  # broken tasks are listed as such
    out = capsys.readouterr().out
    assert "word-count" in out and "fire-exp/base:bookworm" in out and "BROKEN" in out
    assert main(["show", str(DATA / "word-count")]) == 0
    out = capsys.readouterr().out
    assert "1 cpus, 1024 MB memory" in out and "EXPECTED_WORDS" in out
    assert "Count the words" in out and "canary" not in out


def test_convert_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(DATA / "tb1"), str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "sum-numbers" / "task.toml").is_file()
    assert main(["convert", str(DATA / "tb1" / "sum-numbers"), str(tmp_path / "one")]) == 0
    assert (tmp_path / "one" / "tests" / "test.sh").is_file()


def test_cli_exit_codes(mixed: Path, tmp_path: Path) -> None:
    env = {"FIRE_EXP_CACHE": str(tmp_path / "c")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli("tasks", *args, env=env)  # in this process (the exit code is main's)

    assert run("validate", str(DATA / "word-count")).returncode == 0
    broken = run("validate", str(mixed))
    assert broken.returncode == 1 and broken.stdout.count("FAIL") == 3
    missing = run("show", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "not a directory" in missing.stderr
