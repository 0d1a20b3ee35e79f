"""Each fire-core family's two sides: what its own text recommends is allowed, and what it
guards against is denied (or nudged at Stop), before and after the state that arms it.

Every recommended command below is checked to be the one the family's text names (its
placeholders filled in for the task), so a family that denied the very command its text
tells the agent to use (``sqlite3 -readonly`` on the originals, ``cp -a DIR DIR.copy``, a
new commit instead of a reset) fails here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from fire_exp.paths import SUITES_DIR
from fire_exp.policies import Decision, Event, Family, PolicyRuntime, Step
from fire_exp.policies.loader import load_portfolio
from fire_exp.tasks.loader import load_task

PORTFOLIO = load_portfolio("fire-core")

Command = tuple[str, int, str]  # (command, exit code, output)


def c(command: str, exit_code: int = 0, output: str = "") -> Command:
    return (command, exit_code, output)


@dataclass(frozen=True)
class Sides:
    """One family on one of its tasks.

    Attributes:
        arm: commands that put the family in the state it guards against.
        recommended: (what the text says, the command that does it) pairs.
        guarded: commands a deny family must deny once armed (each in its own session).
        disarm: commands after which the guarded ones are allowed again (deny families).
    """

    family: str
    task: str
    arm: tuple[Command, ...]
    recommended: tuple[tuple[str, Command], ...]
    guarded: tuple[Command, ...] = ()
    disarm: tuple[Command, ...] = ()


SIDES = [
    Sides("database_evidence", "recover-wal-orders", arm=(),
          recommended=(("cp -a DIR DIR.copy", c("cp -a evidence evidence.copy")),
                       ("read the originals only read-only",
                        c("sqlite3 -readonly evidence/orders.db .tables")),
                       ("read the originals only read-only",
                        c("sqlite3 -readonly evidence/orders.db 'select count(*) from orders'"))),
          guarded=(c("sqlite3 evidence/orders.db .dump"),
                   c("sqlite3 evidence/orders.db 'pragma integrity_check'"),
                   c("python3 -c 'import sqlite3; sqlite3.connect(\"evidence/orders.db\")'"),
                   c("python3 recover.py  # import sqlite3"),
                   c("git checkout -- evidence/orders.db")),
          disarm=(c("cp -a evidence evidence.copy"),)),
    Sides("deployment_preservation", "deploy-git-hook",
          arm=(c("git -C clone push origin main"),),
          recommended=(("push a new commit instead",
                        c("git -C clone commit --allow-empty -m again && "
                          "git -C clone push origin main")),
                       ("leave the deployed state in place",
                        c("curl -s http://127.0.0.1:8080/about.html"))),
          guarded=(c("rm -rf www/*"), c("git -C clone reset --hard HEAD~1"),
                   c("git -C clone push --force origin main"),
                   c("git -C clone push origin :main"), c("git -C server.git branch -D main"),
                   c("rm -rf /srv/site"), c("git -C clone clean -fdx"))),
    Sides("service_persistence", "serve-status-page",
          arm=(c("python3 status_server.py &"), c("curl -s http://127.0.0.1:8000/status")),
          recommended=(("setsid nohup CMD > server.log 2>&1 < /dev/null &",
                        c("setsid nohup python3 status_server.py > server.log 2>&1 "
                          "< /dev/null &")),
                       ("probe the endpoint (curl", c("curl -s http://127.0.0.1:8000/status")))),
    Sides("exact_replacement", "replace-terms-exact",
          arm=(c("sed -i 's/colour/color/g' docs/guide.md"),),
          recommended=(("diff or cmp", c("diff -r docs.orig docs", 1)),)),
    Sides("latex_final_log", "build-report-log", arm=(c("cd doc && python3 build.py"),),
          recommended=(("grep -n 'Overfull \\\\hbox' NAME.log",
                        c("grep -n 'Overfull \\\\hbox' doc/out/report.log", 1)),)),
    Sides("binary_equivalence", "reimplement-rle",
          arm=(c("cat > rle.py <<'PY'\nprint()\nPY"), c("python3 rle.py < in.1 > out.1")),
          recommended=(("compare the outputs byte for byte (cmp)",
                        c("cmp out.1 <(./orig/rle < in.1)")),
                       ("compressed size", c("gzip -9c rle.py | wc -c", 0, "312")))),
    Sides("token_accounting", "count-subset-tokens",
          arm=(c("python3 count.py > answer.txt", 0, "1234"),),
          recommended=(("the token subtotal of every text field",
                        c("python3 count.py --table", 0,
                          "subtotals: title=3 body=5 total=8")),)),
    Sides("enumeration", "enumerate-lock-codes",
          arm=(c("python3 -c 'print(123)' > codes.txt"),),
          recommended=(("Enumerate the complete candidate set",
                        c("python3 -c 'import itertools; print(list(itertools.product("
                          "range(10), repeat=3)))' > codes.txt")),
                       ("no duplicates", c("sort -c codes.txt && uniq -d codes.txt")))),
]
IDS = [s.family for s in SIDES]
DENIES = {"database_evidence", "deployment_preservation"}


class Session:
    """One family's runtime on its task, fed the events an agent session raises."""

    def __init__(self, family: Family, task: str) -> None:
        self.text = load_task(SUITES_DIR / "fire-mini" / task).instruction
        self.runtime = PolicyRuntime([family], self.text)
        self.runtime.handle(Event("SessionStart", self.text))
        self.steps = 0

    def run(self, command: Command) -> list[Decision]:
        """PreToolUse, then PostToolUse unless denied: every non-allow decision."""
        self.steps += 1
        text, exit_code, output = command
        pre = self.runtime.handle(Event("PreToolUse", self.text, command=text, step=self.steps))
        if pre.kind == "deny":
            return [pre]
        post = self.runtime.handle(Event("PostToolUse", self.text, command=text, output=output,
                                         exit_code=exit_code, step=self.steps))
        return [d for d in (pre, post) if not d.is_allow]

    def run_all(self, commands: Sequence[Command]) -> list[Decision]:
        return [d for command in commands for d in self.run(command)]

    def stop(self) -> Decision:
        return self.runtime.handle(Event("Stop", self.text, step=self.steps))


