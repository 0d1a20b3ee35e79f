"""A run folder belongs to one run: a new run never shares one (two started in the same
second get new_run's one name), and a resume refuses a folder whose records are another
run's (a renamed folder) before anything runs."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.runner.run_folder import check_records_so_far, claim_new_folder

DEMO_RUN = Path(__file__).resolve().parents[1] / "report" / "data" / "demo_run"


def test_runs_started_in_the_same_second_get_folders_of_their_own(tmp_path: Path) -> None:
    name = tmp_path / "demo" / "20261202-130000-simulated-none-s0"
    claimed: list[Path] = []
    lock = threading.Lock()

    def claim() -> None:
        folder = claim_new_folder(name)
        with lock:
            claimed.append(folder)

    threads = [threading.Thread(target=claim) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(claimed)) == 6 and name in claimed
    assert sorted(p.name for p in claimed)[1:] == sorted(f"{name.name}-{n}" for n in range(2, 7))


def test_a_renamed_run_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """A renamed folder once resumed, ran the owed attempts under its new name, and only
    then was refused at analysis (two runs in one file)."""
    run = Path(shutil.copytree(DEMO_RUN, tmp_path / "renamed"))
    before = (run / "attempts.jsonl").read_bytes()
    with pytest.raises(InputError, match="rename the folder back to") as err:
        check_records_so_far(run)
    assert "in the folder 'renamed'" in err.value.problem
    assert (run / "attempts.jsonl").read_bytes() == before
    original = next(iter({line.split('"run":"')[1].split('"')[0]
                          for line in before.decode().splitlines()}))
    check_records_so_far(run.rename(tmp_path / original))  # its own name: accepted
