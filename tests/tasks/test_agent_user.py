"""``[agent].user`` of task.toml: the box user a task's agent runs as (a fire-exp key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.tasks.loader import load_task


def _task(tmp_path: Path, agent: str) -> Path:
    path = tmp_path / "t"
    (path / "tests").mkdir(parents=True)
    (path / "tests" / "test.sh").write_text("#!/bin/bash\n")
    (path / "instruction.md").write_text("Do it.\n")
    (path / "task.toml").write_text(f'schema_version = "1.1"\n[agent]\n{agent}\n'
                                    '[environment]\ndocker_image = "fire-exp/base:bookworm"\n')
    return path


def test_a_task_may_say_its_agent_needs_root(tmp_path: Path) -> None:
    assert load_task(_task(tmp_path, 'user = "root"')).agent.user == "root"
    assert load_task(_task(tmp_path / "b", "")).agent.user is None


@pytest.mark.parametrize("value", ['"root; rm -rf /"', '"Root"', '""', "0", '"../x"'])
def test_a_user_that_is_not_a_user_name_is_refused_by_file_and_field(tmp_path: Path,
                                                                     value: str) -> None:
    with pytest.raises(InputError) as raised:
        load_task(_task(tmp_path, f"user = {value}"))
    assert "task.toml" in str(raised.value) and "agent.user" in str(raised.value)
