"""Stopping a run before its end: the sequential rule and the spending budget.

A :class:`StopMonitor` watches a run's records as they are written. With a sequential
analysis plan it evaluates the preregistered rule each time a task completes
(:func:`fire_exp.analysis.sequential.sequential_state`, a pure function of the records, the
plan and the frozen schedule): on efficacy, harm or futility it empties the queue, so nothing
more starts and the attempts in flight finish and are recorded. With ``panel.budget_usd``
or ``panel.budget_attempts`` it keeps the queue no longer than what the budget still
allows, counting the attempts in flight as spent (at the dearest cost of a finished
attempt of the run, or of a pilot's attempt, ``cost_pilot=``, before the first), so no
attempt starts that could cross it. Either way the reason goes
to the run folder's ``stopped.json`` (what ``analyze`` reads), and a resumed run decides
again from its records: it continues exactly, or stops at once for the same reason.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fire_exp.analysis.sequential import (
    STOP_FILE,
    FrozenOrder,
    SequentialState,
    sequential_state,
    standing_cells,
    write_stop,
)
from fire_exp.records import AttemptRecord
from fire_exp.runner.model import Panel
from fire_exp.runner.projection import pilot_cost, pilot_records

__all__ = ["Stop", "StopMonitor"]

# The rule's decisions that end the run: both sides of the two-sided test, and futility.
_FINAL = ("efficacy", "harm", "futility")


@dataclass(frozen=True)
class Stop:
    """Why a run stopped before its end: ``efficacy``, ``futility``, ``budget_usd`` or
    ``budget_attempts``, with one line for the terminal and the figures behind it."""

    reason: str
    line: str
    details: dict[str, Any] = field(default_factory=dict)


def _cost(record: AttemptRecord) -> float:
    return float(record.usage.cost_usd or 0.0)


class StopMonitor:
    """Decides, after every record, whether the run goes on (see the module docstring).

    Args:
        panel: the panel (its plan, schedule and budget).
        records: the finished records already in the run's store.
        run_dir: where ``stopped.json`` goes.
    """

    def __init__(self, panel: Panel, records: Sequence[AttemptRecord], run_dir: Path) -> None:
        self.plan = panel.plan
        self.budget_usd = panel.config.panel.budget_usd
        self.budget_attempts = panel.config.panel.budget_attempts
        self.order = (FrozenOrder.from_schedule(panel.schedule)
                      if self.plan.sequential is not None else None)
        self.records = list(records)
        self._standing = standing_cells(self.records)
        self._differences: dict[str, float | None] = {}
        self._spent_usd = sum(_cost(r) for r in self.records)
        self._dearest = max((_cost(r) for r in self.records), default=0.0)
        # Before a cost is seen, a pilot's cost per attempt stands in (cost_pilot=).
        pilot = (pilot_cost(pilot_records(panel.config.cost_pilot), panel.agent.params)
                 if self.budget_usd is not None and panel.config.cost_pilot else None)
        self._dearest = max(self._dearest, pilot[0] if pilot else 0.0)
        self.run_dir = run_dir
        self.in_flight = 0
        self._held: deque[Any] = deque()  # owed jobs the budget cannot pay for yet
        self.stop: Stop | None = None
        self._completed = -1
        self.state: SequentialState | None = None

    @classmethod
    def for_panel(cls, panel: Panel, records: Sequence[AttemptRecord], run_dir: Path,
                  ) -> StopMonitor | None:
        """A monitor when the panel has a sequential plan or a budget, else None."""
        pc = panel.config.panel
        if panel.plan.sequential is None and pc.budget_usd is None and \
                pc.budget_attempts is None:
            return None
        return cls(panel, records, run_dir)

    def started(self) -> None:
        """An attempt was sent off."""
        self.in_flight += 1

    def finished(self, record: AttemptRecord) -> None:
        """An attempt's record was written."""
        self.in_flight = max(0, self.in_flight - 1)
        self.records.append(record)
        self._spent_usd += _cost(record)
        self._dearest = max(self._dearest, _cost(record))
        if record.lineage.replaced_by is None:
            self._standing.add((record.task, record.arm, record.replicate))

    def check(self, queue: deque[Any]) -> Stop | None:
        """Decide now. The rule's decision (efficacy, futility) is final: the queue is
        emptied and ``stopped.json`` written. A budget holds back the queue's tail that it
        cannot pay for (and lets it back when cheaper attempts leave room); the run ends
        stopped by its budget when attempts are still held back at the end (:meth:`close`).
        """
        if self.stop is None or self.stop.reason not in _FINAL:
            stop = self._rule()
            if stop is not None:
                self.stop = stop
                write_stop(self.run_dir, stop.reason, stop.line, **stop.details)
        if self.stop is not None and self.stop.reason in _FINAL:
            queue.clear()
            self._held.clear()
            return self.stop
        self.stop = self._balance(queue)
        return self.stop

    def close(self, owed: int) -> Stop | None:
        """The run ended with ``owed`` attempts not run: a budget's stop is final now, with
        the final counts (none if the budget let every attempt run after all)."""
        stop = self.stop
        if stop is None or stop.reason in _FINAL:
            return stop
        if owed == 0:
            self.stop = None
            return None
        cap = self._cap(stop.reason)
        spent = self._spent()
        line = (f"stopped by its budget ({cap}): {owed} owed attempts not run "
                f"({spent['attempts_recorded']} recorded, ${spent['cost_usd']:.2f} spent); "
                f"raise {cap.split('=')[0]} and resume to continue")
        self.stop = Stop(stop.reason, line, {**stop.details, **spent, "not_started": owed})
        write_stop(self.run_dir, self.stop.reason, line, **self.stop.details)
        return self.stop

    def clear_stale(self) -> None:
        """A resumed run that goes on: an earlier stop record no longer holds (a budget's
        is written again at close)."""
        if self.stop is None or self.stop.reason not in _FINAL:
            (self.run_dir / STOP_FILE).unlink(missing_ok=True)

    def _rule(self) -> Stop | None:
        if self.order is None:
            return None
        completed = self._completed_count(self.order)
        if completed == self._completed:
            return None  # no task completed since the last look
        self._completed = completed
        self.state = state = sequential_state(self.records, self.plan, self.order,
                                              standing=self._standing,
                                              differences=self._differences)
        if state.result.decision == "continue":
            return None
        r = state.result
        return Stop(r.decision, state.line(), {
            "tasks_completed": len(state.completed), "tasks_tested": len(state.tasks),
            "stopped_at": r.stopped_at, "stopping_task": state.stopping_task,
            "e_value": r.e_value, "threshold": r.threshold, "alpha": r.alpha,
            "method": r.method, "contrast": state.contrast, "cohort": state.cohort,
            **self._spent()})

    def _completed_count(self, order: FrozenOrder) -> int:
        """Tasks that count (the frozen order's complete prefix), advanced incrementally."""
        done = max(self._completed, 0)
        tasks, cells = order.tasks, order.cells
        while done < len(tasks) and all((tasks[done], arm, rep) in self._standing
                                        for arm, rep in cells[tasks[done]]):
            done += 1
        return done

    def _spent(self) -> dict[str, Any]:
        return {"attempts_recorded": len(self.records),
                "cost_usd": round(self._spent_usd, 6)}

    def _allowed(self) -> tuple[int, str] | None:
        """How many more attempts may start, and which budget says so (None: no cap)."""
        caps = []
        busy = len(self.records) + self.in_flight
        if self.budget_attempts is not None:
            caps.append((self.budget_attempts - busy, "budget_attempts"))
        dearest = self._dearest
        if self.budget_usd is not None and dearest > 0:
            left = self.budget_usd - self._spent_usd - self.in_flight * dearest
            caps.append((math.floor(left / dearest + 1e-9), "budget_usd"))
        return min(caps) if caps else None

    def _balance(self, queue: deque[Any]) -> Stop | None:
        """Keep in ``queue`` only what the budget allows; the rest waits in ``_held``."""
        allowed = self._allowed()
        keep = len(queue) + len(self._held) if allowed is None else max(0, allowed[0])
        while len(queue) > keep:
            self._held.appendleft(queue.pop())
        while self._held and len(queue) < keep:
            queue.append(self._held.popleft())
        if not self._held or allowed is None:
            return None
        which = allowed[1]
        return Stop(which, f"held back by {self._cap(which)}", {
            "budget_usd": self.budget_usd, "budget_attempts": self.budget_attempts})

    def _cap(self, which: str) -> str:
        return (f"panel.budget_usd={self.budget_usd:g}" if which == "budget_usd" else
                f"panel.budget_attempts={self.budget_attempts}")
