"""The runs of ``rates report signadam``: its tasks (one per group of configurations and horizon), the run specs
(eta0, Adam's eps, the norm), the Rem. 6.5 datasets, and the keys that name a run's configuration."""

from __future__ import annotations

from rates.numeric.run_config import RunConfig
from rates.studies.runner import StudyTask
from rates.studies.signadam.protocols import (
    ADAM_A1,
    ADAM_AS,
    ADAM_EPS,
    BEST_A,
    CLASSES,
    CLASSES_N,
    MORE_NORMS,
    NSD_ALGORITHMS,
    NSD_AS,
    OTHER_NORMS,
    RATE_EPS,
    Size,
    margin_seeds,
)


def classes_data(k: int) -> str:
    """Rem. 6.5 datasets: Gaussian, d = 10, n = 30 at every k (30/k per class), sigma = 0.3 (sizes ours)."""
    return f"gaussian:k={k},d=10,per_class={CLASSES_N // k},sigma=0.3"


def _spec(algo: str, a: str, seed: int, eps: float = 0.0, norm=None):
    from rates.numeric.engine import RunSpec

    if algo == "adam":
        return RunSpec(algo, a, eta0=1.0, seed=seed, adam_eps=eps)
    return RunSpec(algo, a, seed=seed, norm=norm)


def planned_tasks(name: str, size: Size, seed: int, specs: tuple, default_steps: int) -> list[StudyTask]:
    """The tasks of one group of rate configurations: one per horizon (:func:`rates.studies.horizon.plan`, each
    configuration as long as 1.5 decades past its descent start needs, within the budget), ``name/seedS`` for the
    default horizon and ``name/tSTEPS/seedS`` for the others."""
    from rates.studies.horizon import plan
    from rates.studies.runner import dataset

    horizons: dict[int, list] = {}
    for spec in specs:
        steps = plan(spec, dataset(size.data, seed), default_steps).steps if size.plan_horizons else default_steps
        horizons.setdefault(steps, []).append(spec)
    return [StudyTask(f"{name}/seed{seed}" if steps == default_steps else f"{name}/t{steps:g}/seed{seed}", size.data,
                      seed, tuple(group), steps, size.checkpoints, cost=len(group) * steps)
            for steps, group in sorted(horizons.items())]


def task_runs(results: dict, name: str, seed: int) -> list:
    """The runs of every horizon's task of ``name`` (:func:`planned_tasks`) for one seed."""
    return [r for key, res in results.items()
            if key.startswith(f"{name}/") and key.endswith(f"/seed{seed}") and key.count("/") <= name.count("/") + 2
            for r in res.runs]


def tasks(size: Size, seed: int) -> list[StudyTask]:
    out = []
    for algo in NSD_ALGORITHMS:
        out += planned_tasks(f"rates/{algo}", size, seed, tuple(_spec(algo, a, seed) for a in NSD_AS), size.nsd_steps)
    out += planned_tasks("rates/other-norms", size, seed,
                         tuple(_spec(algo, "1/2", seed, norm=norm) for algo, norm in OTHER_NORMS + MORE_NORMS),
                         size.nsd_steps)
    specs = tuple(_spec("adam", a, seed, eps) for eps in RATE_EPS for a in ADAM_AS) + (_spec("adam", ADAM_A1, seed),)
    out.append(StudyTask(f"rates/adam/seed{seed}", size.data, seed, specs, size.adam_steps, size.checkpoints,
                         cost=len(specs) * size.adam_steps))
    for k in CLASSES:
        for draw in range(size.classes_draws):
            data_seed = 100 * seed + draw
            out.append(StudyTask(f"classes/k{k}/draw{draw}/seed{seed}", classes_data(k), data_seed,
                                 (_spec("adam", "2/3", data_seed),), size.classes_steps, size.checkpoints,
                                 cost=size.classes_steps))
    for draw, data_seed in enumerate(margin_seeds(size, seed)):
        specs = (_spec("signgd", BEST_A["signgd"], data_seed), _spec("ngd", BEST_A["ngd"], data_seed)) + tuple(
            _spec("adam", BEST_A["adam"], data_seed, eps) for eps in ADAM_EPS)
        name = f"margins/seed{seed}" if draw == 0 else f"margins/draw{draw}/seed{seed}"
        out.append(StudyTask(name, size.data, data_seed, specs, size.margin_steps, size.checkpoints,
                             cost=len(specs) * size.margin_steps))
    return out


def _key(run) -> tuple:
    return run.config.algo, run.config.a, float(run.config.adam_eps or 0.0)


def _other_norm_key(config: RunConfig) -> tuple:
    algo = config.algo
    return ("other-norm", algo, None if algo == "cd" else config.norm)


def spec_of(config: RunConfig):
    """The spec that ran ``config`` (a rate run of this study: its algorithm, exponent, seed, Adam's eps, and the
    norm of NSD, the one algorithm the study names a norm for)."""
    eps = float(config.adam_eps or 0.0)
    return _spec(config.algo, config.a, config.seed, eps, config.norm if config.algo == "nsd" else None)


def onset_tasks(records: dict, size: Size) -> dict:
    """Per rate record open only because its window starts before the certified onset ``s0``, the tasks that run
    its configurations to 1.5 decades past ``s0`` within the budget (:func:`rates.studies.horizon.steps_past_onset`,
    a configuration's step priced by a probe), one per data draw of its runs (``onset/KEY/tSTEPS/seedS``), keyed
    like ``records``."""
    from rates.studies.horizon import probed_cost, steps_past_onset
    from rates.studies.runner import dataset

    if not size.plan_horizons:
        return {}
    out = {}
    for key, record in records.items():
        if getattr(record, "prediction", None) is None:
            continue
        by_draw: dict = {}
        for run in record.runs:
            by_draw.setdefault(run.config.recorded_data_seed, []).append(spec_of(run.config))
        steps = steps_past_onset(record, None)  # the budget in steps first: a probe only for a candidate
        if steps is not None:
            draw, specs = next(iter(by_draw.items()))
            steps = steps_past_onset(record, probed_cost(specs[0], dataset(size.data, draw)))
        if steps is None:
            continue
        name = "/".join(str(part) for part in key)
        out[key] = [StudyTask(f"onset/{name}/t{steps:g}/seed{draw}", size.data, draw, tuple(specs), steps,
                              size.checkpoints, cost=len(specs) * steps) for draw, specs in by_draw.items()]
    return out
