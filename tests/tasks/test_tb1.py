"""Terminal-Bench 1 (``task.yaml``) tasks: converted by command and on load."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.tb1 import convert_tb1, converted

TB1 = Path(__file__).parent / "data" / "tb1" / "sum-numbers"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRE_EXP_CACHE", str(tmp_path / "cache"))


def test_conversion_writes_the_harbor_layout(tmp_path: Path) -> None:
    dest = convert_tb1(TB1, tmp_path / "out")
    toml = tomllib.loads((dest / "task.toml").read_text())
    assert toml["agent"]["timeout_sec"] == 180.0 and toml["verifier"]["timeout_sec"] == 30.0
    assert toml["metadata"]["tags"] == ["arithmetic"]
    assert toml["metadata"]["converted_from"] == "terminal-bench-1"
    assert toml["environment"]["workdir"] == "/app"
    assert sorted(p.name for p in (dest / "environment").iterdir()) == [
        "Dockerfile", "docker-compose.yaml", "numbers.txt"]
    assert (dest / "solution" / "solve.sh").read_text() == (TB1 / "solution.sh").read_text()
    run_tests = (dest / "tests" / "run-tests.sh").read_text()
    assert "python3 /tests/test_outputs.py" in run_tests and "$TEST_DIR" not in run_tests
    test_sh = (dest / "tests" / "test.sh").read_text()
    assert "bash /tests/run-tests.sh\nif [ $? -eq 0 ]; then echo 1; else echo 0; fi > " \
        "/logs/verifier/reward.txt" in test_sh
    assert (dest / "tests" / "test_outputs.py").is_file()
    assert (dest / "tests" / "test.sh").stat().st_mode & 0o111
    task = load_task(dest)
    assert task.name == "sum-numbers" and task.instruction.startswith("The file /app/numbers")


def test_a_tb1_folder_is_converted_on_load(tmp_path: Path) -> None:
    task = load_task(TB1)
    assert task.path.is_relative_to(tmp_path / "cache")
    assert task.agent.timeout_sec == 180.0
    assert load_task(TB1).path == task.path  # converted once per content digest


def test_a_changed_tb1_task_is_converted_again(tmp_path: Path) -> None:
    src = Path(shutil.copytree(TB1, tmp_path / "sum-numbers"))
    first = converted(src)
    (src / "numbers.txt").write_text("1\n")
    assert converted(src) != first


def test_solution_yaml_becomes_a_script(tmp_path: Path) -> None:
    src = Path(shutil.copytree(TB1, tmp_path / "yaml-solution"))
    (src / "solution.sh").unlink()
    (src / "solution.yaml").write_text("- command: echo 42 > /app/sum.txt\n"
                                       "  min_timeout_sec: 1\n")
    dest = convert_tb1(src, tmp_path / "out")
    assert "echo 42 > /app/sum.txt" in (dest / "solution" / "solve.sh").read_text()


def test_default_run_tests_is_pytest(tmp_path: Path) -> None:
    src = Path(shutil.copytree(TB1, tmp_path / "no-run-tests"))
    (src / "run-tests.sh").unlink()
    dest = convert_tb1(src, tmp_path / "out")
    assert 'pytest "/tests/test_outputs.py"' in (dest / "tests" / "run-tests.sh").read_text()


@pytest.mark.parametrize(("yaml_text", "field"), [
    ("author_name: x\n", "instruction"),
    ("instruction: do it\nmax_agent_timeout_sec: soon\n", "max_agent_timeout_sec"),
    ("instruction: [unclosed\n", "line 2"),
    ("instruction: do it\ninstruction: undo it\n", "line 2"),  # a key twice
])
def test_broken_task_yaml_is_named(tmp_path: Path, yaml_text: str, field: str) -> None:
    src = Path(shutil.copytree(TB1, tmp_path / "broken"))
    (src / "task.yaml").write_text(yaml_text)
    with pytest.raises(InputError) as err:
        load_task(src)
    assert err.value.field == field and "task.yaml" in str(err.value)


def test_convert_refuses_a_non_empty_destination(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        convert_tb1(TB1, tmp_path / "out")
