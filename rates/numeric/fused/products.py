"""The product ``A B^T`` of a few rows ``A`` with many rows ``B``, without packing ``B``: the GEMM stepper's two
products (:mod:`rates.numeric.gemm`) when few runs are stacked.

Why not the BLAS GEMM there: a GEMM copies ("packs") both operands into blocks before multiplying, which pays when
every entry is used many times. With one configuration of k = 10 classes the logits ``W X^T`` multiply a 10-row
``W`` by all n samples, so each of the d n entries of the samples is used 10 times and packing them costs as much
as the multiply-adds: OpenBLAS (one thread) reached 17-23 GFLOP/s at k = 10, d = 784, n = 2000, against ~50 with
64 configurations stacked (640 rows). Here the samples are read where they lie, once per product, in tiles of
6 rows against 5 rows of ``A``; the 30 running sums of a tile stay in registers over the whole inner dimension.
Measured at that shape, one thread: the two products of a step 1.6-2.2 ms against OpenBLAS's 2.5-3.2 ms;
at 30 rows they are even; :func:`worth_tiles` is where the stepper switches (docs/benchmarks.md, "Data size").

Rounding: every entry is one running sum over the inner dimension, which LLVM splits across the lanes of its
vectors (reassociation, and multiply-adds fused: the ``fastmath`` flags ``reassoc`` and ``contract`` only; no
assumption about infinities, NaNs or signed zeros). That is a sum of the same terms in another order, with an
error below ``(count + 2) eps sum_j |a_j b_j|``, the bound the GEMM stepper's exact-sign argument uses for a GEMM
(:mod:`rates.numeric.gemm`). The order depends on the entry's tile (5, 2 or 1 rows), so a run's sums can round
differently by where its rows fall among the stacked runs, as in a GEMM; a given call is deterministic.
"""

from __future__ import annotations

# compiled in kernels.py, beside the SignGD loop that calls them (one file per compiled entry point)
from rates.numeric.fused.kernels import rows_times_rows  # noqa: F401

# The GEMM stepper multiplies here a stack of at most FEW_ROWS rows (runs x classes) on at least MIN_FEATURES
# features; otherwise it calls the BLAS GEMM. Measured, one thread, d = 784, n = 2000, the two products of a
# step: 10 rows 1.6-2.2 ms here against 2.5-3.2 ms, 20 rows 3.5-4.1 against 4.3-7.0, 30 rows even; at d = 100
# the logits' sums (over the d features) are too short for the tiles (70 against 42 us at 10 rows, n = 1000),
# at d = 150-256 even or better here.
FEW_ROWS = 24
MIN_FEATURES = 200


def worth_tiles(rows: int, d: int) -> bool:
    """Whether the GEMM stepper's products of ``rows`` stacked rows on ``d`` features run faster here than as
    BLAS GEMMs (:data:`FEW_ROWS`, :data:`MIN_FEATURES`)."""
    return rows <= FEW_ROWS and d >= MIN_FEATURES


# ... and the gradient's product alone (coefficients (rows x n) times the samples, a sum over the n samples) for at
# most FEW_GRADIENT_ROWS rows from GRADIENT_TILE_WORK = n d on: one thread, 10 rows, OpenBLAS against the tiles (us):
# d = 64, n = 1797 112 / 76, n = 2000 120 / 75; d = 100, n = 2000 189 / 132; even at d = 100, n = 1000 (56 / 57) and
# d = 64, n = 1000 (36 / 38), below it OpenBLAS (d = 32, n = 500: 8 / 9); at 20 rows the two were within 15 %.
FEW_GRADIENT_ROWS = 12
GRADIENT_TILE_WORK = 100_000


def worth_gradient_tiles(rows: int, d: int, n: int) -> bool:
    """Whether the gradient's product (``rows`` stacked coefficient rows over ``n`` samples of ``d`` features) runs
    faster in the tiles than as a BLAS GEMM: where both products do (:func:`worth_tiles`), and for a few rows on
    many samples (:data:`FEW_GRADIENT_ROWS`, :data:`GRADIENT_TILE_WORK`)."""
    return worth_tiles(rows, d) or (rows <= FEW_GRADIENT_ROWS and n * d >= GRADIENT_TILE_WORK)
