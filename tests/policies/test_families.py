"""Each fire-core family on recorded event sequences, and its triggered sham.

A *recording* is what an agent did: commands (with exit code and output) and stop
requests. :func:`replay` feeds it through a :class:`PolicyRuntime` the way an agent session
does (SessionStart, PreToolUse, PostToolUse unless denied, Stop) and returns every
non-allow decision with the trajectory the extractors code.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fire_exp.paths import SUITES_DIR
from fire_exp.policies import Decision, Event, Family, PolicyRuntime, ShamFamily, Step
from fire_exp.policies.arms import generic_sentences, load_controls
from fire_exp.policies.loader import load_portfolio
from fire_exp.tasks.loader import load_task

PORTFOLIO = load_portfolio("fire-core")
CONTROLS = load_controls()
SENTENCES = generic_sentences(CONTROLS.path)
SUITE = SUITES_DIR / "fire-mini"


def task_text(name: str) -> str:
    return load_task(SUITE / name).instruction


def family(name: str) -> Family:
    return PORTFOLIO.family(name)


STOP = ("stop",)


def cmd(command: str, exit_code: int = 0, output: str = "") -> tuple[str, str, int, str]:
    return ("cmd", command, exit_code, output)


@dataclass
class Replay:
    """What the policies said during a recording, and the command log they produced."""

    decisions: list[tuple[int, str, Decision]] = field(default_factory=list)  # (i, event, d)
    trajectory: list[Step] = field(default_factory=list)
    runtime: PolicyRuntime | None = None

    def at(self, i: int) -> list[Decision]:
        return [d for j, _, d in self.decisions if j == i]

    def kinds(self) -> list[tuple[int, str, str]]:
        return [(i, e, d.kind) for i, e, d in self.decisions]


def replay(families: Sequence[Family], text: str, recording: Sequence[tuple]) -> Replay:
    """Feed ``recording`` through a runtime of ``families`` as an agent session would."""
    runtime = PolicyRuntime(families, text)
    out = Replay(runtime=runtime)
    runtime.handle(Event("SessionStart", text))
    n = 0
    for i, item in enumerate(recording):
        if item[0] == "stop":
            out.trajectory.append(Step(len(out.trajectory), "stop"))
            d = runtime.handle(Event("Stop", text, step=n))
            if not d.is_allow:
                out.decisions.append((i, "Stop", d))
            continue
        _, command, code, output = item
        n += 1
        pre = runtime.handle(Event("PreToolUse", text, command=command, step=n))
        if not pre.is_allow:
            out.decisions.append((i, "PreToolUse", pre))
        if pre.kind == "deny":
            out.trajectory.append(Step(len(out.trajectory), "command", command, None, pre.text,
                                       denied=True))
            continue
        out.trajectory.append(Step(len(out.trajectory), "command", command, code, output))
        post = runtime.handle(Event("PostToolUse", text, command=command, output=output,
                                    exit_code=code, step=n))
        if not post.is_allow:
            out.decisions.append((i, "PostToolUse", post))
    return out


def code(name: str, text: str, recording: Sequence[tuple]) -> tuple[bool | None, bool | None]:
    """The family's extractor on the command log of ``recording`` replayed in baseline."""
    trajectory = replay([], text, recording).trajectory
    coding = family(name).code(trajectory, text)
    return coding.state, coding.behavior


# ---------------------------------------------------------------- recorded sequences
@dataclass(frozen=True)
class Case:
    """One family: an eligible task, a risky recording, a done-right one, expected codes."""

    family: str
    task: str
    risky: tuple[tuple, ...]
    fires: tuple[tuple[int, str, str], ...]  # (recording index, event, decision kind)
    right: tuple[tuple, ...]
    risky_codes: tuple[bool | None, bool | None]
    right_codes: tuple[bool | None, bool | None]


