"""The spectral max margin on the span of a few samples: a small semidefinite program per round.

Where the optimal dual matrix ``Z(lambda*)`` is rank-deficient, the optimal ``W`` is not its polar factor alone
(``W = U_r V_r^T + U_0 X V_0^T`` with an unknown block ``X`` on the null space), and the smoothed Newton steps of
:mod:`rates.numeric.simplex_dual` stall. This module solves the max margin exactly, by interior point, on the rows
of a set ``I`` of samples only, in the span of those samples:

* a margin ``<W, (e_{y_i} - e_c) h_i^T>`` sees W only through ``W Q`` (Q an orthonormal basis of the span of the
  ``h_i``, i in I) and only through ``P^T W`` (P an orthonormal basis of the ``k - 1`` directions orthogonal to the
  all-ones vector); ``||P^T W Q||_2 <= ||W||_2``, so the reduced program in ``X = P^T W Q`` ((k - 1) x s) has the
  max margin of the rows of I, and ``W = P X Q^T`` attains it (the representer argument);
* its dual ``min_{lambda} ||Z||_*``, ``Z = sum lambda_ic P^T (e_{y_i} - e_c) (Q^T h_i)^T``, is written with
  ``||Z||_* = min_{Y > 0} (tr Y + tr Z^T Y^{-1} Z) / 2`` (attained at ``Y = (Z Z^T)^{1/2}``) and one Schur
  complement per column of Z: ``[[Y, z_j], [z_j^T, t_j]] >= 0``, i.e. ``s`` semidefinite cones of size k, never
  one of size ``k + s`` (a rank-deficient Z makes Y singular, which interior points approach without trouble);
* the multipliers of those cones are ``[[P_j, v_j], [v_j^T, 1/2]]`` with ``sum_j P_j = I / 2``; their psd-ness
  gives ``sum_j 4 v_j v_j^T <= I``, so ``X = -2 [v_j]`` has spectral norm at most 1 and margins at least the
  program's value: the primal ``W`` comes with the dual solve.

The rows outside I are checked by the caller (constraint generation): every proposal is scored on all rows
(``W``: a lower bound) and on the original data (``lambda``, zero outside I, in the full simplex: an upper bound).
"""

from __future__ import annotations

import math

import numpy as np

RANK_TOLERANCE = 1e-12  # singular values of the samples below this fraction of the largest span no direction


def solve_on_rows(H: np.ndarray, y: np.ndarray, k: int, rows: np.ndarray,
                  options: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(W, lambda)``: W (k x d) and weights on ``rows`` (indices into the rows (i, c != y_i), order i then c),
    from one Clarabel solve of the reduced dual program (built for Clarabel directly: a modelling layer spends
    ~50 ms per cone here); ``options`` are Clarabel settings."""
    import clarabel
    from scipy import sparse

    samples, sample_of_row = np.unique(rows // (k - 1), return_inverse=True)
    H_I, y_I = H[samples], y[samples]
    U, singular, _ = np.linalg.svd(H_I.T, full_matrices=False)
    Q = U[:, singular > RANK_TOLERANCE * singular[0]]
    G = H_I @ Q  # the samples in the basis Q: count x rank
    P = np.linalg.qr(np.eye(k) - 1.0 / k)[0][:, :k - 1]
    rank = G.shape[1]
    position = rows % (k - 1)
    labels = y_I[sample_of_row]
    wrong = position + (position >= labels)  # the class c of each row (c != y_i, in increasing order)
    m, q = rows.size, k - 1
    coefficients = P[labels] - P[wrong]  # (m, q): row r's direction P^T (e_{y_i} - e_c)
    # z_j = sum_r lambda_r coefficients_r G[i_r, j]: the (q, m) block of column j is coefficients^T * G[i_r, j]
    # unknowns: lambda (m), Y's upper triangle (q (q + 1) / 2, row-major), t (rank)
    upper_a, upper_b = np.triu_indices(q)
    n_y = upper_a.size
    n_x = m + n_y + rank
    size = q + 1
    n_svec = size * (size + 1) // 2
    # Clarabel's PSD triangle: the upper triangle column by column, off-diagonal entries times sqrt(2)
    svec_a, svec_b = [], []
    for column in range(size):
        for row in range(column + 1):
            svec_a.append(row)
            svec_b.append(column)
    svec_a, svec_b = np.array(svec_a), np.array(svec_b)
    root2 = math.sqrt(2.0)
    y_index = {(a, b): m + index for index, (a, b) in enumerate(zip(upper_a, upper_b))}
    # the fixed part of every cone: Y and t_j; the lambda part: entries (p, q) = z_j[p]
    entries_r, entries_c, entries_v = [], [], []
    z_slots = []
    for slot, (a, b) in enumerate(zip(svec_a, svec_b)):
        if b < q:
            entries_r.append(slot)
            entries_c.append(y_index[(a, b)])
            entries_v.append(-1.0 if a == b else -root2)
        elif a < q:
            z_slots.append(slot)
    fixed_r, fixed_c, fixed_v = np.array(entries_r), np.array(entries_c), np.array(entries_v)
    z_slots = np.array(z_slots)
    t_slot = n_svec - 1
    blocks = []
    weights_per_row = coefficients.T  # (q, m)
    for j in range(rank):
        block_r = [fixed_r, np.repeat(z_slots, m), [t_slot]]
        block_c = [fixed_c, np.tile(np.arange(m), q), [m + n_y + j]]
        block_v = [fixed_v, (-root2 * weights_per_row * G[sample_of_row, j][None, :]).reshape(-1), [-1.0]]
        blocks.append(sparse.csc_matrix((np.concatenate(block_v), (np.concatenate(block_r), np.concatenate(block_c))),
                                        shape=(n_svec, n_x)))
    simplex = sparse.csc_matrix((np.ones(m), (np.zeros(m, dtype=int), np.arange(m))), shape=(1, n_x))
    nonnegative = sparse.csc_matrix((-np.ones(m), (np.arange(m), np.arange(m))), shape=(m, n_x))
    A = sparse.vstack([simplex, nonnegative] + blocks, format="csc")
    b = np.zeros(A.shape[0])
    b[0] = 1.0
    c = np.zeros(n_x)
    c[[y_index[(a, a)] for a in range(q)]] = 0.5
    c[m + n_y:] = 0.5
    cones = [clarabel.ZeroConeT(1), clarabel.NonnegativeConeT(m)] + [clarabel.PSDTriangleConeT(size)] * rank
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    for key, value in options.items():
        setattr(settings, key, value)
    solution = clarabel.DefaultSolver(sparse.csc_matrix((n_x, n_x)), c, A, b, cones, settings).solve()
    x, z = np.asarray(solution.x), np.asarray(solution.z)
    duals = z[1 + m:].reshape(rank, n_svec)[:, z_slots] / root2  # v_j: the (p, q) entries of each cone's multiplier
    X = -2.0 * duals.T  # (q, rank)
    return P @ X @ Q.T, np.clip(x[:m], 0.0, None)
