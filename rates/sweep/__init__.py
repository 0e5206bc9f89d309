"""Grids of configurations as batched engine tasks, run in this process or on a Dask cluster.

* :mod:`rates.numeric.tasks` -- :class:`EngineTask` and :func:`run_tasks`, the one entry point that runs
  engine tasks (``rates sweep`` and the studies of ``rates report`` both use it; re-exported here);
* :mod:`rates.sweep.grid` -- the ``[grid]`` TOML table -> validated configurations -> tasks;
* :mod:`rates.sweep.store` -- the sweep directory: manifest, index, one Trajectory per task, resumption;
* :mod:`rates.sweep.run` -- ``rates sweep`` end to end.

The last stage of the pipeline: may import every other stage.
"""

from rates.numeric.tasks import EXECUTORS, EngineTask, execute_task, executor_name, run_tasks

__all__ = ["EXECUTORS", "EngineTask", "execute_task", "executor_name", "run_tasks"]
