"""Anytime-valid sequential test of a paired task-level contrast: a betting e-process.

Tasks arrive one at a time, in a preregistered order. Each task's paired difference
d_t = (pass rate under A) − (pass rate under B) lies in [−1, 1]. Under the sign-flip null
every d_t is symmetric about 0 given the tasks before it, so E[d_t | past] = 0 and, for
any bet λ_t in (−1, 1) fixed before d_t is seen,

    K_t = Π_{s ≤ t} (1 + λ_s d_s)

is a nonnegative test martingale with K_0 = 1. It needs only E[d_t | past] = 0, which
holds whenever both arms have the same pass probability on the task, however many scored
attempts each arm has (each arm's pass rate is an unbiased mean). An average of test
martingales is one too. By Ville's inequality P(sup_t K_t ≥ 1/α) ≤ α: rejecting the first time the e-value
reaches 1/α keeps the type-I error at most α however often one looks and whenever one
stops (Ramdas et al. 2023; Shafer 2021). Two betting schemes:

- ``"mixture"``: the average of 2G constant bets ±λ_j, λ_j = λ_max · j / G (the
  diversified-Kelly mixture of Waudby-Smith & Ramdas 2024, two-sided). A pure function
  of the differences, in any order of arrival it gives the same final e-value.
- ``"agrapa"``: (K⁺_t + K⁻_t)/2, each side betting the predictable plug-in
  λ_t = clip(±μ̂_{t−1} / v̂_{t−1}, 0, λ_max) with μ̂ the running mean and v̂ the running
  mean square of the differences (Waudby-Smith & Ramdas 2024, aGRAPA).

``bet_on="sign"`` bets on sign(d_t) instead of d_t: the sign of a non-zero difference is a
fair coin given the past only when the difference is symmetric about 0 under the null,
which needs the same number of attempts in both arms (1 attempt against 2 on an easy task:
P(d > 0) ≠ P(d < 0), and betting on signs rejected 7–11 % of null panels at α = 5 %).
:func:`balanced_difference` therefore compares the first k attempts of each arm, k the
smaller count, wherever the sign is bet on; so computed, the process stays a test
martingale (the sequential analogue of the sign test). When tasks that move mostly move one way by
varying amounts — few attempts per task, lattice differences — it reaches 1/α sooner.

The test is two-sided, and says which way it stopped: each scheme is the average of a
process betting that A is better and one betting that A is worse, and the decision is
``efficacy`` when the first reached 1/α at the stop, ``harm`` when the second did (a panel
whose every task favours B stops for harm, never for efficacy). Both decisions are
rejections of the null at level α together.

Zero differences leave the e-value unchanged, as they leave the sign-flip p unchanged.
A futility rule (stop when the e-value has fallen to ``futility_below`` after at least
``futility_min_tasks`` tasks) can only remove rejections, so it never raises the type-I
error; it costs power, which ``fire-exp power`` shows.

References:
    Waudby-Smith, I. & Ramdas, A. (2024). Estimating means of bounded random variables by
    betting. JRSS-B 86(1), 1–27.
    Ramdas, A., Grünwald, P., Vovk, V. & Shafer, G. (2023). Game-theoretic statistics and
    safe anytime-valid inference. Statistical Science 38(4), 576–601.
    Shafer, G. (2021). Testing by betting. JRSS-A 184(2), 407–431.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["BETS_ON", "BETTING_METHODS", "DECISIONS", "SequentialResult",
           "balanced_difference", "e_process", "sequential_test"]

BETTING_METHODS = ("mixture", "agrapa")
BETS_ON = ("difference", "sign")
DECISIONS = ("efficacy", "harm", "futility", "continue")
_PRIOR_SQUARE = 0.25  # aGRAPA's prior mean square, one pseudo-task's worth


@dataclass(frozen=True)
class SequentialResult:
    """Result of ``sequential_test``.

    Attributes:
        decision: ``efficacy`` (the e-value reached 1/α betting that A is better),
            ``harm`` (it reached 1/α betting that A is worse), ``futility`` (the
            preregistered futility rule held first) or ``continue`` (none, so far).
        stopped_at: the number of tasks at the decision (None for ``continue``).
        e_value: the e-value at the decision, else after the last task.
        max_e_value: the largest e-value seen (sequential p = min(1, 1/max_e_value)).
        sequential_p: min(1, 1 / max_e_value), an anytime-valid p-value.
        threshold: 1/α.
        alpha: the level.
        method: the betting scheme.
        bet_on: ``difference`` or ``sign``.
        n_tasks: tasks seen.
        e_values: the e-process after each task (length ``n_tasks``).
        mean_difference: mean of the differences up to the decision (or all of them).
    """

    decision: str
    stopped_at: int | None
    e_value: float
    max_e_value: float
    sequential_p: float
    threshold: float
    alpha: float
    method: str
    n_tasks: int
    e_values: np.ndarray
    mean_difference: float
    bet_on: str = "difference"


def _sequential_iv(diffs: ArrayLike, method: str, max_bet: float, grid_size: int,
                   bet_on: str = "difference") -> np.ndarray:
    d = np.asarray(diffs, dtype=float)
    if d.ndim < 1:
        raise ValueError("diffs must be an array of per-task differences (last axis: tasks)")
    if not np.all(np.isfinite(d)) or np.any(np.abs(d) > 1.0):
        raise ValueError("diffs must be finite and within [-1, 1] (pass-rate differences)")
    if method not in BETTING_METHODS:
        raise ValueError(f"method must be one of {BETTING_METHODS}, got {method!r}")
    if not 0.0 < max_bet < 1.0:
        raise ValueError(f"max_bet must lie in (0, 1), got {max_bet!r}")
    if int(grid_size) != grid_size or grid_size < 1:
        raise ValueError(f"grid_size must be a positive integer, got {grid_size!r}")
    if bet_on not in BETS_ON:
        raise ValueError(f"bet_on must be one of {BETS_ON}, got {bet_on!r}")
    return np.sign(d) if bet_on == "sign" else d


def balanced_difference(a: ArrayLike, b: ArrayLike) -> float | None:
    """The pass-rate difference A − B over the first k attempts of each arm (k the smaller
    count, attempts in replicate order): symmetric about 0 under the null whatever the
    attempts per arm, as betting on signs needs. None when an arm has no attempt.

    >>> balanced_difference([1.0], [0.0, 1.0])
    1.0
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    k = min(x.size, y.size)
    return None if k == 0 else float(x[:k].mean() - y[:k].mean())


