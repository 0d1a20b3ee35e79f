"""A task's digest covers its symbolic links, and an instruction with a NUL byte is refused
(docs/robustness.md, "Records against the preregistration")."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.paths import SUITES_DIR
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.model import task_digest, task_files


def _task(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SUITES_DIR / "fire-mini" / "dedupe-emails", tmp_path / "t"))


def test_a_link_added_after_freezing_changes_the_digest(tmp_path: Path) -> None:
    task = _task(tmp_path)
    frozen = task_digest(task)
    os.symlink("/etc", task / "environment" / "etc-link")  # a link to a folder: no bytes
    with_link = task_digest(task)
    assert with_link != frozen
    (task / "environment" / "etc-link").unlink()
    os.symlink("/nonexistent", task / "environment" / "etc-link")  # another target
    assert task_digest(task) not in (frozen, with_link)
    (task / "environment" / "etc-link").unlink()
    assert task_digest(task) == frozen


def _files_only_digest(path: Path) -> str:
    """The digest as it was before links were hashed (files only)."""
    h = hashlib.sha256()
    for file in task_files(path):
        data, rel = file.read_bytes(), file.relative_to(path).as_posix().encode()
        h.update(len(rel).to_bytes(4, "big") + rel + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def test_a_task_without_links_keeps_its_frozen_digest() -> None:
    """Bundled tasks have no links: manifests frozen before links were hashed still hold."""
    for task in sorted(p for p in (SUITES_DIR / "fire-mini").iterdir() if p.is_dir()):
        assert task_digest(task) == _files_only_digest(task), task.name


def test_an_instruction_with_a_nul_byte_is_refused(tmp_path: Path) -> None:
    task = _task(tmp_path)
    instruction = task / "instruction.md"
    instruction.write_text("Dedupe the emails.\nthen\x00 stop\n")
    with pytest.raises(InputError, match=r"instruction.md: line 2: holds a NUL byte"):
        load_task(task)
