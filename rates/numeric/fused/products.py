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

from numba import njit

# The GEMM stepper multiplies here a stack of at most FEW_ROWS rows (runs x classes) on at least MIN_FEATURES
# features; otherwise it calls the BLAS GEMM. Measured, one thread, d = 784, n = 2000, the two products of a
# step: 10 rows 1.6-2.2 ms here against 2.5-3.2 ms, 20 rows 3.5-4.1 against 4.3-7.0, 30 rows even; at d = 100
# the logits' sums (over the d features) are too short for the tiles (70 against 42 us at 10 rows, n = 1000),
# at d = 150-256 even or better here.
FEW_ROWS = 24
MIN_FEATURES = 200
_REASSOCIATE = {"reassoc", "contract"}
_TILE = 6  # rows of B per tile


def worth_tiles(rows: int, d: int) -> bool:
    """Whether the GEMM stepper's products of ``rows`` stacked rows on ``d`` features run faster here than as
    BLAS GEMMs (:data:`FEW_ROWS`, :data:`MIN_FEATURES`)."""
    return rows <= FEW_ROWS and d >= MIN_FEATURES


@njit(cache=True, nogil=True)
def rows_times_rows(A, B, out):
    """``out = A @ B.T`` for ``A`` (m, K), ``B`` (N, K), ``out`` (m, N), all C-contiguous float64. Tiles of
    5 x 6 entries, the last rows in tiles of 2 and 1, the last ``N mod 6`` columns one entry at a time."""
    m, N = A.shape[0], B.shape[0]
    whole = N - N % _TILE
    for j in range(0, whole, _TILE):
        i = 0
        while i + 5 <= m:
            _five_by_six(A, B, out, i, j)
            i += 5
        while i + 2 <= m:
            _two_by_six(A, B, out, i, j)
            i += 2
        if i < m:
            _one_by_six(A, B, out, i, j)
    for j in range(whole, N):
        for i in range(m):
            out[i, j] = _dot(A, B, i, j)


@njit(cache=True, nogil=True, fastmath=_REASSOCIATE)
def _dot(A, B, i, j):
    total = 0.0
    for l in range(A.shape[1]):
        total += A[i, l] * B[j, l]
    return total


@njit(cache=True, nogil=True, fastmath=_REASSOCIATE)
def _five_by_six(A, B, out, i, j):
    """``out[i:i+5, j:j+6]``: 30 running sums held in registers over the whole inner dimension."""
    s00 = s01 = s02 = s03 = s04 = s05 = 0.0
    s10 = s11 = s12 = s13 = s14 = s15 = 0.0
    s20 = s21 = s22 = s23 = s24 = s25 = 0.0
    s30 = s31 = s32 = s33 = s34 = s35 = 0.0
    s40 = s41 = s42 = s43 = s44 = s45 = 0.0
    for l in range(A.shape[1]):
        a0, a1, a2, a3, a4 = A[i, l], A[i + 1, l], A[i + 2, l], A[i + 3, l], A[i + 4, l]
        b0, b1, b2, b3, b4, b5 = B[j, l], B[j + 1, l], B[j + 2, l], B[j + 3, l], B[j + 4, l], B[j + 5, l]
        s00 += a0 * b0
        s01 += a0 * b1
        s02 += a0 * b2
        s03 += a0 * b3
        s04 += a0 * b4
        s05 += a0 * b5
        s10 += a1 * b0
        s11 += a1 * b1
        s12 += a1 * b2
        s13 += a1 * b3
        s14 += a1 * b4
        s15 += a1 * b5
        s20 += a2 * b0
        s21 += a2 * b1
        s22 += a2 * b2
        s23 += a2 * b3
        s24 += a2 * b4
        s25 += a2 * b5
        s30 += a3 * b0
        s31 += a3 * b1
        s32 += a3 * b2
        s33 += a3 * b3
        s34 += a3 * b4
        s35 += a3 * b5
        s40 += a4 * b0
        s41 += a4 * b1
        s42 += a4 * b2
        s43 += a4 * b3
        s44 += a4 * b4
        s45 += a4 * b5
    row = out[i]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s00, s01, s02, s03, s04, s05
    row = out[i + 1]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s10, s11, s12, s13, s14, s15
    row = out[i + 2]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s20, s21, s22, s23, s24, s25
    row = out[i + 3]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s30, s31, s32, s33, s34, s35
    row = out[i + 4]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s40, s41, s42, s43, s44, s45


@njit(cache=True, nogil=True, fastmath=_REASSOCIATE)
def _two_by_six(A, B, out, i, j):
    """``out[i:i+2, j:j+6]``: 12 running sums held in registers over the whole inner dimension."""
    s00 = s01 = s02 = s03 = s04 = s05 = 0.0
    s10 = s11 = s12 = s13 = s14 = s15 = 0.0
    for l in range(A.shape[1]):
        a0, a1 = A[i, l], A[i + 1, l]
        b0, b1, b2, b3, b4, b5 = B[j, l], B[j + 1, l], B[j + 2, l], B[j + 3, l], B[j + 4, l], B[j + 5, l]
        s00 += a0 * b0
        s01 += a0 * b1
        s02 += a0 * b2
        s03 += a0 * b3
        s04 += a0 * b4
        s05 += a0 * b5
        s10 += a1 * b0
        s11 += a1 * b1
        s12 += a1 * b2
        s13 += a1 * b3
        s14 += a1 * b4
        s15 += a1 * b5
    row = out[i]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s00, s01, s02, s03, s04, s05
    row = out[i + 1]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s10, s11, s12, s13, s14, s15


@njit(cache=True, nogil=True, fastmath=_REASSOCIATE)
def _one_by_six(A, B, out, i, j):
    """``out[i:i+1, j:j+6]``: 6 running sums held in registers over the whole inner dimension."""
    s00 = s01 = s02 = s03 = s04 = s05 = 0.0
    for l in range(A.shape[1]):
        a0 = A[i, l]
        b0, b1, b2, b3, b4, b5 = B[j, l], B[j + 1, l], B[j + 2, l], B[j + 3, l], B[j + 4, l], B[j + 5, l]
        s00 += a0 * b0
        s01 += a0 * b1
        s02 += a0 * b2
        s03 += a0 * b3
        s04 += a0 * b4
        s05 += a0 * b5
    row = out[i]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s00, s01, s02, s03, s04, s05
