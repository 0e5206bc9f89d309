"""``rates report flavors``: FLAVORS Fig. 1-3 at CPU size, and a table of its claims measured over seeds.

Paper: FLAVORS = N. Tsilivis, G. Vardi, J. Kempe (2024), "Flavors of Margin: Implicit Bias of Steepest Descent
in Homogeneous Neural Networks", arXiv:2410.22069.

Setting (FLAVORS, section 4 and App. D [given]; sizes [ours, CPU-sized]):

* Fig. 1 (section 4.1): teacher-student data (eq. 14), one-hidden-layer ReLU nets, exponential loss,
  full-batch GD, sign descent (SD) and coordinate descent (CD); margins gamma_1, gamma_2, gamma_inf (eq. 13).
* Fig. 1 init scales (App. D): alpha in {0.1, 0.01, 0.001}; the exponential loss of section 4.1 (logistic
  stays available through ``experiments(fig1_loss="logistic")``).
* Fig. 2 (section 4.2): a digits pair (sklearn 8x8, 3 vs 6, stand-in for MNIST), logistic loss (App. D), GD,
  SD and Adam (eps = 1e-8, betas (0.9, 0.99) as App. D); accuracies and gamma_1, gamma_2; long Adam runs at
  eps in {1e-8, 1e-6} for the second phase (L < 1e-7).
* Adam without momentum (sec. 4.2: beta1 = beta2 = 0, eps = 1e-8) on the Fig. 2 data; Fig. 6 (App. D): the Fig. 2
  comparison (GD, SD, Adam) on digits 2 vs 7.
* Fig. 3 (section 4.3): the same pair, output layer frozen, GD, Adam, eq. 1 per-layer spectral descent and
  Shampoo (Gupta et al. 2018) with and without accumulation; loss, spectral margin (eq. 15) and gamma_1.

Claims checked (rows of ``claims.*``; each names its source, gives mean +- sd [min, max] over seeds, and carries
its protocol from :data:`~rates.studies.flavors.protocols.PROTOCOLS`, fixed before the runs):

1. Thm 3.1: after L < l(0) each steepest descent's own soft margin is non-decreasing (O(eta) tolerance
   ``L * max_t rho_t``, see :mod:`rates.numeric.homogeneous.train`).
2. Fig. 1 / section 4.1 (i), exponential loss: SD ends with the largest gamma_1, GD gamma_2, CD gamma_inf; (ii) a
   smaller init scale alpha in {0.1, 0.01, 0.001} gives a larger final margin; (iii) / Fig. 5: the final margin does
   not order the test accuracies (Kendall tau).
3. Thm 3.4: late iterates approach KKT points of (MM): the alignment residual of eq. 62 (gradient averaged over the
   last steps) judged for decay against a floor over the last decade of log(1/L); Prop. B.6 (eq. 71), which on the
   runs reduces to gamma(t) >= gamma~(t0) [derived]; Lemma A.6 and Cor. A.8 on the same late-phase runs.
4. Section 4.2 (Fig. 2): margins rise from 100% train accuracy; SD reaches the larger gamma_1 and GD the larger
   gamma_2; Adam (eps = 1e-8), and Adam without momentum, raise gamma_1 like SD; Adam's second phase (gamma_1 falls,
   gamma_2 rises once L < 1e-7) at eps = 1e-8 and 1e-6; a larger eps raises gamma_1 further and starts the second
   phase later but more aggressively. Fig. 6: the Fig. 2 comparison on digits 2 vs 7.
5. Section 4.3 (Fig. 3): spectral descent and Shampoo with and without accumulation end with a larger spectral margin
   than GD and Adam. Rem. 3.2 (another margin may fall) is an existence statement no run can refute: a note of the
   table says whether these runs show it, and it is not counted as a claim.
6. Checks of the implementation, counted apart: (A2) homogeneity; App. C: Adam at beta1 = beta2 = eps = 0 is sign
   descent, Shampoo without accumulation is the polar factor (against torch.sign and an SVD).

Verdicts: every rule is a pure function of measured numbers in :mod:`rates.studies.flavors.rules` (so the test
suite runs each on a constructed trajectory where the claim is false). A comparison decided by less than 1 % is
open; an end-of-run comparison must come out the same way at the start of the last decade, at the end and one decade
past it (settled both ways); over seeds a claim is reproduced when every judged seed holds, not reproduced when a
majority fails, no verdict otherwise. Limit claims (Thm 3.4, Cor. A.8) are judged for a floor against decay. Runs
that diverged or never separated are counted and left out, never hidden. ``--quick`` runs are smoke runs, too
short and too few to refute or confirm anything: every row there is "no verdict (smoke run)".

Modules:

* :mod:`~rates.studies.flavors.protocols` -- the protocols as data: constants with their sources and one
  :class:`~rates.output.claims.Protocol` per claim row (:data:`~rates.studies.flavors.protocols.PROTOCOLS`);
* :mod:`~rates.studies.flavors.runs` -- the runs: the :class:`~rates.studies.flavors.runs.Experiment` records
  (learning rates, step counts, horizons), training one of them over all seeds, the probe of its duration;
* :mod:`~rates.studies.flavors.rules` -- the decision rules, pure functions from measured numbers to verdicts
  (their negative controls: ``tests/test_flavors_negative_controls.py``);
* :mod:`~rates.studies.flavors.measures` -- measurements from the histories (valid seeds, 100% accuracy onset)
  and the App. C identities;
* :mod:`~rates.studies.flavors.rows` -- the row text: the claims table from measures, rules and protocols;
* :mod:`~rates.studies.flavors.summary` -- mean +- sd [min, max] cells and the per-configuration table;
* :mod:`~rates.studies.flavors.figures` -- the figures;
* :mod:`~rates.studies.flavors.study` -- :func:`run_flavors_study`: run, measure, decide, write.
"""

from rates.studies.flavors.study import run_flavors_study

__all__ = ["run_flavors_study"]
