"""One importer contract (issue 39, point 2): importers are a kind of the registry, a plugin
adds one, ``fire-exp import`` alone lists them, and every kind reads the same mapping."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import pytest

from fire_exp.cli import import_
from fire_exp.errors import InputError
from fire_exp.importers import ArmFields, ArmMapping, Imported, Importer, load_mapping
from fire_exp.importers import mapping as shared
from fire_exp.importers.inspect_eval import FIELDS as INSPECT_FIELDS
from fire_exp.records import AttemptRecord, read_records
from fire_exp.registry import REGISTRY
from tests.conftest import run_cli
from tests.importers.helpers import REPO


class LinesImporter:
    """A plugin importer: one attempt per line ``TASK ARM REWARD`` of a text file."""

    kind = "lines"
    summary = "text files of TASK ARM REWARD lines"
    sources = "text file(s)"
    arm_fields = ArmFields(("arm",), "a line", "arm", "arm")

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--scale", type=float, default=1.0)

    def default_run(self, sources: Sequence[Path]) -> str:
        return "lines"

    def read(self, sources: Sequence[Path], mapping: ArmMapping, run: str,
             options: argparse.Namespace) -> Imported:
        records = []
        for n, line in enumerate(sources[0].read_text().splitlines()):
            task, value, reward = line.split()
            arm = mapping.arm({"arm": value})
            if arm is not None:
                r = float(reward) / options.scale
                records.append(AttemptRecord(
                    run=run, panel="lines", attempt_id=str(n), task=task, task_digest="",
                    cohort=mapping.cohort(task), arm=arm, replicate=0, order=0, seed=0,
                    agent="x", environment="x", reward=r,
                    passed=r >= mapping.pass_threshold))
        return Imported(records, notes=["read by a plugin"])


def test_import_alone_lists_the_kinds() -> None:
    proc = run_cli("import", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "harbor     Harbor job folders" in proc.stdout
    assert "inspect    inspect_ai eval logs" in proc.stdout
    bad = run_cli("import", "nope", "x", "--arm-from", "model", cwd=REPO)
    assert bad.returncode == 2 and "unknown importer 'nope' (known: harbor, inspect)" in bad.stderr


def test_a_registered_importer_is_a_kind(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # Registered for this test alone (the registry has no unregister; monkeypatch undoes it).
    monkeypatch.setitem(REGISTRY._entries["importer"], "lines", LinesImporter)  # noqa: SLF001
    assert isinstance(LinesImporter(), Importer)
    assert import_.main([]) == 0 and "lines      text files" in capsys.readouterr().out
    src, out = tmp_path / "r.txt", tmp_path / "attempts.jsonl"
    src.write_text("t1 a 2\nt1 b 0\nt2 a 1\n")
    assert import_.main(["lines", str(src), "--arm-from", "arm", "--scale", "2",
                         "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 attempts (2 tasks; arms a, b)" in printed and "read by a plugin" in printed
    assert [r.reward for r in read_records(out).finished] == [1.0, 0.0, 0.5]
    with pytest.raises(InputError, match="already exists"):
        import_.main(["lines", str(src), "--arm-from", "arm", "--out", str(out)])


def test_every_kind_reads_the_same_mapping_file(tmp_path: Path) -> None:
    path = tmp_path / "map.yaml"
    path.write_text("arm_from: eval.task_args.arm\narms:\n  'fire*': real\n  plain: baseline\n"
                    "cohorts:\n  a: eligible\ndefault_cohort: silent\npass_threshold: 0.5\n")
    mapping = shared.load_mapping(path, INSPECT_FIELDS)
    assert mapping == load_mapping(path)  # Harbor's reads it the same way
    assert mapping.arm({"eval.task_args.arm": "fire-2"}) == "real"
    assert mapping.arm({"eval.task_args.arm": "other"}) is None
    assert (mapping.cohort("a"), mapping.cohort("b"), mapping.pass_threshold) == \
        ("eligible", "silent", 0.5)
    path.write_text("arm_from: not a path\n")
    with pytest.raises(InputError, match=r"neither one of log, task, model nor a dotted path "
                                         r"into the eval log"):
        shared.load_mapping(path, INSPECT_FIELDS)


def test_field_value_reads_dotted_paths() -> None:
    raw = {"eval": {"task_args": {"arm": "real", "k": 3}, "solver": None},
           "steps": [{"solver": "act"}]}
    assert shared.field_value(raw, "eval.task_args.arm") == "real"
    assert shared.field_value(raw, "eval.task_args.k") == "3"
    assert shared.field_value(raw, "eval.task_args") == '{"arm": "real", "k": 3}'
    assert shared.field_value(raw, "steps.0.solver") == "act"
    assert shared.field_value(raw, "eval.solver") == shared.field_value(raw, "steps.5") == ""
