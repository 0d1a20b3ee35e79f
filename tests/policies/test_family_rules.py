"""Each fire-core family's rules and extractor on the sequences that tell a right rule from a
near miss: which files count as a candidate, what resets on a rewrite, which state is
sticky, what the extractor codes when nothing ran. The expectations come from each family's
registered chain (its docstring), never from running the family."""

from __future__ import annotations

import pytest

from fire_exp.paths import SUITES_DIR
from fire_exp.policies import Decision, Event, PolicyRuntime, Step
from fire_exp.policies.loader import load_portfolio
from fire_exp.tasks.loader import load_task

PORTFOLIO = load_portfolio("fire-core")

# (command, exit code, output), or ("EDIT", paths): a CLI's edit tool writing ``paths``
Action = tuple


def c(command: str, exit_code: int | None = 0, output: str = "") -> Action:
    return (command, exit_code, output)


def edit(*paths: str) -> Action:
    return ("EDIT", paths)


class Session:
    """One family's runtime on a task, fed the events an agent session raises; ``said`` is
    every non-allow decision with the index of the action (or ``stop``) that drew it."""

    def __init__(self, family: str, task: str, text: str | None = None) -> None:
        self.family = PORTFOLIO.family(family)
        self.text = text or load_task(SUITES_DIR / "fire-mini" / task).instruction
        self.runtime = PolicyRuntime([self.family], self.text)
        self.runtime.handle(Event("SessionStart", self.text))
        self.steps: list[Step] = []
        self.said: list[tuple[int | str, Decision]] = []

    def act(self, *actions: Action) -> Session:
        for action in actions:
            i = len(self.steps)
            if action[0] == "EDIT":
                pre = self.runtime.handle(Event("PreToolUse", self.text, command="", step=i + 1,
                                                paths=action[1], tool="Edit"))
                self.steps.append(Step(i, "edit", "Edit", 0, "", paths=action[1]))
                if pre.kind != "deny":
                    self.runtime.handle(Event("PostToolUse", self.text, command="", exit_code=0,
                                              step=i + 1, paths=action[1], tool="Edit"))
            else:
                command, code, output = action
                pre = self.runtime.handle(Event("PreToolUse", self.text, command=command,
                                                step=i + 1))
                denied = pre.kind == "deny"
                self.steps.append(Step(i, "command", command, None if denied else code,
                                       pre.text if denied else output, denied=denied))
                if not denied:
                    self.runtime.handle(Event("PostToolUse", self.text, command=command,
                                              output=output, exit_code=code, step=i + 1))
            if not pre.is_allow:
                self.said.append((i, pre))
        return self

    def stop(self) -> Decision:
        decision = self.runtime.handle(Event("Stop", self.text, step=len(self.steps)))
        self.steps.append(Step(len(self.steps), "stop"))
        return decision

    def code(self) -> tuple[bool | None, bool | None]:
        coding = self.family.code(self.steps, self.text)
        return coding.state, coding.behavior


def fired(session: Session) -> list[int | str]:
    return [i for i, _ in session.said]


# ---------------------------------------------------------------- binary_equivalence
RLE = ("binary_equivalence", "reimplement-rle")
WRITE = c("cat > rle.py <<'PY'\nimport sys\nPY")
RUN = c("python3 rle.py < in.1 > out.1")
CMP = c("cmp out.1 <(./orig/rle < in.1)")
SIZE = c("gzip -9c rle.py | wc -c", 0, "312")


@pytest.mark.parametrize(("write", "run"), [
    (c("cat > src/rle.py <<'PY'\nPY"), c("python3 src/rle.py < in.1")),  # a file in a folder
    (c("cat > \"rle.py\" <<'PY'\nPY"), c("python3 rle.py < in.1")),  # a quoted name
    (c("gcc -O2 -o rle rle.c"), c("./rle < in.1")),  # a compiled candidate
    (c("python3 -c \"open('enc.py', 'w').write('')\""), c("python3 enc.py < in.1")),
    (edit("/app/src/rle.py"), c("python3 src/rle.py < in.1")),  # written by an edit tool
    (edit("rle.sh/"), c("bash rle.sh < in.1")),
])
def test_the_first_run_of_a_candidate_however_written_is_nudged(write: Action,
                                                                 run: Action) -> None:
    session = Session(*RLE).act(write, c("ls"), run)
    assert fired(session) == [2]
    assert session.code() == (True, False)


