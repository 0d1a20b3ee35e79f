"""The policy runtime and the arms, on recorded event sequences."""

from __future__ import annotations

import ast
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import (
    ALLOW,
    ARM_REGISTRY,
    ARMS,
    Arm,
    Event,
    Family,
    LogEntry,
    PolicyRuntime,
    Step,
    build_arm,
    deny,
    generic_text,
    instruct,
    load_portfolio,
    rule,
)
from fire_exp.policies.arms import ArmRegistry, generic_sentences
from fire_exp.policies.runtime import RuntimeMemory
from fire_exp.tasks.loader import load_task

TASK = "Start a web server on port 8000; it must stay reachable after you finish."


class Counter(Family):
    name = "counter"

    def eligible(self, task_text):
        return "server" in task_text

    def track(self, event, state):
        state["seen"] = state.get("seen", 0) + 1

    @rule(events=("Stop",), limit=2)
    def nag(self, event, state):
        return instruct(f"nag after {state['seen']} events")


class Blocker(Family):
    name = "blocker"

    def eligible(self, task_text):
        return True

    @rule(events=("PreToolUse",), limit=None)
    def no_rm(self, event, state):
        return deny("no rm") if event.command.startswith("rm") else ALLOW

    @rule(events=("PreToolUse",), limit=1)
    def hint(self, event, state):
        return instruct("a hint")


class Broken(Family):
    name = "broken"

    def eligible(self, task_text):
        return True

    @rule(events=("Stop",), limit=1)
    def explode(self, event, state):
        raise RuntimeError("bug in policy")


def stop(active=False):
    return Event("Stop", TASK, stop_hook_active=active)


def pre(command, step=1):
    return Event("PreToolUse", TASK, command=command, step=step)


def test_ineligible_family_never_runs() -> None:
    runtime = PolicyRuntime([Counter()], "Sort a CSV file.")
    assert runtime.active == []
    assert runtime.handle(stop()) == ALLOW
    assert runtime.events == 1 and runtime.log == []


def test_tracking_runs_before_action_and_nudge_limit_holds() -> None:
    runtime = PolicyRuntime([Counter()], TASK)
    decisions = [runtime.handle(stop()) for _ in range(4)]
    assert [d.kind for d in decisions] == ["instruct", "instruct", "allow", "allow"]
    assert decisions[0].text == "nag after 1 events" and decisions[1].text == "nag after 2 events"
    assert [e.rule for e in runtime.log] == ["nag", "nag"]


def test_first_deny_wins_and_repeats_without_limit() -> None:
    runtime = PolicyRuntime([Blocker()], TASK)
    first = runtime.handle(pre("rm -rf evidence"))
    second = runtime.handle(pre("rm -rf evidence", step=2))
    assert (first.kind, first.text) == ("deny", "no rm")
    assert second.kind == "deny"
    # The hint rule never got its turn while the deny rule ended evaluation first.
    assert runtime.handle(pre("ls", step=3)).text == "a hint"
    assert runtime.handle(pre("ls", step=4)) == ALLOW


def test_instructions_from_several_families_accumulate() -> None:
    runtime = PolicyRuntime([Counter(), Blocker()], TASK)
    runtime.handle(pre("ls"))
    decision = runtime.handle(stop())
    assert decision.kind == "instruct" and "nag after 2 events" in decision.text


def test_a_policy_that_raises_fails_open_and_is_logged() -> None:
    runtime = PolicyRuntime([Broken(), Counter()], TASK)
    decision = runtime.handle(stop())
    assert decision.kind == "instruct"  # the healthy family still speaks
    errors = [e for e in runtime.log if e.decision == "error"]
    assert len(errors) == 1 and "bug in policy" in errors[0].text
    assert runtime.fired_families() == {"counter"}


