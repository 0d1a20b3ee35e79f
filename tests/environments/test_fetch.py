"""Fetching a box's folder (fire_exp/environments/fetch.py): what the agent planted there is
skipped and named, never raised; at most the cap is read (issue 36, points 3 and 4)."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

from fire_exp.environments.fetch import extract_stream, read_single


def _member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"",
            link: str = "") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data)
    return info, data


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> list[bytes]:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data else None)
    raw = buf.getvalue()
    return [raw[i:i + 1000] for i in range(0, len(raw), 1000)]  # as the engine streams it


def test_unsafe_members_are_skipped_named_and_the_rest_kept(tmp_path: Path) -> None:
    chunks = _tar(_member("logs", tarfile.DIRTYPE), _member("logs/agent", tarfile.DIRTYPE),
                  _member("logs/agent/a.txt", data=b"kept\n"),
                  _member("logs/agent/x", tarfile.SYMTYPE, link="/etc/hostname"),
                  _member("logs/agent/up", tarfile.SYMTYPE, link="../../.."),
                  _member("logs/agent/f", tarfile.FIFOTYPE),
                  _member("logs/agent/dev", tarfile.CHRTYPE),
                  _member("logs/../evil", data=b"x"), _member("/abs", data=b"x"),
                  _member("logs/agent/root", tarfile.SYMTYPE, link="../../logs"),
                  _member("logs/agent/sneak", tarfile.SYMTYPE, link="root/../x"),
                  _member("logs/agent/hard", tarfile.LNKTYPE, link="logs/agent/a.txt"),
                  _member("logs/agent/ok", tarfile.SYMTYPE, link="a.txt"),
                  _member("logs/agent/z.txt", data=b"after\n"))
    fetched = extract_stream(chunks, tmp_path, cap=1 << 20)
    reasons = dict(line.split(": ", 1) for line in fetched.withheld)
    assert reasons == {
        "logs/agent/x": "a symbolic link out of the folder (-> /etc/hostname)",
        "logs/agent/up": "a symbolic link out of the folder (-> ../../..)",
        "logs/agent/f": "a FIFO", "logs/agent/dev": "a device",
        "logs/../evil": "a name with ..", "/abs": "an absolute name",
        # Lexically inside, outside through the link written just before it.
        "logs/agent/sneak": "refused by the data filter (LinkOutsideDestinationError)"}
    agent = tmp_path / "logs" / "agent"
    assert (agent / "hard").read_text() == (agent / "ok").read_text() == "kept\n"
    assert (agent / "z.txt").read_text() == "after\n"
    assert not os.path.lexists(agent / "x") and not (tmp_path / "evil").exists()
    assert fetched.complete and fetched.kept == 11


def test_past_the_cap_the_rest_is_dropped_named_and_never_read(tmp_path: Path) -> None:
    chunks = _tar(_member("logs", tarfile.DIRTYPE), _member("logs/a", data=b"a" * 600),
                  _member("logs/b", data=b"b" * 100_000), _member("logs/c", data=b"c"))
    read: list[bytes] = []

    def stream() -> Iterator[bytes]:
        for chunk in chunks:
            read.append(chunk)
            yield chunk

    fetched = extract_stream(stream(), tmp_path, cap=1000)
    assert fetched.withheld == ["logs/b (100000 bytes) and every member after it: past what "
                                "the fetch cap left (1000 bytes)"]
    assert not fetched.complete and fetched.kept == 600
    assert (tmp_path / "logs" / "a").stat().st_size == 600
    assert not (tmp_path / "logs" / "b").exists() and not (tmp_path / "logs" / "c").exists()
    assert len(read) < len(chunks) / 2  # the rest of the stream was left unread


def test_a_skipped_subfolder_and_a_single_file_read_to_the_cap(tmp_path: Path) -> None:
    chunks = _tar(_member("logs", tarfile.DIRTYPE), _member("logs/verifier/r", data=b"1"),
                  _member("logs/agent/a", data=b"2"))
    assert extract_stream(chunks, tmp_path, cap=10, skip="verifier").withheld == []
    assert not (tmp_path / "logs" / "verifier").exists()
    assert read_single(_tar(_member("stdout", data=b"x" * 50)), 20) == (b"x" * 20, 50)
    assert read_single(_tar(_member("d", tarfile.DIRTYPE)), 20) is None