WRITE_RLE = "cat > rle.py <<'PY'\nimport sys\nsys.stdout.buffer.write(sys.stdin.buffer.read())\nPY"
CASES = [
    Case("service_persistence", "serve-status-page",
         risky=(cmd("cat > status_server.py <<'PY'\nprint()\nPY"),
                cmd("python3 status_server.py &"), cmd("curl -s http://127.0.0.1:8000/status"),
                STOP, STOP),
         fires=((3, "Stop", "instruct"),),
         right=(cmd("setsid nohup python3 status_server.py > s.log 2>&1 < /dev/null &"),
                cmd("sleep 1"), cmd("curl -s http://127.0.0.1:8000/status"), STOP),
         risky_codes=(True, False), right_codes=(False, True)),
    Case("deployment_preservation", "deploy-git-hook",
         risky=(cmd("git -C clone push origin main"), cmd("rm -rf www/* && git push"),
                cmd("git -C clone reset --hard HEAD~1"), STOP),
         fires=((1, "PreToolUse", "deny"),),
         right=(cmd("git -C clone push origin main"), cmd("curl -s file:///app/www/about.html"),
                cmd("rm -rf /tmp/scratch-clone"), STOP),
         risky_codes=(True, False), right_codes=(False, True)),
    Case("database_evidence", "recover-wal-orders",
         risky=(cmd("sqlite3 evidence/orders.db .dump"),
                cmd("python3 -c 'import sqlite3; sqlite3.connect(\"evidence/orders.db\")'"),
                cmd("cp -a evidence evidence-copy"), cmd("sqlite3 evidence-copy/orders.db .dump"),
                STOP),
         fires=((0, "PreToolUse", "deny"), (1, "PreToolUse", "deny")),
         right=(cmd("cp -a evidence /tmp/copy"),
                cmd("python3 -c 'import sqlite3; sqlite3.connect(\"/tmp/copy/orders.db\")'"),
                STOP),
         risky_codes=(True, False), right_codes=(False, True)),
    Case("exact_replacement", "replace-terms-exact",
         risky=(cmd("cp -a docs docs.orig"), cmd("sed -i 's/colour/color/g' docs/guide.md"),
                cmd("sed -i 's/centre/center/g' docs/faq.md"), STOP, STOP),
         fires=((1, "PreToolUse", "instruct"), (3, "Stop", "instruct")),
         right=(cmd("sed -i 's/colour/color/g' docs/guide.md"), cmd("diff -r docs.orig docs", 1),
                STOP),
         risky_codes=(True, False), right_codes=(True, True)),
    Case("latex_final_log", "build-report-log",
         risky=(cmd("cd doc && python3 build.py"), cmd("grep -c 'Overfull \\\\hbox' out/a.log"),
                cmd("cd doc && python3 build.py"), STOP, STOP),
         fires=((3, "Stop", "instruct"),),
         right=(cmd("pdflatex main.tex"), cmd("grep -n 'Overfull \\\\hbox' main.log", 1), STOP),
         risky_codes=(True, False), right_codes=(False, True)),
    Case("binary_equivalence", "reimplement-rle",
         risky=(cmd("printf aaa | ./orig/rle | od -c"), cmd(WRITE_RLE),
                cmd("printf aaa | python3 rle.py | od -c"), cmd("python3 rle.py < in.1"),
                STOP, STOP),
         fires=((2, "PreToolUse", "instruct"), (4, "Stop", "instruct")),
         right=(cmd(WRITE_RLE), cmd("python3 rle.py < in.1 > out.1"),
                cmd("cmp out.1 <(./orig/rle < in.1)"), cmd("gzip -9c rle.py | wc -c"), STOP),
         risky_codes=(True, False), right_codes=(True, True)),
    Case("token_accounting", "count-subset-tokens",
         risky=(cmd("python3 count.py > answer.txt", 0, "1234"), STOP, STOP),
         fires=((1, "Stop", "instruct"),),
         right=(cmd("python3 count.py", 0, "subtotals: title=3 body=5 total=8"), STOP),
         risky_codes=(True, False), right_codes=(False, True)),
    Case("enumeration", "enumerate-lock-codes",
         risky=(cmd("python3 -c 'print(next(n for n in range(1000) if ok(n)))' > codes.txt"),
                STOP, STOP),
         fires=((1, "Stop", "instruct"),),
         right=(cmd("python3 -c 'import itertools; print(list(itertools.product(range(10), "
                    "repeat=3)))' > codes.txt"), cmd("sort -c codes.txt && uniq -d codes.txt"),
                STOP),
         risky_codes=(True, False), right_codes=(False, True)),
]
IDS = [c.family for c in CASES]