def test_deny_outside_pretooluse_becomes_an_instruction() -> None:
    class StopDenier(Family):
        name = "stop_denier"

        def eligible(self, task_text):
            return True

        @rule(events=("Stop",), limit=1)
        def block(self, event, state):
            return deny("keep going")

    assert PolicyRuntime([StopDenier()], TASK).handle(stop()).kind == "instruct"


@pytest.fixture(scope="module")
def portfolios():
    return load_portfolio("fire-core"), load_portfolio("controls")


@pytest.mark.parametrize("target", [120, 300, 441, 800])
def test_generic_text_is_within_twenty_percent(target: int, portfolios) -> None:
    sentences = generic_sentences(portfolios[1].path)
    text = generic_text(target, "family.rule", sentences)
    assert 0.8 * target <= len(text) <= 1.2 * target
    assert text == generic_text(target, "family.rule", sentences)  # fixed per rule


def test_sham_fires_at_the_same_events_with_generic_text_and_never_denies(portfolios) -> None:
    portfolio, controls = portfolios
    task = ("The SQLite database data/app.db is corrupted; recover the lost rows. "
            "Also run the status server and keep it running.")
    events = [
        Event("SessionStart", task),
        Event("PreToolUse", task, command="python3 status_server.py &", step=1),
        Event("PostToolUse", task, command="python3 status_server.py &", exit_code=0, step=1),
        Event("PreToolUse", task, command="sqlite3 data/app.db .dump", step=2),
        Event("PreToolUse", task, command="sqlite3 data/app.db .tables", step=3),
        Event("Stop", task, step=3),
        Event("Stop", task, step=3, stop_hook_active=True),
    ]
    real = PolicyRuntime(build_arm("real", portfolio, controls).families, task)
    sham = PolicyRuntime(build_arm("sham", portfolio, controls).families, task)
    pairs = [(real.handle(e), sham.handle(e)) for e in events]
    assert [r.is_allow for r, _ in pairs] == [s.is_allow for _, s in pairs]
    assert any(r.kind == "deny" for r, _ in pairs), "the real database rule denies"
    assert all(s.kind != "deny" for _, s in pairs)
    for (r, s) in pairs:
        if not r.is_allow:
            assert 0.8 * len(r.text) <= len(s.text) <= 1.2 * len(r.text)
            assert "setsid" not in s.text and "copy" not in s.text
    assert [(e.event, e.family) for e in real.log] == [(e.event, e.family) for e in sham.log]


def test_control_arms_fire_once_at_stop_on_every_task(portfolios) -> None:
    portfolio, controls = portfolios
    tasks = [load_task(p).instruction for p in sorted((SUITES_DIR / "fire-mini").iterdir())
             if (p / "task.toml").is_file()] + ["Sort a file."]
    for arm in ("always_verify", "reconsider"):
        # The text is the constant of the arm's own control source, and of no other.
        own = _string_literals(controls.path / f"{arm}.py")
        other = set().union(*(_string_literals(p) for p in controls.path.glob("*.py")
                              if p.name != f"{arm}.py"))
        for text in tasks:
            runtime = PolicyRuntime(build_arm(arm, portfolio, controls).families, text)
            assert runtime.handle(Event("SessionStart", text)) == ALLOW
            assert runtime.handle(Event("PreToolUse", text, command="sort x")) == ALLOW
            decision = runtime.handle(Event("Stop", text, step=1))
            assert decision.kind == "instruct"
            assert decision.text in own and decision.text not in other, (arm, decision.text)
            assert runtime.handle(Event("Stop", text, step=1, stop_hook_active=True)) == ALLOW
            assert runtime.handle(Event("Stop", text, step=2)) == ALLOW  # once per attempt