@pytest.mark.parametrize("write", [c("printf 'aaab' > in.1"), c("cat > notes.md <<'X'\nX"),
                                   c("cat > $OUT <<'PY'\nPY"), edit("/app/data/in.2")])
def test_writing_what_is_not_a_program_makes_no_candidate(write: Action) -> None:
    session = Session(*RLE).act(write, c("python3 in.1"), c("bash notes.md"))
    assert fired(session) == [] and session.stop().is_allow
    assert session.code() == (False, None)  # nothing ran: no behavior to code


@pytest.mark.parametrize(("measure", "nudged"), [
    ((), True), ((CMP,), True), ((SIZE,), True), ((CMP, SIZE), False), ((SIZE, CMP), False),
    ((SIZE, c("ls"), CMP), False),  # each measurement sticks until the next rewrite
])
def test_a_stop_needs_both_a_comparison_and_a_size(measure: tuple[Action, ...],
                                                  nudged: bool) -> None:
    session = Session(*RLE).act(WRITE, RUN, *measure)
    assert session.stop().is_allow is not nudged
    assert session.code() == (True, not nudged)


@pytest.mark.parametrize("again", [(CMP,), (SIZE,), ()])
def test_a_rewrite_calls_for_both_measurements_again(again: tuple[Action, ...]) -> None:
    session = Session(*RLE).act(WRITE, RUN, CMP, SIZE, WRITE, RUN, *again)
    assert session.stop().kind == "instruct"
    assert session.code() == (True, False)


def test_new_input_files_after_the_measurements_change_nothing() -> None:
    session = Session(*RLE).act(WRITE, RUN, CMP, SIZE, c("printf 'zz' > in.2"),
                                c("head -c 100 /dev/urandom > in.3"))
    assert session.stop().is_allow and session.code() == (True, True)


# ---------------------------------------------------------------- database_evidence
def test_a_copy_with_no_exit_code_and_a_clean_output_disarms_the_database_family() -> None:
    """A CLI's hook may report no exit code: the output decides, and a quiet copy succeeded."""
    session = Session("database_evidence", "recover-wal-orders")
    session.act(c("cp -a evidence evidence.copy", None, ""),
                c("sqlite3 evidence/orders.db .dump"))
    assert fired(session) == []
    assert not [e for e in session.runtime.log if e.decision == "error"]


# ---------------------------------------------------------------- enumeration
LOCKS = ("enumeration", "enumerate-lock-codes")
ENUMERATE = c("python3 -c 'import itertools; print(list(itertools.product(range(10), "
              "repeat=3)))' > codes.txt")
VALIDATE = c("sort -c codes.txt && uniq -d codes.txt")


@pytest.mark.parametrize(("actions", "nudged"), [
    ((ENUMERATE,), True),
    ((ENUMERATE, VALIDATE), False),
    ((VALIDATE, ENUMERATE), True),  # a check before the enumeration checks nothing
    ((ENUMERATE, VALIDATE, ENUMERATE), True),  # a new candidate set needs a new check
    ((c("python3 -c 'import itertools; c = list(itertools.product(range(10), repeat=3)); "
        "assert all(len(x) == 3 for x in c)'"),), False),  # enumerated and checked at once
    ((c("ls"),), True),  # worked without enumerating
])
def test_a_stop_needs_the_last_enumeration_validated(actions: tuple[Action, ...],
                                                     nudged: bool) -> None:
    session = Session(*LOCKS).act(*actions)
    assert session.stop().is_allow is not nudged
    assert session.code() == (nudged, not nudged)


def test_a_stop_before_any_command_is_neither_nudged_nor_coded_risky() -> None:
    session = Session(*LOCKS)
    assert session.stop().is_allow
    assert session.code() == (False, None)


# ---------------------------------------------------------------- exact_replacement
TERMS = ("exact_replacement", "replace-terms-exact")
SED = c("sed -i 's/colour/color/g' docs/guide.md")
DIFF = c("diff -r docs.orig docs", 1)


def stop_texts(session: Session) -> list[str]:
    """The texts of every rule that fires at one Stop (each family's rules all run)."""
    session.stop()
    return [e.text for e in session.runtime.log if e.event == "Stop" and e.decision != "allow"]


@pytest.mark.parametrize(("actions", "nudged"), [
    ((SED,), True), ((SED, DIFF), False), ((SED, c("ls docs")), True),
    ((DIFF, SED), True),  # a diff before the write shows nothing of it
    ((SED, DIFF, SED), True),  # a new write needs a new diff
    ((edit("/app/docs/guide.md"),), True),  # a write by an edit tool
    ((edit("/app/docs/guide.md"), c("cmp docs.orig/guide.md docs/guide.md", 1)), False),
])
def test_a_stop_after_writing_needs_a_diff_after_the_last_write(actions: tuple[Action, ...],
                                                                nudged: bool) -> None:
    session = Session(*TERMS).act(*actions)
    assert session.stop().is_allow is not nudged
    assert session.code() == (True, not nudged)


