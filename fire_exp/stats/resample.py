"""Exact resampled sums: the engine under every bootstrap interval of an analysis.

Each resample draws T task indices with replacement; the indices become a count vector
(``np.bincount``) and B of them the count matrix W (B x T), so one product W @ X gives the
resampled sums of every column of X (T x columns) together. The columns are scaled to a
fixed point first, which makes the product exact: the sums do not depend on the chunk
size, on which other columns are present, or on BLAS blocking. Row blocks (strata) are
resampled separately, each from its own stream, and may be drawn in parallel threads.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PARALLEL_WORK", "Stratum", "block_sums", "count_matrix_sums", "fixed_point",
           "strata_blocks"]


@dataclass(frozen=True)
class Stratum:
    """Rows of the task columns that are resampled among themselves, and their stream.

    A stratified bootstrap draws each stratum's tasks from that stratum only, so every
    resample keeps the stratum's size (cohorts fixed by preregistration).
    """

    rows: slice
    rng: np.random.Generator



def fixed_point(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scale each column by a power of two to whole numbers small enough that W @ x is exact.

    With T tasks and counts summing to T, every partial sum of W @ x stays below 2^52, so
    the product is exact whatever order BLAS adds in: the output does not depend on the
    chunk size, on the other columns, or on the BLAS build's blocking. Rounding to the grid
    costs at most 2^-52 · T · max|x| per sum.
    """
    t = x.shape[0]
    peak = np.max(np.abs(x), axis=0) if t else np.zeros(x.shape[1])
    exps = np.floor(np.log2((2.0 ** 52) / (t * np.where(peak > 0, peak, 1.0))))
    scale = np.exp2(exps)
    return np.rint(x * scale), scale


_ROW_COUNTS = 1024  # tasks from which each resample's counts are taken row by row


