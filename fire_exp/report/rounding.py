"""The one rounding rule: every number a reader sees, in every place, is rounded here.

A number is rounded half away from zero on its shortest decimal spelling (``repr``): 6.25
prints as 6.3 at one decimal, -6.25 as -6.3, 0.0625 as 0.063 at three. Python's own format
rounds the binary value half to even (6.25 → 6.2), which is why two places printing one
table could disagree. The report's tables, ``fire-exp analyze``'s Markdown, the explorer's
pages (``fire_exp/view/assets/view.js`` ``fixed``, the same rule on JavaScript's shortest
spelling, which is Python's) and the figures' annotations all call these functions.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["cell4", "fixed", "is_missing", "p_text", "rate_of"]


def is_missing(x: object) -> bool:
    """None or NaN: a cell with nothing to print."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def fixed(x: object, digits: int = 1) -> str:
    """``x`` with ``digits`` decimals, half away from zero; ``–`` for missing.

    >>> fixed(6.25), fixed(-6.25), fixed(56.25), fixed(-3.571, 2), fixed(5, 0), fixed(-0.04)
    ('6.3', '-6.3', '56.3', '-3.57', '5', '0.0')
    """
    if is_missing(x):
        return "–"
    value = float(x)  # type: ignore[arg-type]
    if not math.isfinite(value):
        return str(value)
    text = str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits),
                                             rounding=ROUND_HALF_UP))
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def p_text(p: object) -> str:
    """A p-value with three decimals, ``<0.001`` below (0.0625 → 0.063).

    >>> p_text(0.0625), p_text(1.0), p_text(2e-5), p_text(None)
    ('0.063', '1.000', '<0.001', '–')
    """
    if is_missing(p):
        return "–"
    return "<0.001" if float(p) < 0.001 else fixed(p, 3)  # type: ignore[arg-type]


def cell4(value: float) -> str:
    """A data-table float: four decimals, trailing zeros dropped, tiny values to four
    significant digits (``fire-exp analyze``'s Markdown and the explorer's tables).

    >>> [cell4(v) for v in (0.5, 2.0, 0.00012345, 0.0, -1.25, 0.03125, -0.00001)]
    ['0.5', '2', '0.0001234', '0', '-1.25', '0.0313', '-1e-05']
    """
    if -1e-3 < value < 1e-3 and value != 0:
        return f"{value:.4g}"
    text = fixed(value + 0.0, 4)
    return text.rstrip("0").rstrip(".") if "." in text else text


def rate_of(k: int, n: int, small: int = 20) -> str:
    """A percentage of ``k`` in ``n``, with its denominator when ``n`` is small
    (``100.0 (1 of 1)``): a rate of one attempt reads very differently from one of 200.

    >>> rate_of(1, 1), rate_of(30, 120), rate_of(0, 0)
    ('100.0 (1 of 1)', '25.0', '–')
    """
    if n == 0:
        return "–"
    text = fixed(100 * k / n)
    return f"{text} ({k} of {n})" if n < small else text
