"""The VR deviation as step noise (rates.symbolic.theorems.variance_reduction.vr_step_noise) on real engine runs.

Independent expectations: the drift ``||W_t - W~||_max`` is measured on the engine's iterates with the snapshot taken
at every epoch start (m = n/b steps), the VR signal's error against the full gradient computed without cancellation
(proofs.crossentropy); the bounds are MINIBATCH F.1's ``m eta_{t-m}`` and Lemma C.13 + C.9. SignSGD moves every
entry by exactly eta_s per step once the signs settle, so its drift is ``sum`` of the epoch's steps so far: the
ratio to ``m eta_{t-m}`` is (m-1)/m at a = 1 up to rounding of eta_{t-m} vs eta_{t-m+1}.
"""

from __future__ import annotations

import numpy as np
import pytest

from proofs.stochastic import vr_step_record
from rates.numeric.data import parse_data

STEPS = 1200


@pytest.fixture(scope="module")
def preset():
    ds = parse_data("minibatch", seed=0)
    return np.asarray(ds.H), np.asarray(ds.y), ds.k


@pytest.mark.parametrize("algo, eta0", [("vr-signsgd", 0.2), ("vr-nsgd", 1.0), ("vr-spectral-sgd", 1.0)])
def test_the_epoch_drift_and_the_vr_error_stay_below_their_step_local_bounds(preset, algo, eta0):
    H, y, k = preset
    record = vr_step_record(H, y, k, algo, "1/2", eta0, 16, 0, STEPS)
    drift = record["delta"] / record["dbar"]
    assert drift.max() <= 1.0
    assert (record["error"] <= record["noise"]).all()
    if algo == "vr-signsgd":  # every entry keeps its sign: the drift is the epoch's steps, (m - 1)/m of the bound
        assert drift[STEPS // 2:].max() == pytest.approx(0.75, abs=0.01)


def test_the_steps_own_size_understates_the_drift(preset):
    # eta_t in place of the epoch's m eta_{t-m}: the SignSGD drift is about (m - 1) eta_t, three times it
    H, y, k = preset
    record = vr_step_record(H, y, k, "vr-signsgd", "1", 0.2, 16, 0, STEPS)
    own = record["dbar"] / 4 * ((np.arange(STEPS) - 4).clip(0) + 2) / (np.arange(STEPS) + 2)
    assert (record["delta"] / own).max() > 2.5


def test_a_snapshot_two_epochs_old_breaks_the_drift_bound(preset):
    # the bound rests on W~ being refreshed every m steps: a period of 2m lets the drift reach (2m - 1) eta
    H, y, k = preset
    record = vr_step_record(H, y, k, "vr-signsgd", "1/2", 0.2, 16, 0, STEPS, snapshot_every=8)
    assert (record["delta"] / record["dbar"]).max() > 1.5


def test_plain_mini_batches_break_the_vr_error_bound(preset):
    # without the snapshot's correction the batch error does not shrink with the step size: a mismatched algorithm
    H, y, k = preset
    record = vr_step_record(H, y, k, "signsgd", "1", 0.2, 16, 0, STEPS, vr=False)
    assert (record["error"] / record["noise"]).max() > 1.0
