"""The conformance kit: what every backend must do, checked the same way for each.

A backend proves itself by passing these checks, not by being special-cased upstairs
(inspect_ai's ``SandboxEnvironment`` ships the same idea as ``self_check``). Each check
takes a *started* box of the backend and raises :class:`ConformanceError` saying what
broke; :func:`self_check` runs them all, each in a fresh box. The checks use the contract
alone (``exec``, ``end_command_session``, ``run``, the archive methods, ``paths``), plus, for
the watchdog, the box's session client (``session``: a backend built on the session host),
and, for the hook spool, the hook transport every box can run (``FileHooks``: one-shot
``run`` and ``write_file`` alone).

Processes are found with ``ps -eo args=`` through ``run``, by command lines unique to this
process (a ``sleep`` of a length derived from its pid), since on a shared machine ``ps``
also lists other boxes' processes.

Example, in a backend's tests::

    @pytest.mark.parametrize("check", sorted(CHECKS))
    def test_conformance(check, tmp_path):
        with MyBox(task, tmp_path / "a", "conformance") as box:
            CHECKS[check](box)
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from tempfile import TemporaryDirectory

from fire_exp.environments.base import Environment, EnvironmentFailure
from fire_exp.environments.hook_transport import FileHooks, HookEndpoint

Check = Callable[[Environment], None]
WATCHDOG_WAIT_S = 60.0  # the most a watchdog may take to end the attempt (a lease, a poll)
_LENGTHS = itertools.count()


class ConformanceError(AssertionError):
    """A backend broke a promise of the contract."""


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise ConformanceError(what)


def _sleep_length() -> int:
    """A ``sleep`` length no other process of this machine uses now (pid-derived)."""
    return 2_000_000 + (os.getpid() % 100_000) * 100 + next(_LENGTHS) % 100


def _running(env: Environment) -> list[str]:
    """The box's command lines that run now (``ps``; zombies left out)."""
    listed = env.run("ps -eo stat=,args=", 30.0, cwd="/").stdout.splitlines()
    return [line.split(None, 1)[1] for line in listed
            if line.strip() and not line.lstrip().startswith("Z") and " " in line.strip()]


def _sleeping(env: Environment, length: int) -> bool:
    return any(line.split() == ["sleep", str(length)] for line in _running(env))


def check_exec_runs_in_the_working_folder(env: Environment) -> None:
    """``exec``: bash in the working folder, the task's paths as variables, stdout,
    stderr and the exit code apart."""
    result = env.exec('pwd; echo "$FIRE_LOGS $FIRE_TESTS"; echo oops >&2; exit 3', 30.0)
    lines = result.stdout.splitlines()
    _expect(lines[:1] == [env.paths.workdir], f"exec ran in {lines[:1]}, not the working "
                                              f"folder {env.paths.workdir}")
    _expect(lines[1:2] == [f"{env.paths.logs} {env.paths.tests}"],
            f"FIRE_LOGS/FIRE_TESTS: {lines[1:2]}")
    _expect(result.stderr == "oops\n" and result.exit_code == 3 and not result.timed_out,
            f"stderr and exit code: {result}")


def check_exec_variables_reach_only_that_command(env: Environment) -> None:
    """``exec(env=...)``: the variables reach that command and no later one."""
    _expect(env.exec("echo $ONLY_HERE", 30.0, env={"ONLY_HERE": "x1"}).stdout == "x1\n",
            "a variable given to exec did not reach the command")
    _expect(env.exec("echo ${ONLY_HERE:-gone}", 30.0).stdout == "gone\n",
            "a variable given to one exec reached the next")


def check_state_persists_between_commands(env: Environment) -> None:
    """Files one command writes are there for the next (one box, one working folder)."""
    env.exec("echo 42 > conformance-state.txt", 30.0)
    _expect(env.exec("cat conformance-state.txt", 30.0).stdout == "42\n",
            "a file written by one command was gone for the next")