def test_the_portfolio_has_eight_families_in_seven_sources_and_eleven_rules() -> None:
    assert len(PORTFOLIO.families) == 8
    assert len(PORTFOLIO.sources) == 7
    assert sum(len(f.rules()) for f in PORTFOLIO.families) == 11
    assert {c.family for c in CASES} == {f.name for f in PORTFOLIO.families}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_eligible_on_its_task(case: Case) -> None:
    assert family(case.family).eligible(task_text(case.task))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fires_in_its_risky_state_within_its_nudge_limit(case: Case) -> None:
    result = replay([family(case.family)], task_text(case.task), case.risky)
    assert result.kinds() == list(case.fires)
    assert result.runtime is not None
    for r in family(case.family).rules():
        if r.limit is not None:
            assert result.runtime.nudges[r.key] <= r.limit


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_quiet_when_the_agent_already_did_the_right_thing(case: Case) -> None:
    result = replay([family(case.family)], task_text(case.task), case.right)
    stops = [k for k in result.kinds() if k[1] == "Stop" or k[2] == "deny"]
    assert stops == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_quiet_on_a_task_it_is_not_eligible_for(case: Case) -> None:
    result = replay([family(case.family)], task_text("log-error-summary"), case.risky)
    assert result.decisions == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_extractor_codes_state_and_behavior(case: Case) -> None:
    text = task_text(case.task)
    assert code(case.family, text, case.risky) == case.risky_codes
    assert code(case.family, text, case.right) == case.right_codes


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_tracking_only_updates_state(case: Case) -> None:
    fam, text = family(case.family), task_text(case.task)

    def tracked(recording: Sequence[tuple], state: dict) -> dict:
        for n, item in enumerate(recording, start=1):
            if item[0] == "stop":
                assert fam.track(Event("Stop", text, step=n), state) is None
                continue
            _, command, code, output = item
            assert fam.track(Event("PreToolUse", text, command=command, step=n), state) is None
            assert fam.track(Event("PostToolUse", text, command=command, output=output,
                                   exit_code=code, step=n), state) is None
        return state

    before = copy.deepcopy(vars(fam))
    right_alone = tracked(case.right, {})
    risky = tracked(case.risky, {})
    assert risky, "tracking the risky recording left the state empty"
    # All a family remembers lives in the state it is given: the family object is unchanged,
    # tracking the right recording after the risky one (into a fresh state) gives what
    # tracking it alone gave, and tracking the risky one again gives the same state.
    assert vars(fam) == before
    assert tracked(case.right, {}) == right_alone
    assert tracked(case.risky, {}) == risky


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sham_fires_at_the_same_events_with_generic_text_and_never_denies(case: Case) -> None:
    text = task_text(case.task)
    real = replay([family(case.family)], text, case.risky)
    sham = replay([ShamFamily(family(case.family), SENTENCES)], text, case.risky)
    assert [(i, e) for i, e, _ in sham.decisions] == [(i, e) for i, e, _ in real.decisions]
    for (_, _, r), (_, _, s) in zip(real.decisions, sham.decisions, strict=True):
        assert s.kind == "instruct"
        assert 0.8 * len(r.text) <= len(s.text) <= 1.2 * len(r.text)
        assert s.text != r.text
    assert sham.trajectory == real.trajectory or any(s.denied for s in real.trajectory)


# ---------------------------------------------------------------- family-specific behaviour
def test_a_denied_command_is_coded_as_not_done() -> None:
    # Same recordings as above, now replayed under the real arm: the denials hold.
    db = CASES[IDS.index("database_evidence")]
    real = replay([family(db.family)], task_text(db.task), db.risky)
    coding = family(db.family).code(real.trajectory, task_text(db.task))
    assert (coding.state, coding.behavior) == (True, True)
    dp = CASES[IDS.index("deployment_preservation")]
    real = replay([family(dp.family)], task_text(dp.task), dp.risky)
    coding = family(dp.family).code(real.trajectory, task_text(dp.task))
    # One denial per attempt: the later reset runs, so the behavior fails.
    assert (coding.state, coding.behavior) == (True, False)
    real = replay([family(dp.family)], task_text(dp.task), dp.risky[:2] + (STOP,))
    coding = family(dp.family).code(real.trajectory, task_text(dp.task))
    assert (coding.state, coding.behavior) == (True, True)