def family(name: str) -> Family:
    return PORTFOLIO.family(name)


def texts_of(side: Sides) -> str:
    """Everything the family says on its task when armed (deny, instructions, at Stop)."""
    session = Session(family(side.family), side.task)
    said = session.run_all(side.arm) + session.run_all(side.guarded[:1]) + [session.stop()]
    return "\n".join(d.text for d in said if not d.is_allow)


@pytest.mark.parametrize("side", SIDES, ids=IDS)
def test_the_recommended_commands_are_what_the_text_says(side: Sides) -> None:
    said = texts_of(side)
    assert said, f"{side.family} says nothing when armed"
    for quote, _ in side.recommended:
        assert quote in said, f"{side.family}'s text does not say {quote!r}"


@pytest.mark.parametrize("side", SIDES, ids=IDS)
def test_what_the_text_recommends_is_never_denied_before_or_after_arming(side: Sides) -> None:
    for _, command in side.recommended:
        before = Session(family(side.family), side.task)
        assert all(d.kind != "deny" for d in before.run(command)), command[0]
        after = Session(family(side.family), side.task)
        after.run_all(side.arm)
        assert all(d.kind != "deny" for d in after.run(command)), command[0]


@pytest.mark.parametrize("side", [s for s in SIDES if s.family in DENIES],
                         ids=[s.family for s in SIDES if s.family in DENIES])
def test_what_the_family_guards_against_is_denied_only_while_armed(side: Sides) -> None:
    for command in side.guarded:
        armed = Session(family(side.family), side.task)
        armed.run_all(side.arm)
        assert [d.kind for d in armed.run(command)] == ["deny"], command[0]
        if not side.arm:  # armed from the start: unarmed once the copy exists
            done = Session(family(side.family), side.task)
            assert done.run_all(side.disarm) == []
            assert done.run(command) == [], command[0]
        else:  # unarmed until the arming command succeeded
            fresh = Session(family(side.family), side.task)
            assert fresh.run(command) == [], command[0]
            failed = Session(family(side.family), side.task)
            failed.run_all([(cmd, 1, "error: failed") for cmd, _, _ in side.arm])
            assert failed.run(command) == [], f"{command[0]} after a failed arming command"