def _draw_sums(fixed: np.ndarray, out: np.ndarray, *, rng: np.random.Generator,
               chunk_size: int | None, row_counts: int = _ROW_COUNTS) -> None:
    """Add W @ fixed to ``out`` (B x J) for B resamples of the T rows of ``fixed``.

    Counts come from ``np.bincount``: row by row once T >= ``row_counts`` (a row's counts
    stay in cache and land straight in the float matrix), else one call per chunk with
    row r's indices offset into [r·T, (r+1)·T). Both give the same W.
    """
    n_resamples, t = out.shape[0], fixed.shape[0]
    by_row = t >= row_counts
    # Indices per chunk: ~16k where a chunk's counts come from one bincount (its arrays,
    # 128 kB each, stay in cache and are reused from the allocator's heap: 2.7x faster than
    # 256k at 30 tasks, 1.15x at 1,000); ~256k row by row, where the product wants tall
    # blocks of W (16k is 1.5x slower at 10,000 tasks).
    per_chunk = 262_144 if by_row else 16_384
    chunk = max(1, min(n_resamples, chunk_size or per_chunk // max(t, 1), 2**31 // max(t, 1)))
    half = (t + 1) // 2
    idx = np.empty((chunk, t), dtype=np.uint64)
    w = np.empty((chunk, t)) if by_row else None
    # The offset is added before the shift (r·T·2^32 < 2^64 for any chunk we use).
    offsets = ((np.arange(chunk, dtype=np.uint64) * np.uint64(t)) << np.uint64(32))[:, None]
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        # Each resample takes ceil(T/2) raw 64-bit draws, two 32-bit halves per draw, so
        # the stream is the same whatever the chunk size. Multiply-shift maps a 32-bit u to
        # floor(u·T / 2^32) in [0, T) (bias at most T / 2^32).
        raw = rng.bit_generator.random_raw(rows * half).reshape(rows, half)
        ib = idx[:rows]
        np.multiply(raw.view(np.uint32)[:, :t], np.uint64(t), out=ib, casting="unsafe")
        if w is not None:
            ib >>= np.uint64(32)
            iv = ib.view(np.int64)
            for r in range(rows):
                w[r] = np.bincount(iv[r], minlength=t)
            out[start:start + rows] += w[:rows] @ fixed
        else:
            ib += offsets[:rows]
            ib >>= np.uint64(32)
            counts = np.bincount(ib.view(np.int64).ravel(), minlength=rows * t)
            out[start:start + rows] += counts.reshape(rows, t).astype(float) @ fixed


def count_matrix_sums(x: np.ndarray, *, n_resamples: int,
                      rng: np.random.Generator | None = None,
                      strata: Sequence[Stratum] | None = None,
                      chunk_size: int | None = None) -> np.ndarray:
    """Resampled column sums W @ x for B task-level resamples (B x columns).

    Args:
        x: T x J matrix of per-task values (finite).
        n_resamples: B.
        rng: source of the task indices (one stratum: every row).
        strata: instead of ``rng``, row blocks resampled separately, each from its own
            stream (a stratified bootstrap: each block keeps its size in every resample).
        chunk_size: resamples per chunk (bounds memory; the output does not depend on it).

    >>> count_matrix_sums(np.ones((3, 1)), n_resamples=2, rng=np.random.default_rng(0)).ravel()
    array([3., 3.])
    """
    fixed, scale = fixed_point(np.asarray(x, dtype=float))
    result: np.ndarray = block_sums(fixed, n_resamples, strata_blocks(x.shape[0], rng, strata),
                                     chunk_size) / scale
    return result


def strata_blocks(t: int, rng: np.random.Generator | None,
                  strata: Sequence[Stratum] | None) -> list[Stratum]:
    """The row blocks of T tasks: one block of every row drawn from ``rng``, or ``strata``
    (exactly one of the two is given)."""
    if (rng is None) == (strata is None):
        raise ValueError("give either rng or strata")
    return [Stratum(slice(0, t), rng)] if rng is not None else list(strata or ())


PARALLEL_WORK = 20_000_000  # resamples x rows above which blocks are drawn in parallel


def _workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def block_sums(fixed: np.ndarray, n_resamples: int, blocks: Sequence[Stratum],
                chunk_size: int | None, workers: int | None = None) -> np.ndarray:
    """W @ fixed (B x J) with each block's rows resampled from the block's stream.

    Blocks are independent (own rows, own stream) and their sums exact, so they may be
    drawn in parallel threads (``workers``; None: the machine's cores when the work is
    large) with the same result; each thread then keeps BLAS to one thread.
    """

    def one(block: Stratum) -> tuple[np.ndarray, np.ndarray | None]:
        part = fixed[block.rows]
        # A column with nothing in this block adds nothing: leave it out of the product.
        used = np.flatnonzero(np.any(part != 0, axis=0))
        if part.shape[0] == 0 or used.size == 0:
            return used, None
        # Columns equal on this block's rows (a pass rate asked for by several tables) have
        # equal sums: multiply each distinct column once.
        seen: dict[bytes, int] = {}  # column's values -> its slot among the distinct ones
        firsts: list[int] = []  # position in ``used`` of each distinct column
        slot = []
        for pos, j in enumerate(used):
            key = np.ascontiguousarray(part[:, j]).tobytes()
            if key not in seen:
                seen[key] = len(firsts)
                firsts.append(pos)
            slot.append(seen[key])
        distinct = used[firsts]
        sums = np.zeros((n_resamples, distinct.size))
        _draw_sums(np.ascontiguousarray(part[:, distinct]), sums, rng=block.rng,
                   chunk_size=chunk_size)
        return used, sums[:, slot]

    if workers is None:
        large = n_resamples * fixed.shape[0] >= PARALLEL_WORK
        workers = min(len(blocks), _workers()) if large else 1
    if workers > 1:
        from concurrent.futures import ThreadPoolExecutor

        from threadpoolctl import threadpool_limits

        # Largest block first, so the others fill the other threads meanwhile.
        order = sorted(range(len(blocks)), key=lambda i: -fixed[blocks[i].rows].shape[0])
        with threadpool_limits(limits=1, user_api="blas"), \
                ThreadPoolExecutor(max_workers=workers) as pool:
            done = dict(zip(order, pool.map(one, [blocks[i] for i in order]), strict=True))
        found = [done[i] for i in range(len(blocks))]
    else:
        found = [one(block) for block in blocks]
    out = np.zeros((n_resamples, fixed.shape[1]))
    for used, sums in found:
        if sums is not None:
            out[:, used] += sums
    return out
