"""``rates report signadam``: SIGNADAM's experiments (sec. 7) and corollary rates (Cor. 5.4, Cor. 6.4, Rem. 6.5).

Setting (SIGNADAM)
    * Sec. 7 [given in words]: Gaussian class centres, Gaussian spread, separable data; NGD, SignGD and
      Adam minimise CE with eta_t = (t+2)^(-a), a chosen by the theorems (1/2 for NGD and SignGD, 2/3 for
      Adam, the best a of Cor. 5.4 / 6.4); Adam's stability constant eps is varied over small values. Claims:
      (1) SignGD and Adam favour the max-norm margin over the 2-norm margin, NGD the reverse; (2) SignGD and
      Adam iterates correlate with the max-norm max-margin solution W*_max, NGD with W*_2; (3) results are
      consistent for different small eps. The seed's d, n, eps values and plotted horizon were lost in the
      extraction: here the ``default`` preset (k = 3, d = 5, 10 per class, sigma = 0.3) on 10 data draws, eps in
      {0, 1e-8, 1e-6}, and one horizon for the whole figure, t = 1e6.
    * Cor. 5.4 (SignGD; NGD by Rem. 5.5) and Cor. 6.4 (Adam with eps = 0, Thm 6.3): margin-gap rates per
      regime of a (Adam also at a = 1); Rem. 5.5 / App. E: the same rate for NSD in other entry-wise norms
      (coordinate descent, l3, l1.5, l4); Rem. 6.5: constants that do not carry a factor k -- checked as the
      level of the relative gap at a fixed t at k in {3, 5, 10} with n fixed (a k-dependent constant moves the
      intercept, not the slope), against linear growth in k; the descent lemmas' loss monotone after t0.
    * Statements about the proofs' constants that no run can decide are rows with ``no verdict`` and the
      numbers rates.symbolic gives: SignGD's dimension-free thresholds against Adam's d-dependent t0 (Thm 5.3,
      Thm 6.3), Adam's log(1/rho) dependence on the initialisation constant (Rem. 6.5, Ass. 3.2). Rem. 6.5's best
      rates and the thresholds' dependence on d are checked against rates.symbolic's derivation (checks of the
      implementation, counted apart).

Algorithm
    Each claim has a :class:`~rates.output.claims.Protocol` (:func:`.protocols.protocols`, fixed by the mode's
    sizes before any run) and a decision rule that is a pure function of measured numbers (:mod:`.rules`:
    ``rate_part``, ``k_growth``, ``loss_monotone``, ``ordering``, ``own_ordering``, ``eps_agreement``,
    ``best_rate_check``, ``dimension_check``, ``constant_reading``), each with a negative control in the tests.
    All simulation goes through :func:`rates.studies.runner.simulate_study`; rates are judged by
    :func:`rates.studies.fitting.fit_group` (the comparator's verdict vocabulary flows through unchanged); Adam
    with eps > 0 is run and fitted but labelled outside Thm 6.3, whose hypothesis is eps = 0; sec. 7 (1) and
    (2) are one row each for eps = 0 and for eps > 0. Sec. 7 (2) is judged by the max-norm margin ratio (1
    exactly on the set of max-norm maximisers) and the cosine to the unique W*_2, never by a cosine to the LP's
    pick of a non-unique W*_max. An ordering must hold by more than ORDER_TOL at every checkpoint of [T/2, T]
    on a draw, and the draws decide by a sign test (:mod:`rates.studies.draws`); sec. 7 (3) compares the eps
    curves over [100, T] at the same T and reports the crossover after which they differ by more than EPS_AGREE.

Guarantee
    ``claims.{md,tex,json}`` with every claim above, its protocol and a verdict; figures: gap against t per a
    (NSD, Adam), SignGD's best rate against Adam's, margins and cosines in the max and 2 norms (draw 0), Adam
    at k = 3, 5, 10.

Modules
    :mod:`.protocols`  the protocols as data: the modes' sizes, constants and thresholds with their sources, and
                       one Protocol per claim (``PROTOCOLS``, ``QUICK_PROTOCOLS``)
    :mod:`.runs`       the runs: tasks per group of configurations and horizon, run specs, the k-sweep datasets
    :mod:`.rules`      the decision rules (pure functions; tests/test_signadam_negative_controls.py beside them)
    :mod:`.measures`   measurements from the runs: sec. 7's margins and cosines, crossovers, Ass. 3.2's rho
    :mod:`.rows`       the claims-table rows: fits and measures through the rules into row text
    :mod:`.figures`    the study's figures
    :mod:`.study`      :func:`run_signadam_study`: run, measure, decide, write

Reference
    SIGNADAM = Fan, Schmidt, Thrampoulidis (2025). Implicit Bias of SignGD and Adam on Multiclass Separable Data.
    arXiv:2502.04664: Thm 5.3, Cor. 5.4, Rem. 5.5, App. E, Thm 6.3, Cor. 6.4, Rem. 6.5, Ass. 3.2, sec. 7.
"""

from rates.studies.signadam.study import run_signadam_study

__all__ = ["run_signadam_study"]