def _string_literals(path: Path) -> set[str]:
    """Every string literal of a Python source (adjacent literals joined)."""
    return {n.value for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_baseline_has_no_policies(portfolios) -> None:
    assert build_arm("baseline", *portfolios).families == ()


def test_service_persistence_codes_a_recorded_trajectory(portfolios) -> None:
    family = portfolios[0].family("service_persistence")
    attached = [Step(0, "command", "python3 status_server.py &", 0),
                Step(1, "command", "curl -s localhost:8000/status", 0), Step(2, "stop")]
    fixed = attached + [
        Step(3, "command", "setsid nohup python3 status_server.py > s.log 2>&1 < /dev/null &", 0),
        Step(4, "command", "curl -s localhost:8000/status", 0), Step(5, "stop")]
    chained = [Step(0, "command", "setsid python3 status_server.py > s.log 2>&1 & curl -s x", 0),
               Step(1, "stop")]
    assert (family.code(attached, TASK).state, family.code(attached, TASK).behavior) == (True, False)
    assert (family.code(fixed, TASK).state, family.code(fixed, TASK).behavior) == (True, True)
    # A probe chained into the launch command is not a later probe.
    assert family.code(chained, TASK).behavior is False


def test_snapshot_and_restore_carry_a_runtime_between_processes() -> None:
    events = [Event("SessionStart", TASK), Event("Stop", TASK), Event("Stop", TASK),
              Event("Stop", TASK)]
    whole = PolicyRuntime([Counter()], TASK)
    expected = [whole.handle(e) for e in events]
    got, memory = [], None
    for event in events:  # a fresh runtime per event, as the hook bridge runs
        runtime = PolicyRuntime([Counter()], TASK)
        if memory is not None:  # through JSON, as the bridge's session file
            runtime.restore(RuntimeMemory(**json.loads(json.dumps(asdict(memory)))))
        got.append(runtime.handle(event))
        memory = runtime.snapshot()
    assert got == expected and [d.kind for d in got] == ["allow", "instruct", "instruct",
                                                          "allow"]
    assert memory is not None and memory.events == 4 and memory.nudges == {"counter.nag": 2}
    assert memory.states == {"counter": {"seen": 4}}


def test_ingest_adds_what_ran_elsewhere() -> None:
    runtime = PolicyRuntime([Counter()], TASK)
    runtime.handle(Event("SessionStart", TASK))
    entry = LogEntry(seq=1, event="Stop", step=0, family="counter", rule="nag",
                     decision="instruct", text="t", duration_ms=0.1)
    runtime.ingest(events=3, counts={"Stop": 2, "PreToolUse": 1}, log=[entry])
    assert runtime.events == 4 and runtime.counts == {"SessionStart": 1, "Stop": 2,
                                                      "PreToolUse": 1}
    assert runtime.fired and runtime.fired_families() == {"counter"}


def test_the_arms_registry_builds_policy_and_derived_arms() -> None:
    portfolio, controls = load_portfolio("fire-core"), load_portfolio("controls")
    assert ARMS == ("real", "sham", "always_verify", "reconsider", "baseline")
    assert [ARM_REGISTRY.get(a).policy_arm for a in ARMS] == [True] * 4 + [False]
    registry = ArmRegistry()
    for arm in ARMS:
        registry.register(ARM_REGISTRY.get(arm))
    with pytest.raises(ValueError, match="already registered"):
        registry.register(ARM_REGISTRY.get("real"))

    def minus(family: str) -> Arm:
        def build(real, ctl):  # type: ignore[no-untyped-def]
            return tuple(f for f in real.families if f.name != family)
        return Arm(f"real-minus-{family}", build, True, f"real without {family}")

    registry.register_derived("real-minus-", minus)
    arm = registry.get("real-minus-enumeration")
    families = arm.build(portfolio, controls)
    assert "enumeration" not in {f.name for f in families}
    assert len(families) == len(portfolio.families) - 1
    assert registry.order(["baseline", "real-minus-x", "sham"]) == \
        ["sham", "baseline", "real-minus-x"]
    with pytest.raises(InputError, match="real-minus-NAME"):
        registry.get("nonsense")
