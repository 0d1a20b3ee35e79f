"""What a flood of the hook relay's output costs the harness: CPU time and peak memory.

An agent that is root in its box can write into the relay's stdout through
``/proc/PID/fd/1``; the bytes arrive at the harness's :class:`ExecChannel` in the Docker
stream's frames. This writes ``--mb`` MB without a newline (then one short line) as 32 KiB
frames from a child process into a socket pair and reads it with ``ExecChannel.read_line``,
reporting the reader's CPU seconds, its peak resident memory, the most bytes its line
buffer held and the lines it dropped. The same for ordinary traffic: ``--lines`` short
lines (a heartbeat's size), to show the cap costs nothing there.

    python -m benchmarks.bench_hook_channel [--mb 100 300] [--lines 200000]

Before the cap (commit aca7410), 100 MB cost 5.6 s of CPU and 410 MB; 300 MB 73 s and
950 MB (issue 27). Target: memory bounded by the line cap (16 MiB) whatever the flood's
size, and time linear in it. Measured with the cap (2-core machine shared with other
builds): 100 MB 0.04 s of CPU, 300 MB 0.11 s, both 48 MB peak RSS (32 MB of it the
interpreter), the line buffer never over 16.8 MB; 200,000 short lines 0.15 s.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import socket
import subprocess
import sys
import time

from fire_exp.environments.docker_channel import ExecChannel

_FRAME = 32 << 10  # what dockerd sends at a time


def _frame(data: bytes) -> bytes:
    return bytes([1, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


def _send(sock: socket.socket, flood: int, lines: int) -> None:
    chunk = _frame(b"x" * _FRAME)
    for _ in range(flood // _FRAME):
        sock.sendall(chunk)
    line = b"HB 00112233445566778899aabbccddeeff\n"
    batch = 900  # lines per frame
    for start in range(0, lines, batch):
        sock.sendall(_frame(line * min(batch, lines - start)))
    sock.sendall(_frame(b"\nend\n"))
    sock.close()


def measure(flood: int, lines: int) -> dict[str, float]:
    """Read ``flood`` bytes without a newline, then ``lines`` short lines, in this process."""
    ours, theirs = socket.socketpair()
    sender = multiprocessing.Process(target=_send, args=(theirs, flood, lines))
    sender.start()
    theirs.close()
    channel = ExecChannel(ours)
    cpu, wall = time.process_time(), time.perf_counter()
    got = 0
    while channel.read_line(600) != b"end":
        got += 1
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sender.join()
    ours.close()
    return {"cpu_s": cpu, "wall_s": wall, "lines": got, "dropped": channel.oversize,
            "peak_buffer_mb": channel.peak_buffered / 1e6,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--one", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(*args.one)))
        return
    print("case                      cpu s   wall s  lines    dropped  buffer MB  max RSS MB")
    cases = [(f"{mb} MB without newline", mb * 10**6, 0) for mb in args.mb]
    cases.append((f"{args.lines} short lines", 0, args.lines))
    for name, flood, lines in cases:
        # A fresh process each, so the peak RSS is this case's.
        r = json.loads(subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_hook_channel", "--one", str(flood),
             str(lines)], capture_output=True, text=True, check=True).stdout)
        print(f"{name:24s} {r['cpu_s']:6.2f} {r['wall_s']:8.2f} {r['lines']:7.0f} "
              f"{r['dropped']:8.0f} {r['peak_buffer_mb']:10.1f} {r['max_rss_mb']:11.0f}")


if __name__ == "__main__":
    main()
