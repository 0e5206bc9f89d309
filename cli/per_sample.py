"""The per-sample (b = 1) family in ``rates predict`` and ``rates fit``: a limit direction, not a rate.

``predict`` and ``fit`` dispatch here (a few lines at the top of their handlers) for SignSGD / N-SGD /
Spectral-SGD with ``--batch 1`` (MINIBATCH Def. 4.8 / Thm 4.9); everything
theoretical lives in :mod:`rates.symbolic.theorems.per_sample`, the judge in :mod:`rates.judge.limit_direction`.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import numpy as np

# the fit record and its text live in the library, so tables and reports can use them too
from rates.judge.limit_direction import (  # noqa: F401
    STATUS,
    THEOREM,
    PerSampleRecord,
    fit_record,
    handles_runs,
    predict_on,
)
from rates.numeric.measures import SOLUTION_NOTES
from rates.symbolic.theorems.per_sample import (
    NOT_PREDICTED,
    OTHER_DATA,
    PER_SAMPLE_ALGORITHMS,
    SOURCE,
    covers,
    orthogonal_structure,
)

DIRECTIONS = {"signsgd": "D_c = 2 e_c - 1 (SignSGD: -sign(grad l_i) = (2 e_{y_i} - 1) e_{y_i}^T for every W)",
              "nsgd": "D_c = u_c = (e_c - 1/k)/||e_c - 1/k||_2 (N-SGD: -grad l_i/||grad l_i||_F = u_{y_i} e_{y_i}^T)",
              "spectral-sgd": "D_c = u_c = (e_c - 1/k)/||e_c - 1/k||_2 (Spectral-SGD with b = 1 is N-SGD: rank-one "
                              "gradients)"}


def handles_prediction(algo: str, batch: Optional[int], momentum: Optional[float], vr: bool) -> bool:
    """``rates predict`` goes here for SignSGD / N-SGD / Spectral-SGD with ``--batch 1`` (no momentum, no VR)."""
    return covers(algo.strip().lower(), batch, momentum or 0.0, vr)[0]


def _matrix_lines(matrix: np.ndarray, indent: str) -> list[str]:
    return [indent + "[ " + "  ".join(f"{v:+.4f}" for v in row) + " ]" for row in np.asarray(matrix)]


def _unique_text(flag) -> str:
    return {True: "yes", False: "no (tested): cosine is a property of the chosen W*"}.get(flag, "not tested")


def prediction_json(algo: str, a: str, data: Any = None) -> dict[str, Any]:
    """docs/design.md's ``predict --json`` keys, rate-free, plus a ``limit_direction`` object (null without data)."""
    name = algo.strip().lower()
    out: dict[str, Any] = {
        "family": "per-sample", "algorithm": name, "norm": PER_SAMPLE_ALGORITHMS[name], "a": a, "batch": 1,
        "regime": "a in (0, 1]: the limit does not depend on a", "rate": None, "best_a": None,
        "gap_to": "limit direction M/||M|| (the margin gap need not vanish)", "thresholds": {},
        "source": SOURCE.to_json(), "status": STATUS,
        "assumptions": ["orthogonal scale-skewed data: d = k, h_i = s_i e_{y_i}, s_i > 0 (Def. 4.8)",
                        "per-sample updates (b = 1) under random reshuffling from W_0 = 0, no momentum, no VR"],
        "bias_matrix": "M = sum_c (n_c/n) D_c e_c^T, " + DIRECTIONS[name],
        "not_predicted": list(NOT_PREDICTED), "other_data": OTHER_DATA,
        "theorem_applies": None, "limit_direction": None,
    }
    if data is not None:
        ok, why = orthogonal_structure(data)
        out["theorem_applies"] = ok
        out["data"] = data.name
        out["structure"] = why
        if ok:
            out["limit_direction"] = predict_on(data, name).to_json()
        else:
            out["verdict_if_run"] = "no-theorem"
    return out


def prediction_text(algo: str, a: str, data: Any = None) -> str:
    info = prediction_json(algo, a, data)
    name = info["algorithm"]
    lines = [
        f"algorithm   {name} (norm {info['norm']}), batch b = 1: per-sample family",
        f"predicts    a limit direction, not a rate: W_t/||W_t|| -> M/||M||   [{THEOREM}; {STATUS}]",
        f"M           = sum_c (n_c/n) D_c e_c^T, {DIRECTIONS[name]}   [rebuilt]",
        f"a           {a}: the limit is the same for every a in (0, 1] (sum eta = inf, eta -> 0)   [rebuilt]",
        f"assumes     {'; '.join(info['assumptions'])}",
    ]
    if data is None:
        lines.append("data        none given: --data orthogonal:counts=6/3/1,scales=... (or a preset such as "
                     "orthogonal-imbalanced) prints M/||M|| and its margins")
    elif not info["theorem_applies"]:
        lines.append(f"data        {data.name}: not orthogonal scale-skewed ({info['structure']})")
        lines.append("verdict     no-theorem for a b = 1 run here: Thm 4.9 needs orthogonal scale-skewed data; the "
                     "mini-batch theorems need gamma_eff(b) > 0 (docs/findings.md F2: the rebuilt one is positive only "
                     "at b = n)")
    else:
        limit = info["limit_direction"]
        lines.append(f"data        {data.name}: {info['structure']}")
        lines.append(f"M/||M||     (unit {info['norm']} norm; rows = classes, columns = features)   [rebuilt]")
        lines += _matrix_lines(np.array(limit["direction"]), " " * 12)
        lines.append("margins     computed from M/||M|| and the certified max margins (rates.numeric.margins)"
                     "   [computed]")
        lines.append(f"  {'norm':<10} {'margin(M)':>10} {'gamma':>10} {'gap limit':>10} {'rel. error':>10} "
                     f"{'cos(M,W*)':>10}  W* unique")
        for row in limit["margins"]:
            lines.append(f"  {row['norm']:<10} {row['margin_of_M']:>10.4f} {row['gamma']:>10.4f} "
                         f"{row['gap_limit']:>10.4f} "
                         f"{row['relative_margin_error_limit']:>10.4f} {row['cosine_M_to_W_star']:>10.4f}  "
                         f"{_unique_text(row['W_star_unique'])}")
        lines.append("  gap limit = gamma - margin(M/||M||): the per-sample margin gap tends to it, not to 0")
        lines.append(f"  W* (max)  : {SOLUTION_NOTES['max']}")
    lines += [f"not predicted  {item}" for item in NOT_PREDICTED]
    lines.append(f"other data     {OTHER_DATA}")
    lines.append(f"source      {THEOREM} [{STATUS}]")
    return "\n".join(lines)


def predict(algo: str, a: str, data_spec: Optional[str], as_json: bool) -> str:
    from rates.numeric.data import parse_data

    data = parse_data(data_spec) if data_spec is not None else None
    if as_json:
        return json.dumps(prediction_json(algo, a, data), indent=1, default=str)
    return prediction_text(algo, a, data)
