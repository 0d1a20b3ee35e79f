"""The policy runtime: dispatches events to the families of one arm for one attempt.

Evaluation follows failproofai (reference/hooks.md): every eligible family's tracking rule
runs first; then the action rules in order. The first ``deny`` ends evaluation;
``instruct`` texts accumulate and are delivered together. A rule that raises counts as
``allow`` (fail-open) and is logged. Each rule has a nudge limit per attempt. Every
non-allow decision and every error is written to the activity log.

Where the policies run one event per process (the hook bridge), the runtime's memory is
carried between calls with :meth:`PolicyRuntime.snapshot` and :meth:`~PolicyRuntime.restore`;
where they ran elsewhere (a CLI's hooks), :meth:`~PolicyRuntime.ingest` takes in what they did.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from fire_exp.policies.model import ALLOW, Decision, Event, Family, State

# How many Stop nudges in a row an agent receives before it may stop anyway: a backstop
# against a stop rule without a nudge limit (the session and the hook bridge both apply it).
MAX_STOP_ROUNDS = 8


@dataclass(frozen=True)
class LogEntry:
    """One line of the activity log (non-allow decisions and policy errors)."""

    seq: int  # event number within the attempt
    event: str
    step: int
    family: str
    rule: str
    decision: str  # "instruct" | "deny" | "error"
    text: str
    duration_ms: float

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class RuntimeMemory:
    """What a runtime remembers between events (JSON-serialisable).

    Attributes:
        states: each active family's tracked state.
        nudges: non-allow decisions per rule key (for the nudge limits).
        counts: events seen, by name.
        events: events seen in all.
    """

    states: dict[str, State] = field(default_factory=dict)
    nudges: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    events: int = 0


class PolicyRuntime:
    """The arm's policies for one attempt.

    Args:
        families: the arm's families (empty for the baseline arm).
        task_text: the task instruction; decides which families are eligible.
    """

    def __init__(self, families: Sequence[Family], task_text: str) -> None:
        self.task_text = task_text
        self.families = tuple(families)  # the whole arm (hook-driven agents export it)
        self.active = [f for f in self.families if _eligible(f, task_text)]
        self.states: dict[str, State] = {f.name: {} for f in self.active}
        self.rules = [r for f in self.active for r in f.rules()]
        self.nudges: Counter[str] = Counter()
        self.log: list[LogEntry] = []
        self.events = 0
        self.counts: Counter[str] = Counter()  # events seen, by name

    @property
    def fired(self) -> bool:
        """Whether any policy made a non-allow decision in this attempt."""
        return any(e.decision in ("instruct", "deny") for e in self.log)

    def fired_families(self) -> set[str]:
        return {e.family for e in self.log if e.decision in ("instruct", "deny")}

    def snapshot(self) -> RuntimeMemory:
        """The runtime's memory now (the active families' states are shared, not copied)."""
        return RuntimeMemory(states=dict(self.states), nudges=dict(self.nudges),
                             counts=dict(self.counts), events=self.events)

    def restore(self, memory: RuntimeMemory) -> None:
        """Continue from ``memory`` (a snapshot of a runtime of the same arm and task).

        Families that are not active on this task keep no state.
        """
        for family in self.active:
            self.states[family.name] = memory.states.get(family.name, {})
        self.nudges = Counter(memory.nudges)
        self.counts = Counter(memory.counts)
        self.events = memory.events

    def ingest(self, *, events: int, counts: Mapping[str, int],
               log: Sequence[LogEntry]) -> None:
        """Add what the arm's policies did outside this runtime (a CLI's hooks)."""
        self.events += events
        self.counts.update(counts)
        self.log.extend(log)

    def handle(self, event: Event) -> Decision:
        """Run every eligible family on ``event``; return the combined decision."""
        self.events += 1
        self.counts[event.name] += 1
        for family in self.active:
            self._guarded(family.name, "track", event,
                          lambda f=family: f.track(event, self.states[f.name]))
        texts: list[str] = []
        for r in self.rules:
            if event.name not in r.events:
                continue
            if r.limit is not None and self.nudges[r.key] >= r.limit:
                continue
            state = self.states[r.family]
            decision = self._guarded(r.family, r.name, event, lambda r=r, s=state:
                                     r.decide(event, s))
            if decision is None or decision.is_allow:
                continue
            if decision.kind == "deny" and event.name != "PreToolUse":
                decision = Decision("instruct", decision.text)  # only a command can be denied
            self.nudges[r.key] += 1
            if decision.kind == "deny":
                return decision
            texts.append(decision.text)
        return Decision("instruct", "\n\n".join(texts)) if texts else ALLOW

    def _guarded(self, family: str, rule: str, event: Event, call: object) -> Decision | None:
        start = time.perf_counter()
        try:
            result = call()  # type: ignore[operator]
        except Exception as exc:  # noqa: BLE001 - a policy error fails open
            self._log(event, family, rule, "error", f"{type(exc).__name__}: {exc}", start)
            return None
        if isinstance(result, Decision) and not result.is_allow:
            self._log(event, family, rule, result.kind, result.text, start)
        return result if isinstance(result, Decision) else None

    def _log(self, event: Event, family: str, rule: str, decision: str, text: str,
             start: float) -> None:
        self.log.append(LogEntry(seq=self.events, event=event.name, step=event.step,
                                 family=family, rule=rule, decision=decision, text=text,
                                 duration_ms=round((time.perf_counter() - start) * 1e3, 3)))


def _eligible(family: Family, task_text: str) -> bool:
    try:
        return bool(family.eligible(task_text))
    except Exception:  # noqa: BLE001 - an eligibility error leaves the family out (fail-open)
        return False
