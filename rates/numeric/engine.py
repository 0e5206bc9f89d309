"""The training loop: many configurations advanced together, checkpoints on a log grid -> Trajectory.

Setting: docs/theory.md sections 1, 2 and 7. A :class:`RunSpec` is one configuration (algorithm, learning-rate
schedule -- the exponent a of the polynomial family or any :class:`rates.schedule.Schedule` --, eta0, seed,
batch, momentum, VR, Adam constants, polar method). :func:`simulate` resolves
every spec (``rates.numeric.algorithms.resolve_algorithm`` decides the theorem family), solves the max margin
gamma once per norm (``rates.numeric.margins.max_margin``, certified to <= 1e-9), groups the runs by
:class:`~rates.numeric.optim.compose.Recipe` (the code they execute) and advances each group from ``W_0 = 0``
(``W`` has shape (R, k, d)), by the stepper below. :func:`simulate_draws` does the same for several datasets
of one shape (draws) at once: a group then holds the runs of one recipe on every draw, each on its own data.

Algorithm per step: signal (full / reshuffled mini-batch / VR gradient, log-domain weights) ->
[momentum] -> steepest direction | Adam -> ``W <- W - eta_t * direction`` with ``eta_t = eta0 f(t)``, the run's
schedule (``f(t) = (t+2)^-a`` for the polynomial family).

Guarantee (what is recorded): at log-spaced checkpoints t (unique integers from 1 to ``steps``; W_t is
the iterate after t steps) the margin of W_t in the algorithm's norm and its gap ``gamma - margin``
(the quantity every rate of docs/theory.md section 4 bounds), the margins in the max, Frobenius and spectral
norms, ``log L(W_t)`` without underflow and ``||W_t||``; the relative margin errors and the cosines to
each reported norm's max-margin solution (and, on orthogonal scale-skewed data, to the bias matrix M of
MINIBATCH Def. 4.8) of :mod:`rates.numeric.measures`. Only the checkpoints leave the device.

Steppers (``engine``): on the CPU the steps between two checkpoints run as one compiled call
(:mod:`rates.numeric.fused`, numba: ``fused``); the torch program of :mod:`rates.numeric.optim` (``torch``) is the
path on
cuda and stays callable on the CPU as the previous engine (``--engine torch``) that tests and benchmarks
compare against. On cuda, ``graph`` replays that same torch program's steps as recorded CUDA graphs
(:mod:`rates.numeric.graphed`) for the recipes it can record, and runs the others eagerly. ``gemm``
(:mod:`rates.numeric.gemm`) computes a full-batch group's gradients as two GEMMs of all its runs stacked, and the
rest of the recipe with the torch program (plain SignGD on the CPU: the whole step in one compiled loop,
:class:`rates.numeric.gemm.SignSteps`): on data sets where the products are the step (from k d n = 2e5 and d = 16
on, 1.5e5 for plain SignGD, :func:`group_stepper`) it is faster than the fused kernels (1.4-2x measured,
docs/benchmarks.md), and ``auto`` takes it there on the CPU. ``auto`` picks ``fused`` on the CPU when numba
imports (``gemm`` for those groups), ``graph`` on cuda, else ``torch``. All record the same checkpoints with the
same :class:`_Measure`.

Reproducibility: float64 throughout; each run's randomness is its own CPU generator seeded with its
seed (``rates.numeric.optim.sources.epoch_permutations``), so on CPU a run is bit-for-bit the same alone or
inside a batch and from one call to the next; on the ``gemm`` stepper (large data sets) the same from one call
to the next, and alone or in a batch to the rounding of its sums (bit for bit for sign steps; see
:mod:`rates.numeric.gemm`).

Why one module (about 850 lines): it is the one place that decides, per group of configurations, which stepper
runs it (fused kernels, stacked GEMMs, the compiled SignGD loop, CUDA graphs or the eager torch program) and on
which device, and every stepper must hand back the same checkpoints and the same recorded configuration; the
steppers themselves live in their own modules (:mod:`rates.numeric.fused`, :mod:`rates.numeric.gemm`,
:mod:`rates.numeric.graphed`), the dispatch and the checkpoint contract stay together here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

import numpy as np

from rates.errors import InputError
from rates.lazy import lazy_module
from rates.norms import parse_norm
from rates.numeric.algorithms import ALGORITHMS, AlgorithmConfig, resolve_algorithm
from rates.numeric.margins import max_margin
from rates.numeric.measures import BIAS_KEY, checkpoint_measures, max_margin_references
from rates.numeric.optim.alias import for_run
from rates.numeric.recipe import Recipe
from rates.numeric.run_config import RunConfig, config_of_run
from rates.numeric.run_parameters import check
from rates.numeric.trajectory import Run, Trajectory
from rates.progress import progress_bar
from rates.schedule import Schedule

if TYPE_CHECKING:
    import sympy as sp

    from rates.numeric.optim.compose import Hyper

# torch is imported on first use: the default CPU run (the fused stepper) never needs it, and it costs ~2.5 s
# of a start-up meant to stay near 2 s; DTYPE (torch.float64) is resolved by __getattr__ below.
torch = lazy_module("torch", globals())
REPORTED_NORMS = ("max", "frobenius", "spectral")
# Runs of a group on several datasets get a copy of their data each (the kernels read per-run arrays); above this
# many bytes of copies the group runs one dataset at a time instead.
PER_RUN_DATA_BYTES = 1 << 28
# Data draws whose preparation (drawing: a separability LP each; max margins: LPs and conic programs) would take
# longer than this one after another are shared with a second process: a worker process costs ~3 s of CPU to
# start (it imports scipy, cvxpy and torch), and gains half of what is left after that on a free second core.
PARALLEL_PREPARE_SECONDS = 8.0
# On Linux a GPU that torch can use shows one of these: the NVIDIA kernel driver and its control device
# (also mounted into containers by the NVIDIA container toolkit), WSL's GPU paravirtualisation device, and
# the AMD KFD device of ROCm builds (which torch reports as cuda).
GPU_DEVICE_FILES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/dev/kfd")


def __getattr__(name: str) -> Any:
    if name == "DTYPE":  # float64 throughout; a module attribute that must not import torch with the module
        return torch.float64
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class RunSpec:
    """One configuration; ``a`` is the schedule exponent of ``eta_t = eta0 (t+2)^(-a)``, a in (0, 1], or
    ``schedule`` any schedule ``eta0 * f(t)`` (a :class:`~rates.schedule.Schedule` or its text), not both.

    A polynomial ``schedule`` is stored as its ``a`` (``RunSpec("signgd", schedule=Schedule.polynomial("1/2"))
    == RunSpec("signgd", "1/2")``), so that both spellings are one configuration with one record."""

    algo: str
    a: Union[str, Fraction, sp.Rational, None] = None
    eta0: float = 1.0
    seed: int = 0
    norm: Optional[str] = None
    batch: Optional[int] = None
    momentum: Optional[float] = None
    vr: bool = False
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 0.0
    polar: str = "exact"
    init_scale: float = 0.0  # W_0 = init_scale * N(0, 1) entries (seeded by ``seed``); 0: W_0 = 0, the seeds' setting
    schedule: Union[Schedule, str, None] = None

    def __post_init__(self):
        if self.a is None and isinstance(self.schedule, Schedule) and self.schedule.is_polynomial:
            object.__setattr__(self, "a", str(self.schedule.a))
            object.__setattr__(self, "schedule", None)

    def record(self) -> dict[str, Any]:
        """The spec as JSON-ready fields (a task's identity, a run's config): ``schedule`` as its text, and
        left out where ``a`` gives the schedule, ``init_scale`` left out at 0 (W_0 = 0): the records of the
        polynomial family from W_0 = 0 stay as they were (sweep stores resume)."""
        fields = dataclasses.asdict(dataclasses.replace(self, schedule=None))
        fields.pop("schedule")
        if not fields.get("init_scale"):
            fields.pop("init_scale")
        if self.schedule is not None:
            fields["schedule"] = self.schedule.text if isinstance(self.schedule, Schedule) else str(self.schedule)
        return fields


def schedule_of_spec(spec: RunSpec) -> Schedule:
    """The spec's schedule, validated: ``a`` (the polynomial family) or ``schedule``; InputError names the
    option (--a, --schedule)."""
    if spec.a is not None and spec.schedule is not None:
        raise InputError("schedule", f"give either --a or --schedule, not both (got --a {spec.a} and --schedule "
                                     f"{getattr(spec.schedule, 'text', spec.schedule)})")
    if spec.schedule is not None:
        return spec.schedule if isinstance(spec.schedule, Schedule) else Schedule.parse(spec.schedule)
    if spec.a is None:
        raise InputError("a", "no schedule given: give --a A (eta0*(t+2)**(-A)) or --schedule EXPR")
    return Schedule.polynomial(spec.a)


@dataclass(frozen=True)
class ResolvedRun:
    """A validated spec: the algorithm's family and norm, its schedule (the polynomial family's exact a needs no
    sympy on this path), and the recipe it runs."""

    spec: RunSpec
    algorithm: AlgorithmConfig
    schedule: Schedule
    recipe: Recipe


def gpu_impossible() -> bool:
    """True when no GPU that torch could use can exist here, decided without importing torch.

    Linux: none of :data:`GPU_DEVICE_FILES` exists (torch's CUDA needs the NVIDIA driver, its ROCm builds
    the KFD device, WSL the dxg device); macOS: PyTorch ships no CUDA build. Elsewhere (Windows) nothing
    cheap is known and torch is asked. A GPU whose driver is present but which torch cannot use is still
    found by ``torch.cuda.is_available()`` in :func:`resolve_device`: this test only skips asking.
    """
    if sys.platform == "darwin":
        return True
    if sys.platform.startswith("linux"):
        return not any(os.path.exists(path) for path in GPU_DEVICE_FILES)
    return False


def cpu_without_torch(device: str) -> bool:
    """Whether ``--device`` resolves to the CPU without asking torch: ``cpu``, or ``auto`` where
    :func:`gpu_impossible`. Then the fused stepper runs without importing torch at all."""
    key = str(device).strip().lower()
    return key == "cpu" or (key == "auto" and gpu_impossible())


def device_type(device: Any) -> str:
    """``cpu`` or ``cuda``: the type of a ``torch.device``, or of a device name (``cpu``, ``cuda:1``)."""
    return device.type if hasattr(device, "type") else str(device).partition(":")[0]


# configurations x k x d x (samples per step) below which `--device auto` keeps a call on the CPU even where a
# GPU is: measured on an H100 (benchmarks/gpu_engine.py, 26 Nov 2026), replayed CUDA graphs stepped the
# default preset (k d n = 450) at 12k configuration-steps/s for one configuration and 2.6M for 256, where the
# fused CPU kernels do 1.4M and 3.7M per CPU second on the 2-core machine; only from ~4096 configurations
# (1.8e6 per step) did the GPU reach 16M/s. A step of a large dataset is two GEMMs, which the GPU wins at once.
CUDA_MIN_WORK = 1_000_000


def step_work(specs: Sequence[Any], datasets: Sequence[Any]) -> int:
    """Multiply-adds of one step of every run on every dataset, up to a constant: configurations x k x d x the
    samples a step reads (its batch, or all n)."""
    total = 0
    for data in datasets:
        n, d, k = int(data.n), int(data.d), int(data.k)
        total += sum(k * d * min(int(getattr(spec, "batch", None) or n), n) for spec in specs)
    return total


def device_for_work(device: str, work: float) -> Any:
    """``--device`` for a call of ``work`` (:func:`step_work`): ``auto`` is cuda only where a GPU is available
    and ``work >= CUDA_MIN_WORK`` (below it the fused CPU kernels outrun a GPU's per-step launches), else the
    CPU -- decided without importing torch when the work is small or no GPU can exist; an explicit name is
    :func:`resolve_device`'s."""
    if cpu_without_torch(device):
        return "cpu"
    if check("device", device) == "auto" and work < CUDA_MIN_WORK:
        return "cpu"
    return resolve_device(device)


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda when available, else cpu; ``cuda`` without a GPU is refused (``--device``)."""
    key = check("device", device)
    if key == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if key == "cpu":
        return torch.device("cpu")
    if key.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError("device", "cuda requested but no CUDA device is available; use auto or cpu")
        # torch.device accepts any index, so a missing GPU would only fail at the first allocation
        count = torch.cuda.device_count()
        try:
            chosen = torch.device(key)
        except RuntimeError:
            chosen = None
        if chosen is None or chosen.type != "cuda" or (chosen.index or 0) >= count:
            raise InputError("device", f"must be auto, cpu, cuda or cuda:I with 0 <= I < {count}, got {device!r}")
        return chosen
    raise AssertionError(f"check('device') let {device!r} through")


def resolve_spec(spec: RunSpec, n: int) -> ResolvedRun:
    """Validate one spec against data with n samples; raises InputError naming the CLI option."""
    schedule = schedule_of_spec(spec)
    check("eta0", spec.eta0)
    spec = dataclasses.replace(spec, polar=check("polar", spec.polar))  # the canonical spelling, recorded as run
    algorithm = resolve_algorithm(spec.algo, spec.norm, n=n, batch=spec.batch, momentum=spec.momentum, vr=spec.vr)
    named = ALGORITHMS[algorithm.name]
    batch = algorithm.batch
    if algorithm.vr:
        if batch is None or batch >= n:
            raise InputError("batch", f"variance reduction needs mini-batches: give --batch b < n={n} dividing n")
        source = "vr"
    elif batch is not None and (batch < n or named.stochastic):
        source = "minibatch"
    elif named.stochastic:
        raise InputError("batch", f"{algorithm.name} is stochastic: give --batch b dividing n={n} (b=1: per-sample)")
    else:
        source, batch = "full", None
    if algorithm.adam:
        for name in ("adam_beta1", "adam_beta2", "adam_eps"):
            check(name, getattr(spec, name))
    if spec.init_scale:
        check("init_scale", spec.init_scale)
    recipe = Recipe(for_run(named, source, algorithm.norm, algorithm.momentum > 0), batch,
                    polar=spec.polar if algorithm.norm == "spectral" else "exact")
    return ResolvedRun(spec, algorithm, schedule, recipe)


def checkpoint_times(steps: int, checkpoints: int) -> np.ndarray:
    """Unique integers, log-spaced from 1 to ``steps`` (both included), at most ``checkpoints`` of them.

    Beyond ``steps ln(steps) + 2`` points the log-spaced grid's gaps are all below 1, so every integer from 1 to
    ``steps`` is a checkpoint: asking for more changes nothing, and is not allocated."""
    every = int(steps * math.log(max(steps, 2))) + 3
    grid = np.unique(np.round(np.geomspace(1, steps, num=max(min(int(checkpoints), every), 2))).astype(np.int64))
    return grid[(grid >= 1) & (grid <= steps)]


class _Measure:
    """Checkpoint measurements on the device; one host transfer per checkpoint.

    Interface: ``_Measure(H, y, k, norm)(W)`` with ``W`` (R, k, d) returns a dict of host arrays with a
    leading runs axis: ``log_loss``, ``norm``, ``margin``, ``margin:<N>`` for N in REPORTED_NORMS, and ``W``
    itself (R, k, d), from which :func:`rates.numeric.measures.checkpoint_measures` derives the relative margin errors
    and the cosines to the reference directions once the run is over (tiny: k x d per run and checkpoint).
    The fused stepper records the same fields in numpy (:class:`rates.numeric.fused.measure.NumpyMeasure`).
    """

    def __init__(self, H: torch.Tensor, y: torch.Tensor, k: int, norm: str):
        from rates.numeric.losses import labels

        self.Ht = H.transpose(0, 1).contiguous()
        self.labels = labels(y, k, H.dtype)
        self.norms = {name: parse_norm(name) for name in dict.fromkeys((norm,) + REPORTED_NORMS)}
        self.norm = norm

    def __call__(self, W: torch.Tensor) -> dict[str, np.ndarray]:
        from rates.numeric.losses import log_loss_from_u, logits_of, sample_views, wrong_class_margins

        logits = logits_of(W, sample_views(self.Ht, W.shape[0])[0])
        u = wrong_class_margins(logits, self.labels)
        # min_{i, c != y_i} (z_{y_i} - z_c), as rates.numeric.margins.unnormalized_margins, but from the logits
        # already formed here with the batch-independent product (so a run's record is the same alone).
        raw = ((logits * self.labels.onehot).sum(dim=-2) - (logits + self.labels.mask).amax(dim=-2)).amin(dim=-1)
        values = {name: norm.value(W) for name, norm in self.norms.items()}
        out = {"log_loss": log_loss_from_u(u), "norm": values[self.norm], "margin": raw / values[self.norm]}
        for name in REPORTED_NORMS:
            out[f"margin:{name}"] = raw / values[name]
        out["W"] = W.clone()  # a copy: a loop that updates W in place must not rewrite the record
        return {key: value.detach().cpu().numpy() for key, value in out.items()}


def _hyper(runs: Sequence[ResolvedRun], device: torch.device) -> Hyper:
    from rates.numeric.optim.compose import Hyper

    def column(values: list[float]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.float64, device=device)

    return Hyper(
        eta0=column([r.spec.eta0 for r in runs]),
        schedules=tuple(r.schedule for r in runs),
        beta=column([r.algorithm.momentum for r in runs]),
        beta1=column([r.spec.adam_beta1 for r in runs]),
        beta2=column([r.spec.adam_beta2 for r in runs]),
        eps=column([r.spec.adam_eps for r in runs]),
        seeds=[r.spec.seed for r in runs],
    )


def resolve_engine(engine: str, device: Any) -> str:
    """``auto`` -> ``fused`` on the CPU when numba imports, ``graph`` on cuda, else ``torch``; ``fused`` needs
    the CPU and ``graph`` cuda (``--engine``); ``gemm`` runs on either (on the CPU it needs numba). A recipe
    ``graph`` cannot record runs eagerly (:func:`run_group`); which groups ``auto`` gives to ``gemm`` is decided per
    group by :func:`group_stepper`. ``device``: a ``torch.device`` or a device name (``cpu``)."""
    key = check("engine", engine)
    from rates.numeric.fused import available

    kind = device_type(device)
    if key == "auto":
        if kind == "cuda":
            return "graph"
        return "fused" if kind == "cpu" and available() else "torch"
    if key == "graph" and kind != "cuda":
        raise InputError("engine", f"graph (CUDA graphs) runs on cuda only (device {device}); use --engine auto")
    if key == "fused" and kind != "cpu":
        raise InputError("engine", f"fused runs on the CPU only (device {device}); use --device cpu or --engine torch")
    if key in ("fused", "gemm") and kind == "cpu" and not available():
        raise InputError("engine", f"{key} needs numba, which does not import here; use --engine torch")
    return key


def group_stepper(engine: str, device: Any, recipe: Recipe, k: int, d: int, n: int) -> str:
    """The stepper of one group of runs (one recipe, data of n samples, d features, k classes): the engine's
    choice (:func:`resolve_engine`), except that ``auto`` on the CPU gives full-batch groups on data sets where
    the products dominate (:func:`rates.numeric.gemm.worth_gemm`) to ``gemm``. A function of the recipe and the
    data's shape, so a run takes the same path alone or in any batch. ``gemm`` asked for a recipe that is not
    full batch is refused (``--engine``)."""
    key = resolve_engine(engine, device)
    if key == "gemm":
        if recipe.source != "full":
            raise InputError("engine", f"gemm runs full-batch gradients only (this run's source is "
                                       f"{recipe.source}); use --engine auto")
        return key
    if str(engine).strip().lower() == "auto" and key == "fused" and recipe.source == "full":
        from rates.numeric.exact_sign import takes_exact_signs
        from rates.numeric.gemm import worth_gemm

        if worth_gemm(k, d, n, signs=takes_exact_signs(recipe)):
            return "gemm"
    return key


INIT_STREAM = 0x1D17  # the initialisation's random stream, apart from the reshuffling stream of the same seed


def initial_weights(runs: Sequence[ResolvedRun], k: int, d: int) -> np.ndarray:
    """W_0 of each run, (R, k, d): ``init_scale`` times i.i.d. standard normal entries from
    ``numpy.random.default_rng([INIT_STREAM, seed])``, zero where ``init_scale`` is 0 (FLAVORS section 5 starts its
    runs from a small random initialisation; the seeds' linear theorems from W_0 = 0)."""
    W = np.zeros((len(runs), k, d))
    for index, run in enumerate(runs):
        if run.spec.init_scale:
            W[index] = run.spec.init_scale * np.random.default_rng([INIT_STREAM, run.spec.seed]).standard_normal((k, d))
    return W


def run_group(runs: Sequence[ResolvedRun], H: Any, y: Any, k: int, steps: int, times: np.ndarray, advance=None,
              engine: str = "auto") -> tuple[Any, list[dict[str, np.ndarray]]]:
    """Advance runs that share one recipe; returns the final W (R, k, d) and per-checkpoint records.

    ``H``, ``y``: numpy arrays (the CPU) or torch tensors (on their device); W comes back of the same kind.
    The fused stepper takes numpy arrays as they are, so a CPU run given numpy data never imports torch.
    One dataset for every run (``H`` (n, d), ``y`` (n,)), or one per run (``H`` (R, n, d), ``y`` (R, n): draws of
    a dataset of one shape): the fused stepper advances those in one call, each run on its own data; the torch
    steppers, and the fused one for VR runs (whose snapshot reads one dataset), once per distinct dataset."""
    recipe = runs[0].recipe
    if any(r.recipe != recipe for r in runs):
        raise ValueError("run_group needs runs of one recipe")
    on_host = isinstance(H, np.ndarray)
    if H.ndim == 3:
        return _run_group_per_run_data(runs, H, y, k, steps, times, advance, engine)
    stepper = group_stepper(engine, "cpu" if on_host else H.device, recipe, k, H.shape[-1], H.shape[-2])
    if stepper == "fused":
        from rates.numeric.fused.group import supports

        if supports(recipe):
            if on_host:
                return _run_group_fused(runs, H, np.asarray(y), k, steps, times, advance)
            W, records = _run_group_fused(runs, H.numpy(), y.numpy(), k, steps, times, advance)
            return torch.from_numpy(W), records
        if str(engine).strip().lower() == "fused":
            raise InputError("engine", f"the fused kernels have no steepest direction for norm {recipe.norm!r}; "
                                       "use --engine torch")
    if stepper == "gemm" and (on_host or H.device.type == "cpu"):
        from rates.numeric.gemm import SignSteps, SteepestSteps, compiled_signs, compiled_steepest

        stepper_class = SignSteps if compiled_signs(recipe, runs) else (
            SteepestSteps if compiled_steepest(recipe, runs) else None)
        if stepper_class is not None:
            if on_host:
                return _run_group_gemm_compiled(stepper_class, runs, H, np.asarray(y), k, steps, times, advance)
            W, records = _run_group_gemm_compiled(stepper_class, runs, H.numpy(), y.numpy(), k, steps, times,
                                                  advance)
            return torch.from_numpy(W), records
    if on_host:
        W, records = run_group(runs, torch.as_tensor(H, dtype=torch.float64), torch.as_tensor(y, dtype=torch.long),
                               k, steps, times, advance, engine)
        return W.numpy(), records
    from rates.numeric.optim.compose import build

    W = torch.zeros((len(runs), k, H.shape[1]), dtype=torch.float64, device=H.device)
    if stepper == "gemm":
        optimizer, measure = _gemm_program(runs, H, y, k)
    else:
        optimizer = build(recipe, H, y, k, _hyper(runs, H.device))
        measure = _Measure(H, y, k, recipe.norm)
    if any(r.spec.init_scale for r in runs):
        W = torch.as_tensor(initial_weights(runs, k, H.shape[1]), device=H.device)
    if H.device.type == "cuda" and resolve_engine(engine, H.device) == "graph":
        from rates.numeric.graphed import GraphedSteps, graphable, worth_recording

        forced = str(engine).strip().lower() == "graph"
        if graphable(recipe) and (forced or worth_recording(len(runs), k, H.shape[0])):
            return _run_group_graphed(GraphedSteps, optimizer, W, measure, steps, times, advance)
    if stepper != "gemm":
        _certify_signs(optimizer, recipe, H, y, k)
    state = optimizer.init(W)
    records = []
    wanted = iter(times.tolist())
    next_t = next(wanted, None)
    report_every = max(1, min(10_000, steps // 200))
    blas_threads = one_blas_thread() if stepper == "gemm" and H.device.type == "cpu" else contextlib.nullcontext()
    with torch.inference_mode(), single_thread_on_cpu(H.device), blas_threads:
        for t in range(steps):
            W, state = optimizer.step(W, state, t)
            if t + 1 == next_t:
                records.append(measure(W))
                next_t = next(wanted, None)
            if advance is not None and (t + 1) % report_every == 0:
                advance(report_every)
    if advance is not None and steps % report_every:
        advance(steps % report_every)
    return W, records


def _certify_signs(optimizer: Any, recipe: Any, H: torch.Tensor, y: torch.Tensor, k: int) -> None:
    """For plain SignGD on the torch program: the full gradient with one scale per class row (not the folded
    direction, whose single scale flushes rows 2^-1074 below the largest), its undecided signs settled exactly
    (:class:`rates.numeric.exact_sign.CertifiedSigns`). Not on recorded CUDA graphs, which cannot stop for the host."""
    from rates.numeric.exact_sign import CertifiedSigns, takes_exact_signs
    from rates.numeric.optim.sources import FullGradient

    if takes_exact_signs(recipe):
        optimizer.source = CertifiedSigns(FullGradient(H, y, k, exact_scale=True, per_row=True), H, y, k)


def _gemm_program(runs: Sequence[ResolvedRun], H: torch.Tensor, y: torch.Tensor, k: int) -> tuple[Any, Any]:
    """The torch program of the runs' recipe with the stacked GEMMs of :mod:`rates.numeric.gemm` as its full-batch
    source (the same signal: the gradient with its log-scales; the rest of the recipe unchanged), and its
    checkpoint measurement: in numpy on the CPU, as the fused path measures."""
    from rates.numeric.exact_sign import takes_exact_signs
    from rates.numeric.gemm import GemmGradient
    from rates.numeric.optim.compose import Optimizer, signal_scales, transform_of

    recipe = runs[0].recipe
    _, per_row = signal_scales(recipe)
    on_host = H.device.type == "cpu"
    exact = takes_exact_signs(recipe)
    program = Optimizer(GemmGradient(H, y, k, per_row, exact_signs=exact and on_host),
                        transform_of(recipe, _hyper(runs, H.device)))
    if not on_host:
        if exact:  # the device's coefficients (rates.numeric.losses.coefficients), certified as the torch path's
            from rates.numeric.exact_sign import CertifiedSigns

            program.source = CertifiedSigns(program.source, H, y, k)
        return program, _Measure(H, y, k, recipe.norm)
    from rates.numeric.fused.measure import NumpyMeasure

    host_measure = NumpyMeasure(H.numpy(), y.numpy(), k, recipe.norm, REPORTED_NORMS)
    return program, lambda W: host_measure(W.numpy())


def _run_group_per_run_data(runs: Sequence[ResolvedRun], H: Any, y: Any, k: int, steps: int, times: np.ndarray,
                            advance=None, engine: str = "auto") -> tuple[Any, list[dict[str, np.ndarray]]]:
    """:func:`run_group` with one dataset per run: one fused call where the kernels take per-run data, else
    one call per distinct dataset (runs on equal data stay together), merged back into the runs' order."""
    recipe = runs[0].recipe
    on_host = isinstance(H, np.ndarray)
    stepper = group_stepper(engine, "cpu" if on_host else H.device, recipe, k, H.shape[-1], H.shape[-2])
    if stepper == "fused" and recipe.source != "vr":
        from rates.numeric.fused.group import supports

        if supports(recipe):
            host_H, host_y = (H, np.asarray(y)) if on_host else (H.numpy(), y.numpy())
            W, records = _run_group_fused(runs, host_H, host_y, k, steps, times, advance)
            return (W if on_host else torch.from_numpy(W)), records
    parts: dict[tuple[bytes, bytes], list[int]] = {}
    host_H, host_y = (H, np.asarray(y)) if on_host else (H.cpu().numpy(), y.cpu().numpy())
    for r in range(len(runs)):
        parts.setdefault((host_H[r].tobytes(), host_y[r].tobytes()), []).append(r)
    share = None if advance is None else (lambda count: advance(count / len(parts)))  # the bar counts one group
    W, records = None, None
    for members in parts.values():
        first = members[0]
        W_part, part_records = run_group([runs[r] for r in members], H[first], y[first], k, steps, times, share,
                                         engine)
        if W is None:
            shape = (len(runs),) + tuple(W_part.shape[1:])
            W = np.empty(shape) if on_host else torch.empty(shape, dtype=W_part.dtype, device=W_part.device)
            records = [{key: np.empty((len(runs),) + value.shape[1:], dtype=value.dtype) for key, value in row.items()}
                       for row in part_records]
        W[members if on_host else torch.as_tensor(members, device=W.device)] = W_part
        for row, part_row in zip(records, part_records):
            for key, value in part_row.items():
                row[key][members] = value
    return W, records


def _run_group_fused(runs: Sequence[ResolvedRun], H: np.ndarray, y: np.ndarray, k: int, steps: int,
                     times: np.ndarray, advance=None) -> tuple[np.ndarray, list[dict[str, np.ndarray]]]:
    """:func:`run_group` with the compiled kernels: one call per segment between checkpoints, measured in
    numpy (:mod:`rates.numeric.fused.measure`), so that this path imports no torch (full batch; a mini-batch group
    draws its batches from torch's generator, :mod:`rates.numeric.fused.group`). ``H`` (n, d) for every run, or
    (R, n, d): each run's own data."""
    from rates.numeric.fused.group import FusedGroup
    from rates.numeric.fused.measure import NumpyMeasure

    group = FusedGroup(runs, H, y, k)
    if any(r.spec.init_scale for r in runs):
        group.W[...] = initial_weights(runs, k, group.W.shape[2])
    measure = NumpyMeasure(H, y, k, runs[0].recipe.norm, REPORTED_NORMS)
    records = []
    for t in times.tolist():
        group.advance_to(int(t), advance)
        records.append(measure(group.W))
    group.advance_to(steps, advance)
    return group.W.copy(), records


def _run_group_gemm_compiled(stepper_class: Any, runs: Sequence[ResolvedRun], H: np.ndarray, y: np.ndarray, k: int,
                             steps: int, times: np.ndarray,
                             advance=None) -> tuple[np.ndarray, list[dict[str, np.ndarray]]]:
    """:func:`run_group` for the GEMM stepper's compiled loops (CPU): plain SignGD
    (:class:`rates.numeric.gemm.SignSteps`) or plain steepest descent for another built-in norm
    (:class:`rates.numeric.gemm.SteepestSteps`), on one BLAS thread, measured in numpy as the fused path is."""
    import scipy.linalg.cython_blas  # noqa: F401  (the BLAS the compiled loop calls: loaded before it is limited)

    from rates.numeric.fused.measure import NumpyMeasure

    group = stepper_class(runs, H, y, k)
    if any(r.spec.init_scale for r in runs):
        group.W[...] = initial_weights(runs, k, group.W.shape[2])
    measure = NumpyMeasure(H, y, k, runs[0].recipe.norm, REPORTED_NORMS)
    records = []
    with one_blas_thread():
        for t in times.tolist():
            group.advance_to(int(t), advance)
            records.append(measure(group.W))
        group.advance_to(steps, advance)
    return group.W.copy(), records


def _run_group_graphed(stepper_class: Any, optimizer: Any, W: torch.Tensor, measure: _Measure, steps: int,
                       times: np.ndarray, advance=None) -> tuple[torch.Tensor, list[dict[str, np.ndarray]]]:
    """:func:`run_group` on cuda by replaying recorded steps (:mod:`rates.numeric.graphed`)."""
    records = []
    with torch.inference_mode():
        stepper = stepper_class(optimizer, W)
        for t in times.tolist():
            stepper.advance_to(int(t), advance)
            records.append(measure(stepper.W))
        stepper.advance_to(steps, advance)
    return stepper.W, records


@contextlib.contextmanager
def single_thread_on_cpu(device: torch.device) -> Iterator[None]:
    """Run the step loop on one CPU thread.

    Per-step kernels here are tiny (k x n blocks for R runs); with several OpenMP/MKL threads a 3x5 by 5x30
    product was measured at ~0.5-3 ms (barrier spinning on a loaded 2-core machine) against ~9 us on one
    thread. One thread also keeps reductions in one fixed order, which bit-for-bit reproducibility needs.
    """
    if device.type != "cpu":
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def one_blas_thread() -> Any:
    """NumPy's BLAS on one thread for the GEMM stepper (:mod:`rates.numeric.gemm`): one thread per group, as every
    other stepper here, for the most steps per CPU second on a shared 2-core machine and a fixed order of sums."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _config(resolved: ResolvedRun, data: Any, steps: int, device: torch.device) -> RunConfig:
    from rates.symbolic.theorems.hypotheses import (
        data_facts,  # the gate's constants (B, n, d, k, orthogonal) travel along
    )

    return config_of_run(resolved.spec, resolved.algorithm, resolved.schedule, resolved.recipe.batch,
                         resolved.recipe.source, data.name, steps, device, data_facts(data))


def prepare_draw(data: str, seed: int, norms: Sequence[str]) -> Any:
    """Draw ``data`` with ``seed`` (:func:`rates.numeric.data.parse_data`) and solve every max margin a run on it needs:
    each norm of ``norms`` (the runs' own) and the references of :func:`rates.numeric.measures.max_margin_references`.
    The solutions stay in this process's caches, where :func:`simulate_draws` finds them."""
    from rates.numeric.data import parse_data

    return solve_margins(parse_data(data, seed=seed), norms)


def solve_margins(dataset: Any, norms: Sequence[str]) -> Any:
    """Solve every max margin a run on ``dataset`` needs (into this process's caches); returns ``dataset``."""
    for norm in dict.fromkeys(norms):
        max_margin(dataset, norm)
    max_margin_references(dataset, required=norms)
    return dataset


def _prepare_in_worker(data: str, seed: int, norms: tuple[str, ...]) -> Optional[tuple[Any, dict, dict]]:
    """:func:`prepare_draw` in a worker process: the dataset and every solution held for it, or None when
    anything failed (the caller then prepares that draw itself, so an error surfaces as it would serially)."""
    from rates.numeric.margins import data_digest, solved_for
    from rates.numeric.measures import faces_of

    try:
        dataset = prepare_draw(data, seed, norms)
    except Exception:  # noqa: BLE001 - re-raised by the caller's own attempt, in draw order
        return None
    return dataset, solved_for(dataset), faces_of(data_digest(dataset.H, dataset.y))


def prepare_draws(data: str, seeds: Sequence[int], norms: Sequence[str], workers: Optional[int] = None,
                  serial_seconds: Optional[float] = None) -> list[Any]:
    """:func:`prepare_draw` for every seed, in order; the datasets are returned and their max margins held in
    this process's caches, bit for bit what preparing them here would give (same code, same bytes).

    When the draws would take longer than :data:`PARALLEL_PREPARE_SECONDS` one after another
    (``serial_seconds``: the caller's estimate, e.g. one draw's time times the count) and ``workers`` is above
    1, ``workers - 1`` processes take draws from the end of the list while this process takes them from the
    front, until they meet. ``workers`` defaults to the cores this process may use when the machine has one to
    spare (1-minute load average below the cores minus a half; on a busy machine a second process only adds its
    start-up), else 1.
    """
    from rates.numeric.fused.group import available_cores

    norms = tuple(dict.fromkeys(norms))
    if workers is None:
        cores = available_cores()
        workers = cores if os.getloadavg()[0] < cores - 0.5 else 1
    workers = int(workers)
    if workers < 2 or len(seeds) < 2 or not (serial_seconds or 0.0) > PARALLEL_PREPARE_SECONDS:
        return [prepare_draw(data, seed, norms) for seed in seeds]
    import concurrent.futures
    import concurrent.futures.process
    import multiprocessing

    from rates.numeric.margins import remember
    from rates.numeric.measures import remember_faces

    # spawn, not fork: this process may hold numba's and torch's thread pools, which a forked child inherits
    # in an undefined state
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers - 1,
                                                  mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {index: pool.submit(_prepare_in_worker, data, seeds[index], norms)
                   for index in reversed(range(len(seeds)))}
        datasets: dict[int, Any] = {}
        for index in range(len(seeds)):
            if futures[index].cancel():  # not yet taken by a worker: prepare it here
                datasets[index] = prepare_draw(data, seeds[index], norms)
        for index in range(len(seeds)):
            if index in datasets:
                continue
            try:
                prepared = futures[index].result()
            except concurrent.futures.process.BrokenProcessPool:  # e.g. a main script without a __main__ guard
                prepared = None
            if prepared is None:
                datasets[index] = prepare_draw(data, seeds[index], norms)
                continue
            dataset, solved, faces = prepared
            remember(solved)
            remember_faces(faces)
            datasets[index] = dataset
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [datasets[index] for index in range(len(seeds))]


def simulate(specs: Sequence[RunSpec], data: Any, steps: int, checkpoints: int = 60, device: str = "auto",
             progress: bool = False, engine: str = "auto") -> Trajectory:
    """Run every spec on ``data`` for ``steps`` steps; the Trajectory lists runs in the order of ``specs``.

    Bad input raises :class:`InputError` before any step is taken (and so before any file is written).
    """
    return simulate_draws(specs, [data], steps, checkpoints, device, progress, engine)


def simulate_draws(specs: Sequence[RunSpec], datasets: Sequence[Any], steps: int, checkpoints: int = 60,
                   device: str = "auto", progress: bool = False, engine: str = "auto") -> Trajectory:
    """Run every spec on every dataset (draws of a generated dataset, typically) for ``steps`` steps, all in
    one call: runs of one recipe on datasets of one shape form one group, advanced together whatever their
    data (:func:`run_group` with per-run data). The Trajectory lists the runs dataset by dataset, each in
    the order of ``specs``; each run is bit for bit what it is in a call of its own.

    ``meta`` times the whole call's stepping (every group, every dataset, checkpoint measures included):
    ``wall_s``, ``cpu_s`` (this process's CPU seconds over the same span, all threads) and
    ``config_steps_per_s`` = runs x steps / ``wall_s``.
    Bad input raises :class:`InputError` before any step is taken (and so before any file is written).
    """
    check("steps", steps)
    check("checkpoints", checkpoints)
    if not specs:
        raise InputError("algo", "no run configuration given")
    if not datasets:
        raise InputError("data", "no dataset given")
    # the default CPU run decides its device without torch (device_for_work), so that it never imports it
    dev: Any = device_for_work(device, step_work(specs, datasets))
    stepper = resolve_engine(engine, dev)
    # (dataset index, resolved run) per run, dataset by dataset
    plan = [(number, resolve_spec(spec, data.n)) for number, data in enumerate(datasets) for spec in specs]
    resolved = [r for _, r in plan]
    if stepper == "fused":
        from rates.numeric.fused.group import supports

        if not all(supports(r.recipe) for r in resolved):
            stepper = "fused, torch for norm kinds without kernels"
    chosen = {group_stepper(engine, dev, r.recipe, int(datasets[number].k), int(datasets[number].d),
                            int(datasets[number].n)) for number, r in plan}
    if "gemm" in chosen and stepper != "gemm":
        stepper = "gemm" if chosen == {"gemm"} else f"{stepper}, gemm for full-batch runs on large data"
    elif stepper == "graph":
        from rates.numeric.graphed import graphable

        if not all(graphable(r.recipe) for r in resolved):
            stepper = "graph, torch for recipes it cannot record"
    gammas = [{norm: max_margin(data, norm) for norm in dict.fromkeys(r.algorithm.norm for r in resolved)}
              for data in datasets]
    times = checkpoint_times(int(steps), int(checkpoints))

    # numpy on the CPU (run_group converts for the torch stepper only), tensors on cuda
    Hs = [np.ascontiguousarray(np.asarray(data.H), dtype=np.float64) for data in datasets]
    ys = [np.ascontiguousarray(np.asarray(data.y), dtype=np.int64) for data in datasets]

    # a group: one recipe on datasets of one shape (n, d, k); one engine call per group, unless its runs' own
    # copies of the data would pass PER_RUN_DATA_BYTES: then one call per dataset
    groups: dict[tuple, list[int]] = {}
    for i, (number, r) in enumerate(plan):
        groups.setdefault((r.recipe, Hs[number].shape, int(datasets[number].k)), []).append(i)
    calls: list[tuple[int, list[int]]] = []
    for (_, (n, d), k), members in groups.items():
        numbers = [plan[i][0] for i in members]
        if len(set(numbers)) == 1 or len(members) * (n * d + n) * 8 <= PER_RUN_DATA_BYTES:
            calls.append((k, members))
        else:
            calls += [(k, [i for i in members if plan[i][0] == number]) for number in dict.fromkeys(numbers)]

    def group_data(members: list[int]) -> tuple[Any, Any]:
        numbers = [plan[i][0] for i in members]
        if len(set(numbers)) == 1:  # one dataset: the kernels' shared-samples path
            H, y = Hs[numbers[0]], ys[numbers[0]]
        else:
            H, y = np.stack([Hs[j] for j in numbers]), np.stack([ys[j] for j in numbers])
        if device_type(dev) != "cpu":
            H, y = torch.as_tensor(H).to(dev), torch.as_tensor(y).to(dev)
        return H, y

    records: list[Optional[list[dict[str, np.ndarray]]]] = [None] * len(plan)
    positions: list[int] = [0] * len(plan)
    started, started_cpu = time.perf_counter(), time.process_time()
    with progress_bar(steps * len(calls), "steps", progress) as advance:
        for k, members in calls:
            H, y = group_data(members)
            _, group_records = run_group([resolved[i] for i in members], H, y, k, int(steps), times, advance, engine)
            for position, i in enumerate(members):
                records[i], positions[i] = group_records, position
    wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu

    from rates.numeric.measures import bias_reference

    norms = {r.algorithm.norm for r in resolved}
    per_dataset = [max_margin_references(data, required=norms) for data in datasets]
    runs = []
    for i, (number, r) in enumerate(plan):
        data = datasets[number]
        references, skipped = per_dataset[number]
        rows, p = records[i], positions[i]
        column = {key: np.array([row[key][p] for row in rows], dtype=float) for key in rows[0]}
        gamma = gammas[number][r.algorithm.norm]
        margins = {name: column[f"margin:{name}"] for name in REPORTED_NORMS}
        run_references = dict(references)
        bias = bias_reference(data, r.algorithm.norm)
        if bias is not None:
            run_references[BIAS_KEY] = bias
        margin_errors, cosines = checkpoint_measures(column["W"], margins, run_references)
        runs.append(Run(
            config=_config(r, data, steps, dev),
            gamma={"value": float(gamma.gamma), "norm": gamma.norm, "solver": gamma.solver,
                   "accuracy": float(gamma.accuracy)},
            t=times.copy(), gap=float(gamma.gamma) - column["margin"], margin=column["margin"],
            log_loss=column["log_loss"], norm=column["norm"],
            margins=margins, margin_errors=margin_errors, cosines=cosines,
            references={**{name: {"name": name, "skipped": why} for name, why in skipped.items()},
                        **{name: ref.to_json() for name, ref in run_references.items()}},
            weights=column["W"],
        ))
    first = datasets[0]
    meta = {"engine": "rates.numeric.engine.simulate", "stepper": stepper, "steps": int(steps), "device": str(dev),
            "dtype": "float64",
            "data": {"name": first.name, "n": int(first.n), "d": int(first.d), "k": int(first.k)},
            "groups": len(groups), "runs": len(plan), "wall_s": wall, "cpu_s": cpu,
            "config_steps_per_s": len(plan) * steps / max(wall, 1e-12)}
    if len(datasets) > 1:
        meta["datasets"] = len(datasets)
    return Trajectory(runs=runs, meta=meta)
