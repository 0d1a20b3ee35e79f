import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from fire_exp.analysis.counts import grouped_counts

COLUMNS = ("state", "fired", "behavior", "passed")


def _one_group(g: pd.DataFrame) -> dict:
    """The counts of one group's attempts, one by one (the definition)."""
    rows = list(g.itertuples(index=False))
    pis = [r for r in rows if r.passed == 1 and r.state == 1]
    near = sum(1 for r in pis if r.behavior == 0)
    return {"attempts": len(rows), "state": sum(r.state == 1 for r in rows),
            "fired": sum(r.fired == 1 for r in rows),
            "behavior": sum(r.behavior == 1 for r in rows),
            "coded": sum(not np.isnan(r.behavior) for r in rows),
            "passed": sum(r.passed == 1 for r in rows), "passed_in_state": len(pis),
            "near_miss": near, "uncoded": sum(1 for r in pis if np.isnan(r.behavior)),
            "near_miss_pct": 100 * near / max(1, len(pis))}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2**32 - 1), st.booleans())
def test_grouped_counts_equal_counting_each_group(n, seed, categorical):
    gen = np.random.default_rng(seed)
    flags = gen.choice([0.0, 1.0, np.nan], size=(n, 4), p=[0.4, 0.5, 0.1])
    frame = pd.DataFrame(flags, columns=list(COLUMNS))
    frame["family"] = gen.choice(["serve", "evidence"], n)
    frame["arm"] = gen.choice(["sham", "real", "baseline"], n)
    if categorical:
        frame["arm"] = frame["arm"].astype("category")
    got = grouped_counts(frame, ["family", "arm"], COLUMNS)
    expected = [{"family": f, "arm": a, **_one_group(g)}
                for (f, a), g in frame.groupby(["family", "arm"], sort=True, observed=True)]
    assert got == expected
    assert all(isinstance(r["state"], int) for r in got)