def _mixture(d: np.ndarray, max_bet: float, grid_size: int) -> np.ndarray:
    """The mixture's e-value: the mean wealth of all 2G constant bets, in log space."""
    bets = max_bet * np.arange(1, grid_size + 1) / grid_size
    bets = np.concatenate([bets, -bets])  # (2G,)
    logs = np.cumsum(np.log1p(bets[:, None] * d[..., None, :]), axis=-1)
    top = logs.max(axis=-2, keepdims=True)
    return np.asarray(np.exp(top[..., 0, :]) * np.exp(logs - top).mean(axis=-2))


def _mixture_sides(d: np.ndarray, max_bet: float, grid_size: int,
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The mixture's two halves: the mean wealth of the G bets on d > 0 and on d < 0."""
    bets = max_bet * np.arange(1, grid_size + 1) / grid_size

    def side(sign: float) -> np.ndarray:
        # log wealth of each constant bet, (..., G, n), averaged in log space
        logs = np.cumsum(np.log1p(sign * bets[:, None] * d[..., None, :]), axis=-1)
        top = logs.max(axis=-2, keepdims=True)
        return np.asarray(np.exp(top[..., 0, :]) * np.exp(logs - top).mean(axis=-2))

    return side(1.0), side(-1.0)


def _agrapa_sides(d: np.ndarray, max_bet: float) -> tuple[np.ndarray, np.ndarray]:
    n = d.shape[-1]
    past = np.arange(n, dtype=float) + 1.0  # pseudo-task plus the t−1 tasks before t
    sums = np.cumsum(d, axis=-1) - d  # Σ_{s<t} d_s
    squares = np.cumsum(d * d, axis=-1) - d * d
    mean = sums / past
    mean_square = (_PRIOR_SQUARE + squares) / past
    up = np.clip(mean / mean_square, 0.0, max_bet)
    down = np.clip(-mean / mean_square, 0.0, max_bet)
    wealth_up = np.exp(np.cumsum(np.log1p(up * d), axis=-1))
    wealth_down = np.exp(np.cumsum(np.log1p(-down * d), axis=-1))
    return wealth_up, wealth_down


def _sides(d: np.ndarray, method: str, max_bet: float, grid_size: int,
           ) -> tuple[np.ndarray, np.ndarray]:
    """The wealth of the process betting on A better and of the one betting on A worse."""
    if method == "mixture":
        return _mixture_sides(d, max_bet, grid_size)
    return _agrapa_sides(d, max_bet)


def e_process(diffs: ArrayLike, *, method: str = "mixture", max_bet: float = 0.9,
              grid_size: int = 20, bet_on: str = "difference") -> np.ndarray:
    """The e-value after each task of a paired difference sequence in [−1, 1].

    Deterministic: it depends only on the differences and their order. A leading axis
    holds independent panels (the last axis is tasks), so a power simulation computes
    thousands at once.

    Args:
        diffs: per-task differences A − B in task order, in [−1, 1].
        method: ``"mixture"`` or ``"agrapa"`` (see the module docstring).
        max_bet: the largest fraction of wealth bet on one task, in (0, 1).
        grid_size: G, the constant bets per side of the mixture.
        bet_on: ``"difference"`` (bet on d_t) or ``"sign"`` (bet on sign(d_t)).

    Returns:
        An array of the shape of ``diffs``: K_1 … K_n.

    >>> e_process([1.0, 0.5, 0.0, 1.0], method="agrapa").round(3)
    array([1.  , 1.2 , 1.2 , 1.83])
    >>> e_process([1.0, 0.5, 0.0, 1.0], method="agrapa", bet_on="sign").round(3)
    array([1. , 1.4, 1.4, 2.2])
    """
    d = _sequential_iv(diffs, method, max_bet, grid_size, bet_on)
    if d.shape[-1] == 0:
        return d.copy()
    if method == "mixture":
        return _mixture(d, max_bet, grid_size)
    up, down = _agrapa_sides(d, max_bet)
    return np.asarray((up + down) / 2.0)


def sequential_test(diffs: ArrayLike, *, alpha: float = 0.05, method: str = "mixture",
                    max_bet: float = 0.9, grid_size: int = 20, bet_on: str = "difference",
                    futility_below: float | None = None, futility_min_tasks: int = 1,
                    ) -> SequentialResult:
    """Anytime-valid two-sided test of a zero mean paired task-level difference.

    Estimand: the mean over tasks of the per-task difference between two arms (each arm's
    per-task value the mean of its attempts), as the fixed-size sign-flip test. Unit of
    analysis: the task, in the preregistered order. The test rejects at the first task
    whose e-value reaches 1/α; P(ever rejecting | null) ≤ α (Ville's inequality). The
    sequential p-value min(1, 1/sup K_t) is valid at any stopping time.

    Args:
        diffs: per-task differences A − B, in [−1, 1], in task order.
        alpha: the level; the efficacy threshold is 1/α.
        method, max_bet, grid_size, bet_on: the betting scheme (:func:`e_process`).
        futility_below: stop for futility when the e-value is at most this (after
            ``futility_min_tasks`` tasks); None: no futility rule.
        futility_min_tasks: the fewest tasks before futility may stop.

    Returns:
        A :class:`SequentialResult`; the decision is the first that held.

    References:
        Waudby-Smith & Ramdas (2024), JRSS-B; Ramdas et al. (2023), Statistical Science.

    >>> r = sequential_test([1.0] * 8 + [0.5] * 4, alpha=0.05)
    >>> r.decision, r.stopped_at, r.e_value >= 20
    ('efficacy', 8, True)
    >>> sequential_test([-1.0] * 8).decision  # every task favours B
    'harm'
    >>> sequential_test([0.5, -0.5, 0.0, 0.5, -0.5]).decision
    'continue'
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if futility_below is not None and not 0.0 <= futility_below < 1.0:
        raise ValueError(f"futility_below must lie in [0, 1), got {futility_below!r}")
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1:
        raise ValueError("diffs must be 1-d here (e_process takes several panels at once)")
    bets = _sequential_iv(d, method, max_bet, grid_size, bet_on)
    path = e_process(d, method=method, max_bet=max_bet, grid_size=grid_size, bet_on=bet_on)
    # which side carries the e-value: the process betting on A better, or on A worse
    up, down = _sides(bets, method, max_bet, grid_size) if d.size else (d, d)
    threshold = 1.0 / alpha
    decision, stop = "continue", None
    tasks = np.arange(1, d.size + 1)
    # A tiny tolerance: a path that lands on 1/α up to rounding has reached it.
    crossed = np.flatnonzero(path >= threshold * (1 - 1e-12))
    futile = (np.flatnonzero((path <= futility_below) & (tasks >= futility_min_tasks))
              if futility_below is not None else np.zeros(0, dtype=int))
    first_cross = int(crossed[0]) if crossed.size else None
    first_futile = int(futile[0]) if futile.size else None
    if first_cross is not None and (first_futile is None or first_cross <= first_futile):
        # the side whose wealth carried the e-value over 1/α: A better, or A worse
        harmful = down[first_cross] > up[first_cross]
        decision, stop = ("harm" if harmful else "efficacy"), first_cross + 1
    elif first_futile is not None:
        decision, stop = "futility", first_futile + 1
    upto = stop if stop is not None else d.size
    seen = path[:upto]
    max_e = float(seen.max()) if seen.size else 1.0
    return SequentialResult(
        decision=decision, stopped_at=stop, e_value=float(seen[-1]) if seen.size else 1.0,
        max_e_value=max_e, sequential_p=min(1.0, 1.0 / max_e) if max_e > 0 else 1.0,
        threshold=threshold, alpha=alpha, method=method, n_tasks=int(d.size), e_values=path,
        mean_difference=float(d[:upto].mean()) if upto else 0.0, bet_on=bet_on)
