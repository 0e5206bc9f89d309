"""The claims rows' hook for the theorem instantiated on a run (:mod:`rates.numeric.certificate`): what a study
writes to claims.json beside a rate row's fit -- per run the onsets ``s0``, ``s1``, the rebuilt ``t_d`` and the
certificate ``gap(t) <= B(t)`` (docs/theory.md section 3b)."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np


def claim_values(record: Any) -> Optional[dict[str, Any]]:
    """The certificate of a claims row's fit record, for its ``values`` in claims.json: per run ``s0``, ``s1``, the
    rebuilt ``t_d`` (each run's own data), ``B`` and the gap at the horizon and the verdict; where the chain does not
    cover the run, ``applies`` false and why."""
    from rates.numeric.certificate import certify
    from rates.studies.fitting import descent_start_of

    runs = getattr(record, "runs", None) or []
    if not runs:
        return None
    prediction = getattr(record, "prediction", None)
    out = []
    for run in runs:
        cert = certify(run)
        if not cert.applies:
            return {"applies": False, "why": cert.why, "source": cert.source}
        last = cert.bound[-1] if len(cert.bound) else math.nan
        start = descent_start_of([run], prediction)  # each data draw's own constants
        out.append({"seed": run.config.seed, "data_seed": run.config.recorded_data_seed, "s0": cert.s0,
                    "s1": cert.s1, "t_d": None if start is None else start.to_json(), "onsets": cert.onsets,
                    "certified": cert.certified, "broken": cert.broken,
                    "bound_at_horizon": None if not np.isfinite(last) else float(last),
                    "gap_at_horizon": float(cert.gap[-1]) if len(cert.gap) else None,
                    "worst_gap_over_bound": cert.worst_ratio, "verdict": cert.verdict_text()})
    return {"applies": True, "source": cert.source, "runs": out}
