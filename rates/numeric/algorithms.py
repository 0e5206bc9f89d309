"""Named algorithms resolved against a run's options: which norm, which pieces, which theorem family.

docs/theory.md section 2 (MINIBATCH section 3.1, SIGNADAM eq. 3-5): seventeen names are compositions of a
norm, a signal (full / mini-batch / variance reduced), optional momentum, or Adam, each defined in one line
of :mod:`rates.numeric.optim.alias`. This module is the vocabulary shared by ``rates predict`` (which theorem
family applies) and ``rates run`` (which composition to build); it validates the combination of a name with
``--norm``, ``--batch``, ``--momentum`` and ``--vr`` and never clamps a value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from rates.errors import InputError
from rates.norms import parse_norm
from rates.numeric.optim.alias import OPTIMISERS, Composition
from rates.numeric.run_parameters import check

DEFAULT_MOMENTUM = 0.9

# name -> Composition (norm, source, momentum | Adam): the table of rates.numeric.optim.alias itself, so a
# name added there (a line, or rates.numeric.optim.alias.register_optimiser) is known here at once.
ALGORITHMS: dict[str, Composition] = OPTIMISERS


@dataclass(frozen=True)
class AlgorithmConfig:
    """A fully resolved algorithm.

    ``batch=None`` is full batch unless ``stochastic``; for a stochastic algorithm it means "b left
    symbolic" (allowed in ``rates predict``, refused by ``rates run``).
    ``family`` names the theorem family whose declaration covers this configuration
    (:func:`rates.symbolic.theorems.registry.family_of`; ``"none"`` if none does): ``nsd`` (SIGNADAM Thm 5.3),
    ``adam`` (SIGNADAM Thm 6.3), ``minibatch`` (MINIBATCH Thm 4.1), ``momentum`` (Thm 4.3), ``vr`` (Thm 4.6),
    ``per-sample`` (Thm 4.9, b = 1). Whether its hypotheses hold is the gate's business, not this class's.
    """

    name: str
    norm: str
    family: str
    batch: Optional[int]
    n: Optional[int]
    momentum: float
    vr: bool
    adam: bool
    stochastic: bool = False  # steps use a mini-batch b < n (or a stochastic algorithm with b left open)


def resolve_algorithm(
    name: str,
    norm: Optional[str] = None,
    n: Optional[int] = None,
    batch: Optional[int] = None,
    momentum: Optional[float] = None,
    vr: bool = False,
) -> AlgorithmConfig:
    """Validate a named algorithm plus options and decide its theorem family.

    Raises :class:`InputError` naming the option: unknown ``--algo`` or ``--norm``; ``--batch`` outside
    [1, n] or not dividing n (random reshuffling splits each epoch into n/b disjoint batches); ``--momentum``
    outside [0, 1); ``--norm`` that contradicts the algorithm's own norm.
    """
    key = name.strip().lower()
    if key not in ALGORITHMS:
        raise InputError("algo", f"unknown algorithm {name!r}; known: {', '.join(sorted(ALGORITHMS))}")
    spec = ALGORITHMS[key]

    if spec.norm is None:
        if norm is None:
            raise InputError("norm", f"algorithm {key!r} needs --norm "
                                     "(e.g. max, sum, frobenius, spectral, nuclear, lp:3, schatten:3)")
        resolved_norm = parse_norm(norm, option="norm").name
    else:
        resolved_norm = parse_norm(spec.norm).name
        if norm is not None and parse_norm(norm, option="norm").name != resolved_norm:
            raise InputError("norm", f"algorithm {key!r} uses the {resolved_norm} norm, got --norm {norm}; "
                                     "use --algo nsd for another norm")
    if spec.adam and resolved_norm != "max":
        raise InputError("norm", "adam is covered by SIGNADAM Thm 6.3 for the max-norm only")

    if n is not None and n < 1:
        raise InputError("n", f"must be a positive integer, got {n}")
    if batch is not None:
        check("batch", batch)
        if n is not None and (batch > n or n % batch != 0):
            raise InputError("batch", f"must divide n={n} (random reshuffling uses n/b disjoint batches), got {batch}")

    if momentum is None:
        beta = DEFAULT_MOMENTUM if spec.momentum else 0.0
    else:
        beta = check("momentum", float(momentum))
    if spec.adam and momentum is not None:
        raise InputError("momentum", "adam has its own beta1/beta2; --momentum applies to steepest-descent algorithms")

    use_vr = bool(vr or spec.vr)
    stochastic = spec.stochastic or (batch is not None and (n is None or batch < n))
    if spec.adam and use_vr:
        raise InputError("vr", "variance reduction is not defined for adam here (no theorem covers it)")
    if use_vr and not stochastic and batch is not None:
        raise InputError("vr", "variance reduction needs mini-batches (b < n)")
    from rates.symbolic.theorems.coverage import family_name  # the registry's predicates, without sympy (rates run)

    config = AlgorithmConfig(key, resolved_norm, "none", batch, n, beta, use_vr, spec.adam, stochastic)
    return replace(config, family=family_name(config) or "none")
