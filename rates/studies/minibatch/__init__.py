"""``rates report minibatch``: MINIBATCH's experiments (sec. 5 Fig. 1, App. J Fig. 2, App. K) and theorems.

Paper
    MINIBATCH = Li, Tang, Zou (2026), "The Implicit Bias of Steepest Descent with Mini-batch Stochastic
    Gradient", arXiv:2602.11557 (:data:`rates.symbolic.papers.MINIBATCH`).

Setting (MINIBATCH)
    * Sec. 5 / Fig. 1 / App. K [given in words]: k classes with equal samples per class, i.i.d. Gaussian
      features, separable; SignSGD (max norm), N-SGD (l2) and Spectral-SGD (spectral) from W_0 = 0 with
      eta_t = eta_0 (t+2)^(-a); a sweep of batch sizes and momentum beta, with and without variance
      reduction; measures: relative error to the max margin and cosine similarity to the max-margin
      solution in the max, l2 and spectral norms. The seed's numbers (n, d, k, sigma, steps, a, eta_0) were
      lost in the text extraction: here the ``minibatch`` preset (k = 4, d = 8, 16 per class, n = 64,
      sigma = 0.5; small so that the 84-configuration grid runs on 2 CPU cores), batch sizes
      {1, 4, 16, 64 = n}, beta in {0, 0.5, 0.9, 0.99}, a = 1/2, eta_0 = 1 (l2, spectral) and 0.2 (max norm:
      a sign step has Frobenius length sqrt(kd) = 5.7 times eta, the seed lowers it "to ensure stability").
    * App. J / Fig. 2 / Thm 4.9 [given in words]: orthogonal scale-skewed data (multinomial class counts,
      class-specific uniform scale ranges), per-sample (b = 1) SignSGD and N-SGD (and Spectral-SGD, which
      equals N-SGD at b = 1); measures: relative margin error in three norms, cosine to the bias direction
      M (Def. 4.8) and to the max-margin solution. Here the ``orthogonal-random`` preset (k = 4, n = 40) and
      the ``orthogonal-imbalanced`` preset (counts 6/3/1, scales 1/0.5/2), plus a twin of the first with the
      same class counts and new per-sample scales (Thm 4.9: the limit does not depend on the scales).

Algorithm
    All simulation goes through :func:`rates.studies.runner.run_tasks`. Every row has a protocol
    (:data:`.protocols.PROTOCOLS`: quantity, window, rule with its thresholds, seeds, the alternative it rules out),
    fixed before the run and printed with the row. Rate claims (Thm 4.1 / Cor. 4.2 at b = n, Thm 4.3 / Cor. 4.5 with
    momentum at a (b, beta) where gamma_eff(beta, b) > 0 and an eta_0 at which the momentum buffer follows the
    gradient (:func:`.runs.momentum_follow_time`), Thm 4.6 / Cor. 4.7 with VR, without and with momentum, each at a
    in {3/10, 1/2, 3/4, 1}) are judged by :func:`rates.studies.fitting.fit_group` on the gap the theorem bounds,
    ``gamma_eff - gamma(W_t)`` where it states gamma_eff (the theorem template's value,
    :func:`.measures.fitted_target`). Where the margin passes gamma_eff for good the bounded gap is <= 0 from there
    (below the bound for every constant, which does not test the rate), so the rate is fitted on the checkpoints
    before the crossing, and a stretch too short for a window leaves the row open. A 'violated' gap that has not
    started to decay in a run ending before t0 is a plateau (no verdict), and finding (i) "bound holds" decides the
    row (its claim is the O(.) bound) where whether the stated rate is attained is still open. Qualitative claims of
    Fig. 1 and Fig. 2 by explicit criteria on the final relative errors and cosines, printed next to each verdict. A
    Fig. 1 claim about where a run ends up is decided only by runs whose error has settled: "converges" is refuted
    only by an error that has stalled (changed by less than x0.9 over the last decade, beyond the trend's noise:
    TREND_Z standard errors from the checkpoint scatter) above 5 %, "fails" only by a run that converged; an error
    still falling, or a trend within its noise of x0.9, is "no verdict", with the horizon at which its last decade's
    fall would reach 5 %; the "converges" claims of beta = 0.99 and VR read b = 1 at a ten times longer horizon.
    "Slower" claims (momentum, VR) compare the times from which the errors stay below LEVEL. Over data draws, a
    claim is read as a statement about the typical draw and decided by a sign test on the draws that decide
    (:mod:`rates.studies.draws`); a claim with two halves (beta = 0.5 improves; discrepancies remain) is two rows.
    Claims about the predicted rates (Cor. 4.5 at b = n, dimension-free bounds, Thm 4.1 at b < n) are decided on the
    rebuilt theorems (:mod:`rates.symbolic.theorems`); Lemma H.1 is an identity of the code, a check of the
    implementation.

Guarantee
    ``claims.{md,tex,json}`` lists every claim of the paper with ``reproduced`` / ``not reproduced`` /
    ``no verdict``; figures mirror Fig. 1 (per algorithm: error and cosine against t for each b, each beta,
    VR against no VR), Fig. 2 (per-sample panels) and the rate fits; trajectories are saved.

Reference
    MINIBATCH Thm 4.1, 4.3, 4.6, 4.9, Cor. 4.2, 4.5, 4.7, Def. 4.8, sec. 5, App. J, App. K.

Modules
    :mod:`.protocols` the protocols as data: algorithms, sweeps, thresholds with their sources, the sizes
    (``FULL``, ``QUICK``) and one Protocol per claim; :mod:`.runs` the tasks (Fig. 1, rates, per-sample),
    their step counts, eta_0 and planned horizons; :mod:`.measures` what is read off the results
    (``Fig1Config``, the rate records, the per-sample measures); :mod:`.rules` the decision rules, pure
    functions from measurements to verdict parts (their negative controls are
    tests/test_minibatch_negative_controls.py); :mod:`.rows` the claims-table rows; :mod:`.figures` the
    figures; :mod:`.study` :func:`run_minibatch_study`, which runs, measures, decides and writes.
"""

from rates.studies.minibatch.study import run_minibatch_study

__all__ = ["run_minibatch_study"]