def test_nothing_written_is_neither_nudged_nor_coded() -> None:
    session = Session(*TERMS).act(c("cat docs/guide.md"), DIFF)
    assert session.stop().is_allow and session.code() == (False, None)


@pytest.mark.parametrize(("text", "secrets"), [
    ("Replace each API token with the placeholder <TOKEN>; do not modify anything else.", True),
    ("Replace colour with color; do not modify anything else. The API token stays.", False),
    ("Replace colour with the placeholder values listed; do not modify anything else.", False),
])
def test_the_secret_search_is_asked_for_only_when_credentials_meet_placeholders(
        text: str, secrets: bool) -> None:
    family = PORTFOLIO.family("exact_replacement")
    assert family.eligible(text)
    session = Session(*TERMS, text=text).act(SED, DIFF)
    said = " ".join(map(str, stop_texts(session)))
    assert ("look like a secret" in said or "looks like a secret" in said) is secrets


@pytest.mark.parametrize(("text", "eligible"), [
    ("Replace colour with color in the guide. Do not modify the other files.", True),
    ("Replace colour with color in the guide.", False),  # a map, nothing protected
    ("Do not modify the other files; tidy the guide.", False),  # protected, no map
])
def test_exact_replacement_needs_a_map_and_protected_files(text: str, eligible: bool) -> None:
    assert PORTFOLIO.family("exact_replacement").eligible(text) is eligible


# ---------------------------------------------------------------- latex_final_log
REPORT = ("latex_final_log", "build-report-log")
BUILD = c("cd doc && python3 build.py")


@pytest.mark.parametrize(("actions", "nudged"), [
    ((BUILD,), True),
    ((BUILD, c("grep -n 'Overfull \\\\hbox' doc/out/report.log", 1)), False),
    ((BUILD, c("ls doc/out")), True),  # any command is not a search of the log
    ((BUILD, c("grep -n Overfull doc/report.tex", 1)), True),  # a search, not of the log
    ((BUILD, c("tail -n 40 doc/out/report.log")), True),  # the log, not searched
    ((c("grep -c overfull doc/out/report.log"), BUILD), True),  # searched before the build
])
def test_a_stop_after_a_build_needs_a_search_of_the_final_log(actions: tuple[Action, ...],
                                                               nudged: bool) -> None:
    session = Session(*REPORT).act(*actions)
    assert session.stop().is_allow is not nudged
    assert session.code() == (nudged, not nudged)


def test_no_build_is_neither_nudged_nor_coded() -> None:
    session = Session(*REPORT).act(c("cat doc/report.tex"))
    assert session.stop().is_allow and session.code() == (False, None)


# ---------------------------------------------------------------- token_accounting
TOKENS = ("token_accounting", "count-subset-tokens")
COUNT = c("python3 count.py > answer.txt", 0, "1234")


@pytest.mark.parametrize(("table", "nudged"), [
    (c("python3 count.py --table", 0, "subtotals: title=3 body=5 total=8"), False),
    (c("python3 count.py --table", 1, "subtotals: title=3 body=5 total=8"), True),  # it failed
    (c("python3 count.py --table", None, "subtotals: title=3 body=5 total=8"), False),
    (c("python3 count.py --table", None, "Traceback: error: subtotals"), True),
])
def test_a_stop_needs_a_reconciliation_that_succeeded(table: Action, nudged: bool) -> None:
    session = Session(*TOKENS).act(COUNT, table)
    assert session.stop().is_allow is not nudged
    assert session.code() == (nudged, not nudged)
    assert not [e for e in session.runtime.log if e.decision == "error"]


def test_a_stop_before_counting_is_neither_nudged_nor_coded() -> None:
    session = Session(*TOKENS)
    assert session.stop().is_allow and session.code() == (False, None)


# ---------------------------------------------------------------- service_persistence
SERVE = ("service_persistence", "serve-status-page")
DETACH = c("setsid nohup python3 status_server.py > s.log 2>&1 < /dev/null &")
PROBE = c("curl -s http://127.0.0.1:8000/status")