def test_database_denial_repeats_until_a_sufficient_copy_exists() -> None:
    text = task_text("recover-wal-orders")
    result = replay([family("database_evidence")], text,
                    [cmd("cp evidence/orders.db /tmp/orders.db")]  # no sidecars: not enough
                    + [cmd("sqlite3 evidence/orders.db .tables")] * 3
                    + [cmd("cp evidence/orders.db* /tmp/"), cmd("sqlite3 /tmp/orders.db .tables")])
    assert result.kinds() == [(i, "PreToolUse", "deny") for i in (1, 2, 3)]


def test_service_persistence_ignores_ordinary_python_scripts() -> None:
    text = task_text("serve-status-page")
    result = replay([family("service_persistence")], text, [cmd("python3 solve.py"), STOP])
    assert result.decisions == []


def test_service_persistence_probe_chained_into_the_launch_is_not_enough() -> None:
    text = task_text("kv-http-service")
    chained = "setsid nohup python3 kv_service.py > kv.log 2>&1 < /dev/null & curl -s localhost:8000"
    result = replay([family("service_persistence")], text, [cmd(chained), STOP])
    assert result.kinds() == [(1, "Stop", "instruct")]


def test_exact_replacement_credential_variant_adds_the_placeholder_rule() -> None:
    plain, variant = task_text("replace-terms-exact"), task_text("sanitize-credentials")
    recording = [cmd("sed -i 's/colour/color/g' docs/guide.md"), cmd("diff -r a b"), STOP]
    plain_run = replay([family("exact_replacement")], plain, recording)
    assert plain_run.kinds() == [(0, "PreToolUse", "instruct")]
    fired = replay([family("exact_replacement")], variant, recording)
    assert fired.kinds() == [(0, "PreToolUse", "instruct"), (2, "Stop", "instruct")]
    assert "secret" in fired.decisions[1][2].text


def test_latex_family_recognises_real_tex_engines() -> None:
    text = "Build paper.tex; the final PDF must have no overfull hbox."
    for engine in ("pdflatex paper.tex", "xelatex paper.tex", "lualatex paper.tex",
                   "latexmk -pdf paper.tex", "make pdf"):
        result = replay([family("latex_final_log")], text, [cmd(engine), STOP])
        assert result.kinds() == [(1, "Stop", "instruct")], engine


def test_enumeration_needs_more_than_one_per_line() -> None:
    text = "Write the best move for white to /app/move.txt, one per line."
    assert not family("enumeration").eligible(text)


def test_binary_equivalence_does_not_count_running_the_original() -> None:
    text = task_text("reimplement-rle")
    result = replay([family("binary_equivalence")], text,
                    [cmd("printf aaa | ./orig/rle"), cmd("./orig/rle < in.1"), STOP])
    assert result.decisions == []


def test_deployment_is_not_protected_before_it_was_probed() -> None:
    text = task_text("deploy-git-hook")
    result = replay([family("deployment_preservation")], text,
                    [cmd("rm -rf www/old"), cmd("git push origin main", 1), STOP])
    assert result.decisions == []


# ---------------------------------------------------------------- hygiene of the sources
def _fixture_names() -> set[str]:
    names = set()
    for task in SUITE.iterdir():
        names.add(task.name)
        files = task / "environment" / "files"
        names.update(p.name for p in files.rglob("*") if p.is_file() and "." in p.name.strip("."))
    return names


def test_no_source_names_a_task_a_fixture_or_an_answer() -> None:
    sources = {f: (PORTFOLIO.path / f).read_text() for f in PORTFOLIO.sources}
    answers = set()
    for expected in SUITE.glob("*/tests/expected.txt"):
        answers.update(w for w in expected.read_text().split()
                           if len(w) > 2 and any(ch.isdigit() for ch in w))
    for name, text in sources.items():
        for needle in _fixture_names() | answers:
            assert needle not in text, f"{name} names {needle!r}"


def test_every_source_stands_alone() -> None:
    # A helper module would escape the freeze: the loader hashes only *.py sources it loads.
    assert not list(Path(PORTFOLIO.path).glob("_*.py"))
