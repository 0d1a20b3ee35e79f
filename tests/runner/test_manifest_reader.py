"""The one manifest reader: a missing, broken or foreign file is one line naming the file,
the field and what to do; a run without a manifest has none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.manifest import FORMAT, read_manifest, read_prereg


@pytest.mark.parametrize(("text", "field", "problem"), [
    (None, "<file>", "no such preregistration manifest"),
    ("{not json", "<json>", "not valid JSON: Expecting property name enclosed in double quotes"),
    ("[1, 2]", "format", f"not a {FORMAT} manifest"),
    ('{"format": "fire-exp-prereg/0", "hashes": {}}', "format", f"not a {FORMAT} manifest"),
    (json.dumps({"format": FORMAT, "hashes": []}), "format", f"not a {FORMAT} manifest"),
    (json.dumps({"format": FORMAT}), "format", f"not a {FORMAT} manifest"),
])
def test_a_bad_manifest_is_refused_naming_the_file_and_field(
        tmp_path: Path, text: str | None, field: str, problem: str) -> None:
    path = tmp_path / "prereg.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError) as err:
        read_manifest(path)
    assert (err.value.path, err.value.field, err.value.problem) == (str(path), field, problem)
    fix = "freeze the panel with `fire-exp freeze`" if text is None else \
        "re-freeze with `fire-exp freeze`"
    assert err.value.fix == fix


def test_a_manifest_is_read_whole(tmp_path: Path) -> None:
    manifest = {"format": FORMAT, "hashes": {"schedule": {"sha256": "ab"}}, "seed": 3}
    (tmp_path / "prereg.json").write_text(json.dumps(manifest))
    assert read_manifest(tmp_path / "prereg.json") == manifest
    assert read_prereg(tmp_path / "prereg.json") == manifest
    assert read_prereg(tmp_path / "absent.json") is None