def check_exec_past_its_timeout_is_killed(env: Environment) -> None:
    """A command past its timeout: killed with what it started in the foreground, its
    output so far kept, ``timed_out`` and exit 124; the session goes on."""
    length = _sleep_length()
    result = env.exec(f"echo before; sleep {length}; echo after", 1.0)
    _expect(result.timed_out and result.exit_code == 124, f"not timed out: {result}")
    _expect(result.stdout == "before\n", f"the output so far: {result.stdout!r}")
    _expect(not _sleeping(env, length), "the timed-out command's child still runs")
    _expect(env.exec("echo still here", 30.0).stdout == "still here\n",
            "the session did not go on after a timeout")


def check_hangup_ends_attached_work_only(env: Environment) -> None:
    """``end_command_session``: what is attached to the session dies (a plain ``&``, a
    ``setsid`` child on the session's streams, a job that dies of SIGHUP); what was
    detached (``nohup`` or ``setsid`` with redirected streams) survives; twice is harmless."""
    n = _sleep_length()
    commands = {n: ("sleep {} &", False),
                n + 1: ("nohup sleep {} > /dev/null 2>&1 &", True),
                n + 2: ("setsid sleep {} > /dev/null 2>&1 < /dev/null &", True),
                n + 3: ("setsid sleep {} &", False),
                n + 4: ("sleep {} > /dev/null 2>&1 &", False)}
    for length, (command, _) in commands.items():
        _expect(env.exec(command.format(length), 30.0).exit_code == 0, f"{command} failed")
    _expect(all(_sleeping(env, length) for length in commands),
            "the background jobs did not start")
    end = env.end_command_session()
    for length, (command, survives) in commands.items():
        _expect(_sleeping(env, length) == survives,
                f"{command.format(length)!r} {'died' if survives else 'survived'} the hangup")
    _expect(len(end.survivors) == 2, f"survivors named: {end.survivors}")
    _expect(env.end_command_session().survivors == [], "ending the session twice did harm")


def check_run_stays_out_of_the_agents_session(env: Environment) -> None:
    """``run``: a process of its own, so what it leaves survives the session's end."""
    n = _sleep_length()
    env.exec(f"sleep {n} > /dev/null 2>&1 &", 30.0)
    ran = env.run(f"sleep {n + 1} > /dev/null 2>&1 < /dev/null & echo started", 30.0)
    _expect(ran.stdout == "started\n", f"run's output: {ran.stdout!r}")
    env.end_command_session()
    _expect(not _sleeping(env, n), "the session's job survived its end")
    _expect(_sleeping(env, n + 1), "run's job died with the agent's session")


def check_run_takes_variables_a_folder_and_a_timeout(env: Environment) -> None:
    """``run``: its variables, its working folder, stdout and stderr apart, the exit
    code; past its timeout killed (``timed_out``, exit 124)."""
    chunks: list[str] = []
    result = env.run('echo "$GREETING from $(pwd)"; echo oops >&2; exit 3', 30.0,
                     env={"GREETING": "hello"}, cwd="/", stream=chunks.append)
    _expect(result.exit_code == 3 and result.stdout == "hello from /\n"
            and result.stderr == "oops\n", f"run: {result}")
    _expect("".join(chunks).count("hello") == 1, f"streamed: {chunks}")
    late = env.run("sleep 30; echo late", 1.0)
    _expect(late.timed_out and late.exit_code == 124 and "late" not in late.stdout,
            f"run past its timeout: {late}")


def check_files_cross_both_ways(env: Environment) -> None:
    """Files in and out through archives: content, mode, folders; a missing file refused."""
    target = f"{env.paths.agent}/conformance/settings.json"
    env.write_file(target, b'{"a": 1}\n', 0o600)
    _expect(env.read_file(target) == b'{"a": 1}\n', "read_file gave other bytes")
    mode = env.run(f"stat -c %a {target}", 30.0).stdout.strip()
    _expect(mode == "600", f"write_file's mode became {mode}")
    with TemporaryDirectory() as home:
        env.download(f"{env.paths.agent}/conformance", Path(home))
        got = (Path(home) / "conformance" / "settings.json").read_bytes()
    _expect(got == b'{"a": 1}\n', "download gave other bytes")
    env.remove(f"{env.paths.agent}/conformance")
    try:
        env.read_file(target)
    except EnvironmentFailure:
        return
    raise ConformanceError("read_file of a removed file did not raise EnvironmentFailure")