@pytest.mark.parametrize("side", [s for s in SIDES if s.family not in DENIES],
                         ids=[s.family for s in SIDES if s.family not in DENIES])
def test_a_stop_in_the_armed_state_is_nudged_and_the_recommended_commands_quiet_it(
        side: Sides) -> None:
    armed = Session(family(side.family), side.task)
    armed.run_all(side.arm)
    assert armed.stop().kind == "instruct"
    done = Session(family(side.family), side.task)
    done.run_all(side.arm)
    assert all(d.kind != "deny" for d in done.run_all([cmd for _, cmd in side.recommended]))
    assert done.stop().is_allow, f"{side.family} nudges after what its text recommends"
    # Before arming, the recommended commands alone never call for a nudge.
    first = Session(family(side.family), side.task)
    first.run_all([cmd for _, cmd in side.recommended])
    assert first.stop().is_allow


@pytest.mark.parametrize("copy", [
    c("cp -a evidence evidence.copy", 1, "cp: No space left on device"),
    # A CLI's hook may report no exit code: then the output says whether it failed.
    ("cp -a evidence evidence.copy", None, "cp: cannot create directory: Permission denied"),
])
def test_a_copy_that_failed_does_not_disarm_the_database_family(copy: tuple) -> None:
    session = Session(family("database_evidence"), "recover-wal-orders")
    assert session.run(copy) == []
    assert [d.kind for d in session.run(c("sqlite3 evidence/orders.db .dump"))] == ["deny"]


@pytest.mark.parametrize(("text", "eligible"), [
    ("Recover the orders from the damaged SQLite database evidence/orders.db.", True),
    ("Recover the lost paragraphs of the essay in notes.txt.", False),   # no database
    ("Count the orders in the SQLite database shop.db.", False),         # nothing to recover
])
def test_the_database_family_needs_a_recovery_and_a_database(text: str,
                                                             eligible: bool) -> None:
    assert family("database_evidence").eligible(text) is eligible


@pytest.mark.parametrize(("steps", "coded"), [
    ([], (False, False)),                                          # nothing opened, no copy
    ([("cp -a evidence /tmp/copy", 0)], (False, True)),            # a copy, nothing opened
    ([("cp -a evidence /tmp/copy", 1)], (False, False)),           # the copy failed
    ([("cp -a evidence /tmp/copy", None)], (False, False)),        # no code: its output says it failed
    ([("cp -a evidence /tmp/copy", 1), ("sqlite3 evidence/orders.db .dump", 0)], (True, False)),
    ([("cp -a evidence /tmp/copy", 0), ("sqlite3 /tmp/copy/orders.db .dump", 0)], (False, True)),
])
def test_the_database_family_codes_whether_a_complete_copy_came_first(
        steps: list[tuple[str, int | None]], coded: tuple[bool, bool]) -> None:
    said = {None: "cp: Permission denied"}
    trajectory = [Step(i, "command", cmd, code, said.get(code, ""))
                  for i, (cmd, code) in enumerate(steps)]
    text = load_task(SUITES_DIR / "fire-mini" / "recover-wal-orders").instruction
    coding = family("database_evidence").code([*trajectory, Step(len(steps), "stop")], text)
    assert (coding.state, coding.behavior) == coded


def test_a_probe_chained_into_the_launch_is_not_enough() -> None:
    session = Session(family("service_persistence"), "serve-status-page")
    session.run(c("setsid nohup python3 status_server.py > s.log 2>&1 < /dev/null & "
                  "curl -s http://127.0.0.1:8000/status"))
    assert session.stop().kind == "instruct"


def test_a_rebuild_after_the_search_calls_for_a_new_search() -> None:
    session = Session(family("latex_final_log"), "build-report-log")
    session.run_all([c("cd doc && python3 build.py"),
                     c("grep -n 'Overfull \\\\hbox' doc/out/report.log", 1),
                     c("cd doc && python3 build.py")])
    assert session.stop().kind == "instruct"