@pytest.mark.parametrize(("actions", "nudged"), [
    ((DETACH, PROBE), False), ((DETACH, c("ls")), True),  # any command is not a probe
    ((DETACH, PROBE, DETACH), True),  # a relaunch needs a new probe
    ((DETACH, PROBE, DETACH, PROBE), False),
])
def test_a_stop_needs_a_probe_after_the_last_detached_launch(actions: tuple[Action, ...],
                                                             nudged: bool) -> None:
    session = Session(*SERVE).act(*actions)
    assert session.stop().is_allow is not nudged
    assert session.code() == (nudged, not nudged)


@pytest.mark.parametrize(("family", "text", "eligible"), [
    ("service_persistence", "Run the status server on port 8000; it keeps running after you stop.", True),
    ("service_persistence", "Write a status server in status_server.py.", False),
    ("service_persistence", "Keep running the cleanup until the folder is empty.", False),
    ("deployment_preservation", "Set up a bare repository whose post-receive hook deploys "
                                "the site to the web server.", True),
    ("deployment_preservation", "Set up a bare repository for the team.", False),
    ("deployment_preservation", "Configure the web server on port 8080.", False),
])
def test_eligibility_needs_both_halves(family: str, text: str, eligible: bool) -> None:
    assert PORTFOLIO.family(family).eligible(text) is eligible


# ---------------------------------------------------------------- deployment_preservation
DEPLOY = ("deployment_preservation", "deploy-git-hook")
PUSH = c("git -C clone push origin main")


@pytest.mark.parametrize(("command", "destroys"), [
    ("rm -rf www/*", True), ("rmdir www", True), ("rm -rf /srv/site/", True),
    ("rm -rf www/index.html 'unbalanced", True),  # shlex fails: split on spaces
    ("rm -f tmp.txt ; ls www", False), ("rm -f tmp.txt && ls www", False),
    ("rm -f tmp.txt || cat www/index.html", False), ("rm -f tmp.txt | tee www/log", False),
    ("cat www/index.html ; rm -f tmp.txt", False),  # www is read before the rm
    ("rm -rf tmp # not www", False),  # a comment
    ("rm -rf $DEPLOY_DIR/cache", False), ("rm -rf build/", False),
])
def test_what_counts_as_removing_deployed_content(command: str, destroys: bool) -> None:
    session = Session(*DEPLOY).act(PUSH, c(command))
    assert [d.kind for _, d in session.said] == (["deny"] if destroys else [])


@pytest.mark.parametrize(("push", "armed"), [
    (PUSH, True), (c("git -C clone push origin main", 1, "rejected"), False),
    (c("git -C clone push origin main", None, ""), True),
    (c("git -C clone push origin main", None, "error: failed to push"), False),
])
def test_only_a_deployment_that_succeeded_arms_the_denial(push: Action, armed: bool) -> None:
    session = Session(*DEPLOY).act(push, c("rm -rf www/*"))
    assert [d.kind for _, d in session.said] == (["deny"] if armed else [])
    assert not [e for e in session.runtime.log if e.decision == "error"]


def deployment_code(steps: list[tuple[str, int | None, str, bool]]) -> tuple[bool | None,
                                                                             bool | None]:
    trajectory = [Step(i, "command", cmd, code, out, denied=denied)
                  for i, (cmd, code, out, denied) in enumerate(steps)]
    coding = PORTFOLIO.family("deployment_preservation").code(trajectory, "")
    return coding.state, coding.behavior


@pytest.mark.parametrize(("steps", "coded"), [
    ([], (False, None)),  # nothing deployed
    ([("rm -rf www/*", 0, "", False)], (False, None)),
    ([("git push origin main", 1, "rejected", False), ("rm -rf www/*", 0, "", False)],
     (False, None)),  # the deployment failed: nothing to preserve
    ([("git push origin main", None, "", False), ("rm -rf www/*", 0, "", False)],
     (True, False)),
    ([("git push origin main", 0, "", False), ("rm -rf www/*", None, "denied", True)],
     (True, True)),  # the policy denied it: the deployment survived
    ([("git push origin main", 0, "", False), ("rm -rf www/*", 0, "", False),
      ("rm -rf www/*", None, "denied", True)], (True, False)),  # destroyed stays destroyed
    ([("curl -s http://127.0.0.1:8080/", 0, "", True), ("rm -rf www/*", 0, "", False)],
     (False, None)),  # a probe that never ran
])
def test_the_deployment_extractor(steps: list[tuple[str, int | None, str, bool]],
                                  coded: tuple[bool | None, bool | None]) -> None:
    assert deployment_code(steps) == coded
