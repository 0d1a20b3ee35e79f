"""The resampling engine against a brute force of its own definition.

Each resample of T tasks takes ceil(T/2) raw 64-bit words from its stream, splits each into
two 32-bit halves (low first), maps a half u to the task floor(u·T / 2^32) and counts the
draws: the counts row W of that resample. The sums are W @ x. The brute force below follows
that definition one resample at a time, in Python integers, so a changed index map, word
count, offset, chunk or row path, a dropped column or a stratum drawn from the wrong stream
gives other sums.
"""

from __future__ import annotations

import numpy as np
import pytest

from fire_exp.stats import Stratum, count_matrix_sums
from fire_exp.stats.resample import (
    PARALLEL_WORK,
    _draw_sums,
    block_sums,
    fixed_point,
    strata_blocks,
)


def brute_counts(t: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The B x T count matrix, one resample and one draw at a time."""
    counts = np.zeros((n_resamples, t), dtype=np.int64)
    for b in range(n_resamples):
        words = [int(w) for w in rng.bit_generator.random_raw((t + 1) // 2)]
        halves = [h for w in words for h in (w & 0xFFFFFFFF, w >> 32)][:t]
        for u in halves:
            counts[b, (u * t) >> 32] += 1
    return counts


def brute_sums(x: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    counts = brute_counts(x.shape[0], n_resamples, np.random.default_rng(seed))
    return np.array([[sum(int(c) * float(v) for c, v in zip(row, col, strict=True))
                      for col in x.T] for row in counts])


def whole(t: int, j: int, seed: int) -> np.ndarray:
    """T x J whole numbers (some negative, one column zero on the first rows): sums exact."""
    x = np.random.default_rng(seed).integers(-50, 100, (t, j)).astype(float)
    x[: t // 2, 0] = 0.0
    return x


@pytest.mark.parametrize("t", [1, 2, 3, 7, 40])
@pytest.mark.parametrize("chunk", [None, 1, 5, 64])
def test_the_sums_are_the_counts_of_the_documented_draws(t: int, chunk: int | None) -> None:
    x = whole(t, 3, t)
    got = count_matrix_sums(x, n_resamples=37, rng=np.random.default_rng(11), chunk_size=chunk)
    assert np.array_equal(got, brute_sums(x, 37, 11))


@pytest.mark.parametrize("t", [1, 2, 7, 40])
@pytest.mark.parametrize("row_counts", [1, 10**9])
@pytest.mark.parametrize("chunk", [None, 1, 4, 100])
def test_both_count_paths_draw_the_documented_counts(t: int, row_counts: int,
                                                     chunk: int | None) -> None:
    """Counts row by row (T >= row_counts) and per chunk with offsets give the brute force's
    W, in every chunk, the last (shorter) one included; the sums are added to ``out``."""
    x = whole(t, 2, 3 + t)
    out = np.full((23, 2), 5.0)
    _draw_sums(x, out, rng=np.random.default_rng(4), chunk_size=chunk, row_counts=row_counts)
    assert np.array_equal(out, 5.0 + brute_sums(x, 23, 4))


def test_the_row_by_row_path_is_taken_from_its_threshold_of_tasks() -> None:
    """With the default threshold, 1,024 tasks count row by row; the result is the brute
    force's either way (a few resamples: the brute force is slow)."""
    for t in (1023, 1024):
        x = whole(t, 1, t)
        out = np.zeros((2, 1))
        _draw_sums(x, out, rng=np.random.default_rng(2), chunk_size=None)
        assert np.array_equal(out, brute_sums(x, 2, 2))


class Recording:
    """A stream that records how many raw words each call takes (one call per chunk)."""

    def __init__(self, seed: int) -> None:
        self.source = np.random.default_rng(seed).bit_generator
        self.bit_generator = self
        self.calls: list[int] = []

    def random_raw(self, size: int) -> np.ndarray:
        self.calls.append(size)
        return self.source.random_raw(size)


@pytest.mark.parametrize(("t", "n", "chunk_size", "row_counts", "chunks"), [
    (1, 40_000, None, 1024, [16_384, 16_384, 7_232]),  # ~16k draws a chunk, one bincount
    (5, 10_000, None, 1024, [3_276] * 3 + [172]),  # 16,384 // 5 resamples a chunk
    (1, 300_000, None, 1, [262_144, 37_856]),  # ~256k draws a chunk row by row
    (1024, 300, None, 1024, [256, 44]),  # 1,024 tasks: row by row, 262,144 // 1,024
    (1023, 300, None, 1024, [16] * 18 + [12]),  # one task fewer: 16,384 // 1,023
    (3, 3, 1, 1024, [1, 1, 1]),  # chunk_size resamples a chunk
    (3, 5, 2, 1, [2, 2, 1]),
])
def test_the_draws_come_in_chunks_that_bound_memory(t: int, n: int, chunk_size: int | None,
                                                    row_counts: int, chunks: list[int]) -> None:
    """Each chunk draws its resamples' words in one call: ceil(T/2) words a resample, as many
    resamples as the chunk holds (what bounds the memory of a draw)."""
    rng = Recording(3)
    out = np.zeros((n, 1))
    _draw_sums(np.ones((t, 1)), out, rng=rng, chunk_size=chunk_size,  # type: ignore[arg-type]
               row_counts=row_counts)
    assert rng.calls == [rows * ((t + 1) // 2) for rows in chunks]
    assert np.all(out == t)


def test_the_stream_is_consumed_in_whole_words_per_resample() -> None:
    """An odd T wastes the last half-word of each resample: after B resamples the stream
    stands at B·ceil(T/2) words, whatever the chunk size."""
    for chunk in (1, 3, None):
        rng = np.random.default_rng(8)
        count_matrix_sums(np.ones((5, 1)), n_resamples=7, rng=rng, chunk_size=chunk)
        after = np.random.default_rng(8)
        after.bit_generator.random_raw(7 * 3)
        assert rng.bit_generator.random_raw() == after.bit_generator.random_raw()


@pytest.mark.parametrize(("t", "j"), [(1, 1), (5, 3), (40, 2), (1000, 2)])
def test_fixed_point_scales_each_column_by_the_largest_power_of_two_that_stays_exact(
        t: int, j: int) -> None:
    x = np.random.default_rng(t).normal(0, 10.0 ** (np.arange(j) - 1), (t, j))  # peaks < 1 too
    fixed, scale = fixed_point(x)
    assert fixed.shape == x.shape and scale.shape == (j,)
    mantissa, _ = np.frexp(scale)
    assert np.all(mantissa == 0.5), "each scale is a power of two"
    assert np.array_equal(fixed, np.rint(x * scale))
    bound = t * np.max(np.abs(fixed), axis=0)
    # the largest power: T·max|fixed| stays within 2^52, and would not with twice the scale
    assert np.all(bound <= 2.0 ** 52) and np.all(2 * t * np.max(np.abs(x * scale), axis=0)
                                                 > 2.0 ** 52)


def test_fixed_point_of_a_zero_column_and_of_no_tasks() -> None:
    fixed, scale = fixed_point(np.zeros((4, 2)))
    assert np.array_equal(fixed, np.zeros((4, 2)))
    assert scale.tolist() == [2.0 ** 50, 2.0 ** 50]  # 2^52 / 4 tasks, as if the peak were 1
    with np.errstate(divide="ignore"):
        fixed, scale = fixed_point(np.zeros((0, 3)))
    assert fixed.shape == (0, 3) and scale.shape == (3,)


def test_no_tasks_resample_to_zero_sums() -> None:
    with np.errstate(divide="ignore"):
        got = count_matrix_sums(np.zeros((0, 2)), n_resamples=3, rng=np.random.default_rng(0))
    assert np.array_equal(got, np.zeros((3, 2)))


def test_fractions_come_back_to_their_scale() -> None:
    """Sums of non-integer values: the fixed-point grid is undone, to rounding."""
    x = np.random.default_rng(1).random((9, 2)) * [1e-3, 1e3]
    got = count_matrix_sums(x, n_resamples=50, rng=np.random.default_rng(6))
    counts = brute_counts(9, 50, np.random.default_rng(6))
    np.testing.assert_allclose(got, counts @ x, rtol=1e-12)


def test_strata_blocks_take_one_source_of_draws() -> None:
    rng = np.random.default_rng(0)
    (block,) = strata_blocks(6, rng, None)
    assert np.arange(6)[block.rows].tolist() == list(range(6)) and block.rng is rng
    strata = (Stratum(slice(0, 2), rng), Stratum(slice(2, 6), np.random.default_rng(1)))
    assert strata_blocks(6, None, strata) == list(strata)
    for both in ((rng, strata), (None, None)):
        with pytest.raises(ValueError, match="^give either rng or strata$"):
            strata_blocks(6, *both)


def blocks() -> list[Stratum]:
    return [Stratum(slice(0, 3), np.random.default_rng(1)),
            Stratum(slice(3, 3), np.random.default_rng(2)),  # an empty block
            Stratum(slice(3, 10), np.random.default_rng(3))]


@pytest.mark.parametrize("workers", [None, 1, 2, 3])
def test_each_block_is_the_brute_force_of_its_own_rows_and_stream(workers: int | None) -> None:
    """Block sums add each block's resample of its rows from its stream; a column zero on a
    block, and columns equal on a block (multiplied once), get their own sums."""
    x = np.column_stack([whole(10, 4, 1), np.ones(10)])  # the last column is all ones
    x[:, 2] = x[:, 1]  # equal on every block
    x[3:, 3] = x[3:, 0]  # equal on the last block only
    x[:3, 1] = 0.0
    want = (np.vstack([brute_sums(x[:3], 29, 1)])
            + brute_sums(x[3:], 29, 3))
    got = block_sums(x, 29, blocks(), None, workers=workers)
    assert np.array_equal(got, want)


def test_a_large_draw_is_spread_over_threads_with_the_same_sums(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """From PARALLEL_WORK resamples x rows on, the blocks are drawn in threads (one per
    block, at most one per core: workers=None), with the serial sums; below it, in one."""
    import concurrent.futures

    pools: list[int] = []

    class Recording(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, max_workers: int) -> None:
            pools.append(max_workers)
            super().__init__(max_workers=max_workers)

    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Recording)
    monkeypatch.setattr("fire_exp.stats.resample._workers", lambda: 8)
    x = whole(40, 2, 2)

    def strata() -> list[Stratum]:
        return [Stratum(slice(0, 10), np.random.default_rng(1)),
                Stratum(slice(10, 40), np.random.default_rng(2))]

    n = PARALLEL_WORK // 40
    serial = block_sums(x, n, strata(), None, workers=1)
    assert pools == []
    assert np.array_equal(block_sums(x, n, strata(), None), serial)
    assert pools == [2]
    block_sums(x, n - 1, strata(), None)
    assert pools == [2]


def test_the_workers_are_the_cores_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from fire_exp.stats.resample import _workers

    assert _workers() == len(os.sched_getaffinity(0))
    monkeypatch.delattr(os, "sched_getaffinity")  # not on Linux: the machine's count
    monkeypatch.setattr(os, "cpu_count", lambda: 5)
    assert _workers() == 5
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert _workers() == 1
