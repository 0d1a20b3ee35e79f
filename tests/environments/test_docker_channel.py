"""The session channel's framing and the tar helpers, without a Docker engine."""

from __future__ import annotations

import io
import json
import socket
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.environments.archives import tar_directory, tar_file
from fire_exp.environments.base import EnvironmentFailure
from fire_exp.environments.docker_channel import ExecChannel
from fire_exp.environments.fetch import extract_stream


def frame(stream: int, data: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, engine = socket.socketpair()
    yield ours, engine
    ours.close()
    engine.close()


def test_a_reply_split_over_frames_between_stderr(pair: tuple[socket.socket, socket.socket]
                                                  ) -> None:
    ours, engine = pair
    reply = json.dumps({"exit_code": 0}).encode() + b"\n"
    engine.sendall(frame(1, reply[:5]) + frame(2, b"warning\n") + frame(1, reply[5:]))
    channel = ExecChannel(ours)
    assert channel.request({"op": "ping"}, 5) == {"exit_code": 0}
    assert json.loads(engine.recv(100)) == {"op": "ping"}
    assert bytes(channel.stderr) == b"warning\n"


def test_two_replies_in_one_frame(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, engine = pair
    engine.sendall(frame(1, b'{"n": 1}\n{"n": 2}\n'))
    channel = ExecChannel(ours)
    assert channel.request({}, 5) == {"n": 1} and channel.request({}, 5) == {"n": 2}


def test_end_of_stream_is_a_dead_session(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, engine = pair
    engine.sendall(frame(2, b"Traceback: boom\n"))
    engine.shutdown(socket.SHUT_WR)
    with pytest.raises(EnvironmentFailure, match="session died.*boom"):
        ExecChannel(ours).request({}, 5)


def test_engine_error_text_is_a_failure(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, engine = pair
    engine.sendall(frame(1, b"OCI runtime exec failed: no such container\r\n"))
    with pytest.raises(EnvironmentFailure, match="OCI runtime exec failed"):
        ExecChannel(ours).request({}, 5)


def test_cancel_ends_the_wait(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    cancelled = threading.Event()
    threading.Timer(0.3, cancelled.set).start()
    with pytest.raises(EnvironmentFailure, match="cancelled"):
        ExecChannel(ours, cancelled).request({}, 60)


def test_silence_past_the_deadline(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    with pytest.raises(EnvironmentFailure, match="stopped answering"):
        ExecChannel(ours).request({}, 0.3)


def test_tar_directory_lands_under_dest_with_executable_scripts(tmp_path: Path) -> None:
    src = tmp_path / "tests"
    (src / "sub").mkdir(parents=True)
    (src / "test.sh").write_text("echo hi\n")
    (src / "sub" / "data.txt").write_text("x")
    with tarfile.open(fileobj=io.BytesIO(tar_directory(src, "/opt/t")), mode="r") as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert {"opt", "opt/t", "opt/t/test.sh", "opt/t/sub", "opt/t/sub/data.txt"} <= set(members)
    assert members["opt/t/test.sh"].mode & 0o111
    assert not members["opt/t/sub/data.txt"].mode & 0o111
    assert members["opt/t/test.sh"].uid == 0


def test_extract_stream_round_trip(tmp_path: Path) -> None:
    data = tar_file(b"1\n", "/logs/verifier/reward.txt")
    assert extract_stream([data[:100], data[100:]], tmp_path, cap=10).withheld == []
    assert (tmp_path / "logs" / "verifier" / "reward.txt").read_text() == "1\n"
