"""The ``sequential:`` section of an analysis plan: the preregistered stopping rule.

A plan with this section makes the panel sequential: the runner completes every arm and
attempt of a task before the next task counts, in a randomized task order frozen in the
manifest, and after each completed task evaluates the anytime-valid test of the primary
contrast on its cohort (:func:`fire_exp.stats.sequential.sequential_test`): it stops for
efficacy when the e-value reaches 1/alpha, and for futility only when ``futility`` is
preregistered. Without the section a panel runs to its end exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fire_exp.errors import InputError

__all__ = ["Futility", "SequentialPlan", "check_sequential_for_panel"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, strict=True)


class Futility(_Model):
    """Stop for futility once the e-value is at most ``e_below`` after ``min_tasks`` tasks
    of the primary cohort (it can only remove rejections: the level stays alpha)."""

    e_below: float = Field(gt=0, lt=1)
    min_tasks: int = Field(default=1, ge=1)


class SequentialPlan(_Model):
    """The sequential test of the primary contrast: betting scheme, level, futility.

    ``method``, ``bet_on``, ``max_bet`` and ``grid_size`` are
    :func:`fire_exp.stats.e_process`'s.
    """

    method: Literal["mixture", "agrapa"] = "mixture"
    bet_on: Literal["difference", "sign"] = "difference"
    alpha: float = Field(default=0.05, gt=0, le=0.5)
    max_bet: float = Field(default=0.9, gt=0, lt=1)
    grid_size: int = Field(default=20, ge=1, le=1000)
    futility: Futility | None = None


def check_sequential_for_panel(sequential: SequentialPlan | None, primary: str,
                               path: Path | str, panel_arms: Iterable[str]) -> None:
    """Refuse a sequential plan whose primary contrast names an arm the panel lacks: its
    e-process would never see a task, so the panel could never stop.

    Raises:
        InputError: naming the plan file and ``primary.contrast``.
    """
    if sequential is None:
        return
    arms = set(panel_arms)
    missing = [arm for arm in primary.split(" - ") if arm.strip() not in arms]
    if missing:
        raise InputError(path, "primary.contrast", f"the sequential test needs arm(s) "
                         f"{missing}, which the panel does not run",
                         "add them to the panel's arms or drop the plan's sequential: section")
