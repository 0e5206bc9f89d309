"""The studies' simulation path: one engine call per task, the same runs serially or in worker processes."""

from __future__ import annotations

import numpy as np
import pytest

from rates.numeric.engine import RunSpec
from rates.studies.runner import StudyTask, run_tasks


def _tasks():
    return [StudyTask("a", "gaussian:k=3,d=4,per_class=4,sigma=0.3", 0,
                      (RunSpec("nsgd", "1/2", seed=1, batch=6, momentum=0.5),
                       RunSpec("signsgd", "3/4", eta0=0.2, seed=2, batch=3, vr=True)), 200, checkpoints=10, cost=1),
            StudyTask("b", "orthogonal:counts=3/2/1,scales=1/0.3/2", None,
                      (RunSpec("signsgd", "1/2", seed=4, batch=1),), 200, checkpoints=10, cost=2)]


def test_parallel_tasks_give_the_serial_runs_in_task_order():
    """Each run's randomness is its own seeded stream, so worker processes change nothing (bit for bit)."""
    serial = run_tasks(_tasks(), parallel=False)
    parallel = run_tasks(_tasks(), parallel=True)
    assert list(serial) == list(parallel) == ["a", "b"]
    for key in serial:
        assert [r.config.algo for r in serial[key].runs] == [r.config.algo for r in parallel[key].runs]
        for mine, theirs in zip(serial[key].runs, parallel[key].runs):
            np.testing.assert_array_equal(mine.gap, theirs.gap)
            np.testing.assert_array_equal(mine.cosines["max"], theirs.cosines["max"])
    # orthogonal data: the per-sample run carries its cosine to M (MINIBATCH Def. 4.8), in [-1, 1]
    cos_m = serial["b"].runs[0].cosines["M"]
    assert np.all(np.abs(cos_m) <= 1 + 1e-12) and cos_m[-1] > 0.99


def test_task_keys_must_be_unique():
    tasks = _tasks()
    with pytest.raises(ValueError, match="unique"):
        run_tasks([tasks[0], tasks[0]], parallel=False)