def check_watchdog_ends_the_attempt_when_the_harness_is_gone(env: Environment) -> None:
    """When the harness's end of the session closes without a hangup (as when it dies),
    every process of the attempt dies, detached or not, and the session is gone."""
    session = getattr(env, "session", None)
    if session is None:
        raise ConformanceError(f"environment={env.name} has no session client (session)")
    length = _sleep_length()
    env.exec(f"setsid sleep {length} > /dev/null 2>&1 < /dev/null &", 30.0)
    _expect(_sleeping(env, length), "the detached job did not start")
    session.close()
    deadline = time.monotonic() + WATCHDOG_WAIT_S
    while _sleeping(env, length) and time.monotonic() < deadline:
        time.sleep(0.2)
    _expect(not _sleeping(env, length),
            f"the detached job outlived the harness by {WATCHDOG_WAIT_S:.0f} s")
    try:
        env.exec("true", 30.0)
    except EnvironmentFailure:
        return
    raise ConformanceError("exec after the harness was gone did not raise")


def check_hook_spool_answers_each_call_and_fails_closed(env: Environment) -> None:
    """The hook transport of a box with no stream (``FileHooks``): two hook calls at once
    in the box each get their own answer from this process; what the transport saw is
    written on the host; once it is closed a call gets no answer and the shim fails
    (exit 1, nothing on stdout: a non-blocking error the reconciliation names, never an
    answer and never exit 2, which would block the agent)."""
    asked: list[tuple[str, bytes]] = []
    lock = threading.Lock()

    def answer(event: str, payload: bytes) -> str:
        with lock:
            asked.append((event, payload))
        return f"{event} got {payload.decode()}"

    hooks = FileHooks.open_spool(env, HookEndpoint(host_command=str, answer=lambda: answer),
                                 env.paths.harness)
    outs = [shlex.quote(f"{env.paths.harness}/hook-check-{n}") for n in "ab"]
    calls = " & ".join(f"printf {word} | {hooks.command(event)} > {out}" for event, word, out
                       in (("PreToolUse", "one", outs[0]), ("Stop", "two", outs[1])))
    try:
        both = env.run(f"{calls} & wait; cat {outs[0]}; echo; cat {outs[1]}; rm -f {' '.join(outs)}",
                       60.0, cwd="/")
    finally:
        hooks.close()
    _expect(both.stdout.split("\n") == ["PreToolUse got one", "Stop got two"],
            f"the hook calls' answers: {both.stdout!r} {both.stderr[-300:]!r}")
    _expect(sorted(asked) == [("PreToolUse", b"one"), ("Stop", b"two")],
            f"what reached the policies: {asked}")
    report = json.loads(env.files.hook_channel.read_text())
    _expect((report["requests"], report["answered"], report["tamper"]) == (2, 2, []),
            f"the channel's record on the host: {report}")
    late = env.run(f"printf three | FIRE_HOOK_WAIT_S=1 {hooks.command('PreToolUse')}", 60.0,
                   cwd="/")
    _expect(late.exit_code == 1 and late.stdout == "" and len(asked) == 2,
            f"a hook call after the transport closed: {late}")


CHECKS: dict[str, Check] = {
    name.removeprefix("check_"): check for name, check in sorted(globals().items())
    if name.startswith("check_") and callable(check)
}


def self_check(make: Callable[[], Environment], checks: Iterable[str] | None = None
               ) -> dict[str, str | None]:
    """Run the ``checks`` named (None: every one), each in a fresh box from ``make()``
    (not started); returns each check's failure (None: passed)."""
    failures: dict[str, str | None] = {}
    for name in CHECKS if checks is None else checks:
        check = CHECKS[name]
        try:
            with make() as env:
                check(env)
            failures[name] = None
        except (ConformanceError, EnvironmentFailure) as exc:
            failures[name] = f"{type(exc).__name__}: {exc}"
    return failures
