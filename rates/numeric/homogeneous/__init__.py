"""Homogeneous ReLU networks trained by steepest descent: the FLAVORS experiments as measured claims.

FLAVORS (Tsilivis, Vardi, Kempe), docs/theory.md section 6.

* :mod:`~rates.numeric.homogeneous.models` -- bias-free ReLU nets (L-homogeneous), batched over runs;
* :mod:`~rates.numeric.homogeneous.steepest` -- FLAVORS eq. 1 steps for l2 / l_inf / l1 / per-layer spectral, Adam
(eq. 75);
* :mod:`~rates.numeric.homogeneous.measures` -- soft margin (eq. 5), margins of eq. 13 and 15, accuracies, homogeneity;
* :mod:`~rates.numeric.homogeneous.data` -- teacher-student (eq. 14) and a pair of sklearn 8x8 digits;
* :mod:`~rates.numeric.homogeneous.train` -- the loop with log-spaced checkpoints over several seeds at once;
* :mod:`~rates.studies.flavors` -- ``rates report flavors``: Fig. 1-3 at CPU size and the claims table.
"""
