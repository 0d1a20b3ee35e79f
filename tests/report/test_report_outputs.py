"""``analyze --out`` and ``report --out`` write only into a new or empty folder, or over
their own earlier output: a mistyped folder's files are never overwritten."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fire_exp.cli import main as cli

DEMO_RUN = Path(__file__).resolve().parent / "data" / "demo_run"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO_RUN, tmp_path / "run"))


@pytest.mark.parametrize("command", ["analyze", "report"])
def test_a_folder_of_other_files_is_refused_and_left_alone(
        run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "contrasts.csv").write_text("my own table\n")
    (mine / "metadata.json").write_text('{"author": "me"}\n')
    assert cli([command, str(run), "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "holds files that are not an earlier fire-exp" in err and "Traceback" not in err
    assert sorted(p.name for p in mine.iterdir()) == ["contrasts.csv", "metadata.json"]
    assert (mine / "contrasts.csv").read_text() == "my own table\n"


@pytest.mark.slow
@pytest.mark.parametrize("command", ["analyze", "report"])
def test_a_new_folder_then_the_same_folder_again(run: Path, tmp_path: Path,
                                                 command: str) -> None:
    """Slow: three analyses (with ``report``, three reports) of a run."""
    out = tmp_path / "out"
    assert cli([command, str(run), "--out", str(out)]) == 0
    assert cli([command, str(run), "--out", str(out)]) == 0  # its own earlier output
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli([command, str(run), "--out", str(empty)]) == 0
