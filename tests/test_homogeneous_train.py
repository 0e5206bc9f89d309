"""The training loop on a tiny network: FLAVORS Thm 3.1's monotonicity up to the stated O(eta) tolerance,
separation, checkpoints, and the data generators' guarantees."""

import numpy as np
import pytest
import torch

from rates.errors import InputError, NotSeparableError
from rates.numeric.homogeneous.data import check_homogeneous_separable, digits_pair, parse_data_spec, teacher_student
from rates.numeric.homogeneous.measures import log_loss
from rates.numeric.homogeneous.models import forward, relu_network
from rates.numeric.homogeneous.train import TrainConfig, checkpoint_steps, train


@pytest.fixture(scope="module")
def tiny():
    seeds = [0, 2, 3]
    data = teacher_student(seeds, n_train=12, n_test=50, d=6, teacher_width=16)
    return seeds, data


@pytest.mark.parametrize("algo,lr", [("gd", 0.05), ("sd", 2e-3), ("spectral", 0.02)])
def test_soft_margin_is_monotone_after_separation_on_a_tiny_net(tiny, algo, lr):
    seeds, data = tiny
    net = relu_network(6, [8], seeds, init_scale=1.0)
    h = train(net, data, TrainConfig(algo, lr, 300, checkpoints=20))
    assert not h.diverged.any()
    assert (h.t_below_level >= 0).all() and (h.final("train_acc") == 1.0).all()
    # Thm 3.1 for the flow; the discrete run may drop by at most one step's first-order change, L * max rho.
    assert (h.max_soft_margin_drop <= h.degree * h.max_relative_step).all()
    assert (h.max_relative_step > 0).all()
    # ... and the soft margin really grows after L < 1: last checkpoint above the first one past t_below.
    for r in range(len(seeds)):
        first = np.nonzero(h.t >= h.t_below_level[r])[0][0]
        assert h.metrics["soft_margin"][r, -1] > h.metrics["soft_margin"][r, first] > 0
    # soft margin <= gamma in the own norm <= soft margin + log(m)/||theta||^L (FLAVORS Lemma A.7)
    own = {"gd": "gamma_2", "sd": "gamma_1", "spectral": "gamma_spectral"}[algo]
    slack = np.log(12) / h.final("norm") ** h.degree
    assert (h.final("soft_margin") <= h.final(own) + 1e-12).all()
    assert (h.final(own) <= h.final("soft_margin") + slack).all()


def test_recorded_log_loss_matches_a_direct_evaluation(tiny):
    seeds, data = tiny
    net = relu_network(6, [8], seeds, init_scale=1.0)
    h = train(net, data, TrainConfig("gd", 0.05, 1, checkpoints=2))
    q = data.y_train * forward(net, data.X_train)
    expected = np.log(np.exp(-q.numpy()).sum(axis=1))
    np.testing.assert_allclose(h.metrics["log_loss"][:, 0], expected, rtol=1e-13)
    assert torch.allclose(log_loss(q, "exp"), torch.as_tensor(expected), rtol=1e-13)


def test_checkpoints_are_log_spaced_and_include_both_ends():
    t = checkpoint_steps(10_000, 20)
    assert t[0] == 0 and t[-1] == 10_000 and np.all(np.diff(t) > 0)
    later = t[t >= 10]
    ratios = later[1:] / later[:-1]
    assert ratios.max() < 1.8 and ratios.min() > 1.4  # about 10^(4/19) = 1.62 per checkpoint
    with pytest.raises(InputError):
        checkpoint_steps(0, 5)


def test_teacher_labels_follow_eq14_and_are_separated_by_the_teacher():
    data = teacher_student([5], n_train=40, n_test=30, d=5, teacher_width=16)
    assert set(np.unique(data.y_train.numpy())) == {-1.0, 1.0}
    # The same seed reproduces the same sample.
    again = teacher_student([5], n_train=40, n_test=30, d=5, teacher_width=16)
    assert torch.equal(again.X_train, data.X_train)


def test_non_separating_samples_are_refused():
    with pytest.raises(NotSeparableError) as err:
        teacher_student([0], n_train=40, d=5, teacher_width=1)  # u* = +1: half the points have f* = 0
    assert err.value.option == "--teacher-width"
    X = np.array([[1.0, 2.0], [2.0, 4.0], [1.0, 0.0]])
    with pytest.raises(NotSeparableError):
        check_homogeneous_separable(X, np.array([1.0, -1.0, 1.0]))  # x_2 = 2 x_1, opposite labels
    check_homogeneous_separable(X, np.array([1.0, 1.0, -1.0]))


def test_digits_pair_and_bad_specs():
    data = digits_pair((3, 6), seeds=[0, 1], n_train=30)
    assert data.X_train.shape == (2, 30, 64) and 0 <= data.X_train.min() and data.X_train.max() <= 1
    assert set(np.unique(data.y_train.numpy())) == {-1.0, 1.0}
    for spec in ("digits:3,12", "digits:3,3", "digits:3", "mnist"):
        with pytest.raises(InputError) as err:
            parse_data_spec(spec)
        assert err.value.option == "--data"
