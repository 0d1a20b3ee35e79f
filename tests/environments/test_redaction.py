"""Redaction: every file of an attempt's folder, and every encoding of a secret the harness
recognises, masked in place; nothing else changes."""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from fire_exp.environments.redaction import MASK, Redactor, redact_bytes, redact_tree

KEY = "sk-test-" + uuid.uuid4().hex + "/+="  # URL-encoding changes it


def _leaks(data: bytes, key: str = KEY) -> list[str]:
    """Which recognisable copies of ``key`` ``data`` still holds."""
    raw = key.encode()
    found = [name for name, form in [("raw", raw), ("hex", raw.hex().encode()),
                                     ("quote", quote(key, safe="").encode()),
                                     ("quote_plus", quote_plus(key).encode())]
             if form in data]
    flat = data.replace(b"\n", b"")
    for lead in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            # The characters of this alignment that depend on the key alone, less a few
            # at each end: any of them still there is a copy.
            core = encode(b"\0" * lead + raw)[3:-4]
            if core in flat:
                found.append(f"base64 at alignment {lead}")
    return found


@pytest.mark.parametrize("lead", [b"", b"a", b"ab", b"abc"])
@pytest.mark.parametrize("tail", [b"", b"y", b"yz"])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode,
                                    base64.encodebytes], ids=["std", "urlsafe", "wrapped"])
def test_every_alignment_of_a_base64_copy_is_masked(lead: bytes, tail: bytes, encode: object
                                                    ) -> None:
    blob = encode(lead + KEY.encode() + tail)  # type: ignore[operator]
    assert _leaks(blob), "the check would not see this copy"
    clean = redact_bytes(b"before " + blob + b" after", [KEY])
    assert _leaks(clean) == [] and MASK.encode() in clean
    assert clean.startswith(b"before ") and clean.endswith(b" after")


def test_a_secret_is_masked_in_every_file_of_the_attempt_and_nothing_else_changes(
        tmp_path: Path) -> None:
    attempt = tmp_path / "attempt"
    raw = KEY.encode()
    files = {
        "hooks/state/activity.jsonl": b'{"command": "curl -H \'x-api-key: ' + raw + b'\'"}\n',
        "hooks/state/session-1.json": b'{"url": "https://h/?k=' + quote(KEY, safe="").encode()
                                      + b'", "form": "' + quote_plus(KEY).encode() + b'"}\n',
        "logs/agent/b64.txt": base64.encodebytes(b"xy" + raw),
        "logs/agent/hex.txt": raw.hex().encode() + b"\n",
        "logs/agent/blob.bin": bytes(range(256)) + raw + b"\xff\xfe\x00",
        "deep/er/still.txt": b"prefix-" + raw + b"-suffix",
    }
    untouched = {"logs/agent/plain.txt": b"no secret here: sk-test-short\n",
                 "logs/agent/binary.bin": os.urandom(4096).replace(raw[:4], b"")}
    for rel, data in (files | untouched).items():
        path = attempt / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (attempt / "logs" / "agent" / "blob.bin").chmod(0o640)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(raw)
    (attempt / "logs" / "link").symlink_to(outside)  # a link is not followed

    changed = redact_tree(attempt, [KEY])

    assert sorted(p.relative_to(attempt).as_posix() for p in changed) == sorted(files)
    for rel in files:
        data = (attempt / rel).read_bytes()
        assert _leaks(data) == [], (rel, _leaks(data))
    blob = (attempt / "logs" / "agent" / "blob.bin")
    assert blob.read_bytes() == bytes(range(256)) + MASK.encode() + b"\xff\xfe\x00"
    assert blob.stat().st_mode & 0o777 == 0o640  # rewritten in place, its mode kept
    assert (attempt / "deep/er/still.txt").read_bytes() == b"prefix-***-suffix"
    for rel, data in untouched.items():
        assert (attempt / rel).read_bytes() == data
    assert outside.read_bytes() == raw
    assert not [p for p in attempt.rglob("*.redacted")]  # no temporary file left


def test_the_redactor_masks_an_added_value_and_its_encodings_in_text() -> None:
    redactor = Redactor()
    value = "tok-" + uuid.uuid4().hex
    redactor.add([value])
    text = f"{value} {base64.b64encode(value.encode()).decode()} {value.encode().hex()}"
    assert _leaks(redactor.text(text).encode(), value) == []
    assert redactor.text("nothing secret") == "nothing secret"
