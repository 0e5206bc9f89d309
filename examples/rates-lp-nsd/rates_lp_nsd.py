"""A complete ``rates`` plug-in: one optimiser, the paper it comes from, and a theorem family for it.

Installed (``pip install examples/rates-lp-nsd``), it is found through the entry-point group ``rates.plugins``
(see ``pyproject.toml``); as a file it is loaded with ``rates --plugin examples/rates-lp-nsd/rates_lp_nsd.py``.
Either way importing this module registers everything, through the public API of ``rates.plugins`` only.

Setting: multiclass linear classifier, cross-entropy, separable data (docs/theory.md section 1).

Algorithm ``l3-gd``: normalised steepest descent in the entry-wise l3 norm,
``W_{t+1} = W_t - eta_t argmax_{||D||_3 <= 1} <grad L(W_t), D>``, ``eta_t = eta_0 (t+2)^(-a)``: a chain of
built-in pieces, so every engine (fused CPU kernels, torch, CUDA graphs, the mpmath reference) runs it.

Guarantee (family ``lp-nsd``): steepest descent in any norm converges in direction to the max-margin
classifier of that norm (GLSS2018 Sec. 3.2, given); the rate ``gamma - gamma(W_t) <= [alpha S_2 + C] / S_1`` is
the descent-lemma bound of docs/theory.md section 3 in the l3 geometry (rebuilt: the constants of
SIGNADAM Rem. 5.5 for entry-wise norms, ``alpha = 2 B^2 exp(2 B eta_0)``), so the family's status is
``rebuilt`` and its rate is derived from the template as for the built-in families.

Reference: Gunasekar, Lee, Soudry, Srebro (2018), "Characterizing Implicit Bias in Terms of Optimization
Geometry", ICML 2018, arXiv:1802.08246.
"""

from rates.plugins import (
    FAILS,
    HOLDS,
    STRUCTURE,
    Finding,
    Hypothesis,
    a_in_unit_interval,
    chain,
    full_batch,
    full_gradient,
    register_family,
    register_optimizer,
    register_reference,
    scale_by_schedule,
    separable,
    steepest_direction,
)

NAME = "l3-gd"
FAMILY = "lp-nsd"
SOURCE = ("GLSS2018", "Sec. 3.2 (limit direction); rate rebuilt")


def covers(config) -> bool:
    """Full-batch l3-gd without momentum: other options send the run to the built-in families."""
    return config.name == NAME and not (config.stochastic or config.momentum > 0 or config.vr or config.adam)


def template(config):
    """The bound in the shape of docs/theory.md section 3 (sympy is imported here, not at start-up)."""
    import sympy as sp

    from rates.plugins import BoundTemplate, NoiseTerm, PowerSumTerm, Source, alpha, curvature_alpha, gamma

    return BoundTemplate(
        family=FAMILY, title=f"l3 steepest descent ({config.norm})", source=Source(*SOURCE), status="rebuilt",
        gap_to="gamma",
        numerator=(PowerSumTerm(sp.Integer(2), alpha, "second-order noise of the steepest step"),),
        noise=(NoiseTerm(sp.Integer(1), alpha, "curvature: alpha eta_t"),),
        gamma_ref=gamma,
        assumptions=(f"data separable: gamma > 0 in the {config.norm} norm", "||h_i||_1 <= B", "a in (0, 1]"),
        constants={"alpha": f"2 B^2 exp(2 B eta_0) [rebuilt] = {curvature_alpha()}"},
    )


register_optimizer(NAME, chain(full_gradient(), steepest_direction("lp:3"), scale_by_schedule()))
register_reference("GLSS2018", ("Gunasekar", "Lee", "Soudry", "Srebro"), 2018,
                   "Characterizing Implicit Bias in Terms of Optimization Geometry", arxiv="1802.08246")
def steps_move_entries_by_at_most_eta(facts) -> Finding:
    """The curvature constant alpha assumes that a unit step changes no entry of W by more than 1:
    ||D||_max <= ||D|| holds for every entry-wise norm (docs/theory.md section 3, Lemma C.1 ordering)."""
    norm = facts.config.norm
    entrywise = norm in ("max", "sum", "frobenius") or norm.startswith("lp:")
    return Finding(HOLDS if entrywise else FAILS, f"norm {norm} is {'' if entrywise else 'not '}entry-wise")


_CITE = "GLSS2018 Sec. 3.2 [given]"
register_family(
    FAMILY,
    covers=covers,
    template=template,
    source=SOURCE,
    hypotheses=(
        full_batch(_CITE, "the bound is a full-batch one"),
        separable(_CITE),
        a_in_unit_interval(_CITE),
        Hypothesis("||D||_max <= ||D||", "a unit step moves every entry of W by at most 1",
                   "docs/theory.md section 3 [rebuilt]", STRUCTURE, steps_move_entries_by_at_most_eta),
    ),
    algorithms=NAME,
    statement="gamma - gamma(W_t) <= [alpha S_2 + gamma S_1(0, t_1) + log n] / S_1 for t > t_1",
    example={"name": NAME},
)
