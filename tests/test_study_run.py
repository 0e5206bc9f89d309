"""The studies' simulation path: iterates kept at checkpoints agree with the engine and with closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from rates.data import parse_data
from rates.engine import RunSpec, simulate
from rates.optim import epoch_permutations
from rates.study_run import StudyTask, cosine, relative_error, run_task, run_tasks


def test_cosine_is_the_frobenius_cosine():
    W = np.array([[[1.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])
    target = np.array([[2.0, 0.0], [0.0, 0.0]])
    values = cosine(W, target)
    assert values[0] == pytest.approx(1.0) and values[1] == pytest.approx(2 ** -0.5)
    assert np.isnan(values[2])  # W = 0 has no direction


def test_iterate_task_records_what_the_engine_records():
    """Same specs through rates.engine.simulate and through the iterate-keeping path: identical records."""
    specs = (RunSpec("nsgd", "1/2", seed=1, batch=6, momentum=0.5), RunSpec("signsgd", "3/4", eta0=0.2, seed=2,
                                                                           batch=3, vr=True))
    task = StudyTask("t", "gaussian:k=3,d=4,per_class=4,sigma=0.3", 0, specs, 300, checkpoints=12, iterates=True)
    result = run_task(task)
    reference = simulate(list(specs), parse_data(task.data, seed=0), 300, checkpoints=12).runs
    assert result.iterates.shape == (2, len(reference[0].t), 3, 4)
    for mine, theirs in zip(result.runs, reference):
        np.testing.assert_array_equal(mine.t, theirs.t)
        for name in ("gap", "margin", "log_loss", "norm"):
            np.testing.assert_allclose(getattr(mine, name), getattr(theirs, name), rtol=1e-10, atol=1e-12)
        for norm in ("max", "frobenius", "spectral"):
            np.testing.assert_allclose(mine.margins[norm], theirs.margins[norm], rtol=1e-10, atol=1e-12)
        gamma = theirs.gamma["value"]
        np.testing.assert_allclose(relative_error(mine, theirs.gamma["norm"], gamma), theirs.gap / gamma, rtol=1e-9)


def test_per_sample_signsgd_iterates_are_the_closed_form_sum():
    """THEORY.md sec. 5 (MINIBATCH Def. 4.8): on h_i = s_i e_{y_i} each per-sample SignSGD step is
    eta_t (2 e_{y_i} - 1) e_{y_i}^T, so W_t is a sum over the reshuffled order, for every checkpoint."""
    spec = "orthogonal:counts=3/2/1,scales=1/0.3/2"
    steps, seed = 40, 4
    result = run_tasks([StudyTask("p", spec, None, (RunSpec("signsgd", "1/2", seed=seed, batch=1),), steps,
                                  checkpoints=8, iterates=True)], parallel=False)["p"]
    data = parse_data(spec)
    stream = epoch_permutations(seed, data.n)
    order = [int(data.y[i]) for _ in range(steps // data.n + 1) for i in next(stream).tolist()]
    W = np.zeros((3, 3))
    expected = {}
    for t in range(steps):
        c = order[t]
        W[:, c] += (t + 2.0) ** -0.5 * (2 * np.eye(3)[c] - 1)
        expected[t + 1] = W.copy()
    for position, t in enumerate(result.runs[0].t):
        np.testing.assert_allclose(result.iterates[0, position], expected[int(t)], rtol=1e-14, atol=1e-14)
