"""The claims rows' hook for the theorem instantiated on a run (:mod:`rates.numeric.certificate`): what a study
writes to claims.json beside a rate row's fit -- per run the onsets ``s0``, ``s1``, the rebuilt ``t_d`` and the
certificate ``gap(t) <= B(t)`` (docs/theory.md section 3b) -- and the certified onset that lets a rate row decide
on a window past it as on one past ``t_d`` (:func:`certified_onset`).

Each run is certified once (:func:`certificate_of`; the stepper re-runs the whole trajectory), so the claims row
and the onset gate read the same certificate.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

# run id -> (a weak reference to the run, its certificate): one stepper pass per run object
_CERTIFICATES: dict[int, tuple[Any, Any]] = {}


def certificate_of(run: Any) -> Any:
    """:func:`rates.numeric.certificate.certify` of ``run`` with its defaults, computed once per run object."""
    from rates.numeric.certificate import certify

    key = id(run)
    hit = _CERTIFICATES.get(key)
    if hit is not None and hit[0]() is run:
        return hit[1]
    cert = certify(run)
    _CERTIFICATES[key] = (weakref.ref(run, lambda _ref, key=key: _CERTIFICATES.pop(key, None)), cert)
    return cert


def certified_already(run: Any) -> bool:
    """Whether :func:`certificate_of` has run the stepper on ``run`` (a row may then show its ``s0`` for free)."""
    hit = _CERTIFICATES.get(id(run))
    return hit is not None and hit[0]() is run


@dataclass(frozen=True)
class CertifiedOnset:
    """The step from which every run of a configuration was certified to meet the proof's chain, or why none."""

    s0: Optional[int]  # the largest s0 over the runs; None where a run is not certified
    why: str  # why there is none ("" where s0 is set)
    source: str  # the chain's source (for Adam: the chain with the measured pairing, never c_adam)

    def text(self) -> str:
        if self.s0 is None:
            return f"no certified onset ({self.why})"
        return f"certified onset s0 = {self.s0} [{self.source}; every fact of the chain checked at every step]"


def certified_onset(runs: Sequence[Any], certificates: Optional[Sequence[Any]] = None) -> CertifiedOnset:
    """The largest ``s0`` over ``runs`` when the chain applies to every run and its certificate is certified and not
    broken (a lemma failing anywhere, ``gap > B`` after the anchor, or an engine that ran something else); None,
    with the first run's reason, otherwise -- then the rebuilt ``t_d`` alone gates the row. ``certificates``
    (one per run) replaces :func:`certificate_of` (the negative controls pass perturbed ones)."""
    runs = list(runs)
    if not runs:
        return CertifiedOnset(None, "no runs", "")
    certs = list(certificates) if certificates is not None else [certificate_of(run) for run in runs]
    source = next((c.source for c in certs if c.source), "")
    for cert in certs:
        if not cert.applies:
            return CertifiedOnset(None, f"the chain is not instantiated: {cert.why}", cert.source)
        if cert.broken or cert.certified is False:
            return CertifiedOnset(None, f"the certificate does not hold: {cert.verdict_text()}", cert.source)
        if cert.s0 is None or not cert.certified:
            return CertifiedOnset(None, cert.why or "no step anchors the chain before the horizon", cert.source)
    return CertifiedOnset(max(int(c.s0) for c in certs), "", source)


def claim_values(record: Any) -> Optional[dict[str, Any]]:
    """The certificate of a claims row's fit record, for its ``values`` in claims.json: per run ``s0``, ``s1``, the
    rebuilt ``t_d`` (each run's own data), ``B`` and the gap at the horizon and the verdict; where the chain does not
    cover the run, ``applies`` false and why."""
    from rates.studies.fitting import descent_start_of

    runs = getattr(record, "runs", None) or []
    if not runs:
        return None
    prediction = getattr(record, "prediction", None)
    out = []
    for run in runs:
        cert = certificate_of(run)
        if not cert.applies:
            return {"applies": False, "why": cert.why, "source": cert.source}
        last = cert.bound[-1] if len(cert.bound) else math.nan
        start = descent_start_of([run], prediction)  # each data draw's own constants
        out.append({"seed": run.config.seed, "data_seed": run.config.recorded_data_seed, "s0": cert.s0,
                    "s1": cert.s1, "t_d": None if start is None else start.to_json(), "onsets": cert.onsets,
                    "certified": cert.certified, "broken": cert.broken,
                    "bound_at_horizon": None if not np.isfinite(last) else float(last),
                    # B's numerator at the horizon, term by term (Adam's 'pairing deficit' among them)
                    "bound_terms_at_horizon": ({name: float(values[-1]) for name, values in cert.terms.items()}
                                               if cert.terms and np.isfinite(last) else None),
                    "measured_pairing": cert.measured_pairing,
                    "gap_at_horizon": float(cert.gap[-1]) if len(cert.gap) else None,
                    "worst_gap_over_bound": cert.worst_ratio, "verdict": cert.verdict_text()})
    return {"applies": True, "source": cert.source, "runs": out}
