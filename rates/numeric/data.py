"""Datasets for the multiclass linear setting: Gaussian clusters, orthogonal scale-skewed data, presets, files.

Setting (docs/theory.md section 1, [given]): features ``h_i`` in R^d, labels ``y_i`` in ``{0, ..., k-1}`` with
every class present, linearly separable (SIGNADAM Ass. 3.1; MINIBATCH
Ass. 3.1). Generators:

* :func:`gaussian` -- the synthetic data of SIGNADAM section 7 ("Experiments") and MINIBATCH section 5:
  class centres ``mu_c ~ N(0, I_d)``, points ``h ~ N(mu_c, sigma^2 I_d)``; a draw that is not separable is
  redrawn from the same seeded stream, so the result is deterministic in ``seed``.
* :func:`orthogonal_skewed` -- MINIBATCH section 4.4 / Def. 4.8 / Thm 4.9 (docs/theory.md section 5):
  ``d = k``, ``h_i = s_i e_{y_i}`` with arbitrary scales and class counts.
* :data:`PRESETS` -- named settings; the numbers of the seeds' experiments were lost in the text extraction
  (docs/theory.md, "Read this first"), so each preset records which values the seed states and which are chosen
  here.
* :func:`load_file` -- a user's ``.npz`` (arrays ``H`` or ``X``, and ``y``) or ``.csv`` (features, then the
  label column), validated.

Every failure is an :class:`~rates.errors.InputError` on option ``--data`` with a one-line reason.

Why one module (about 650 lines): every source (generators, presets, scikit-learn sets, LIBSVM/ARFF/npz files)
ends in the same :class:`Dataset` and the same checks (every class present, separable, labels in range), and one
parser (:func:`parse_data`) maps each ``--data`` spec to its source.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from rates import budget
from rates.errors import InputError, NotSeparableError
from rates.numeric.run_parameters import check

OPTION = "data"


@dataclass(frozen=True, eq=False)
class Dataset:
    """Features ``H`` (n, d) float64, labels ``y`` (n,) int64 in ``0..k-1`` (every class present).

    The arrays are private copies of the inputs. They stay writable because torch warns on every
    read-only numpy array it wraps; the max-margin cache hashes the bytes at each call, so it stays valid.
    """

    H: np.ndarray
    y: np.ndarray
    k: int
    name: str
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        H = np.array(self.H, dtype=np.float64, copy=True)
        y = np.array(self.y, dtype=np.int64, copy=True)
        _validate(H, y, self.k, self.name)
        object.__setattr__(self, "H", H)
        object.__setattr__(self, "y", y)

    @property
    def n(self) -> int:
        return int(self.H.shape[0])

    @property
    def d(self) -> int:
        return int(self.H.shape[1])

    def class_counts(self) -> np.ndarray:
        return np.bincount(self.y, minlength=self.k)


def _validate(H: np.ndarray, y: np.ndarray, k: int, name: str) -> None:
    where = f"dataset {name!r}"
    if H.ndim != 2 or H.shape[0] < 2 or H.shape[1] < 1:
        raise InputError(OPTION, f"{where}: features must be an (n, d) array with n >= 2, d >= 1, got shape {H.shape}")
    if y.shape != (H.shape[0],):
        raise InputError(OPTION, f"{where}: {y.size} labels for {H.shape[0]} feature rows")
    if not np.all(np.isfinite(H)):
        raise InputError(OPTION, f"{where}: features contain NaN or infinity")
    if not (isinstance(k, (int, np.integer)) and k >= 2):
        raise InputError(OPTION, f"{where}: need k >= 2 classes, got {k}")
    present = np.unique(y)
    if present.size != k or present[0] != 0 or present[-1] != k - 1:
        missing = sorted(set(range(k)) - set(present.tolist()))
        raise InputError(OPTION, f"{where}: labels must be 0..{k - 1} with every class present "
                                 f"(missing {missing}, found {present.tolist()[:10]})")


def data_bound(ds: Dataset) -> float:
    """``B = max_i ||h_i||_1`` (SIGNADAM Ass. 3.5; MINIBATCH Ass. 3.2, [given])."""
    return float(np.abs(ds.H).sum(axis=1).max())


# ----------------------------------------------------------------------------------------------------------
# generators


DEFAULT_SIGMA = 0.3
DEFAULT_MAX_TRIES = 100


def _separability_margin(H: np.ndarray, y: np.ndarray, k: int) -> float:
    """Max-norm max margin by an exact LP; separability does not depend on the norm (all norms equivalent)."""
    from rates.numeric.margins import max_margin

    probe = _Raw(H, y, k)
    try:
        return max_margin(probe, "max").gamma
    except NotSeparableError:
        return 0.0


@dataclass(frozen=True)
class _Raw:
    H: np.ndarray
    y: np.ndarray
    k: int


def gaussian(k: int, d: int, per_class: int, sigma: float = DEFAULT_SIGMA, seed: int = 0,
             max_tries: int = DEFAULT_MAX_TRIES, name: Optional[str] = None,
             min_gamma: float = 0.0) -> Dataset:
    """Gaussian multiclass data: centres ``mu_c ~ N(0, I_d)``, ``h = mu_c + sigma * N(0, I_d)``.

    Source: SIGNADAM section 7 ("class centers are sampled from a standard
    normal distribution; within each class, data is sampled from a normal distribution ... ensure that
    margin is positive"), [given] in words; MINIBATCH section 5 (i.i.d. Gaussian
    features, separable). A draw whose max-norm max margin is ``<= min_gamma`` is redrawn from the same
    ``numpy.random.default_rng(seed)`` stream; ``meta["tries"]`` counts draws, ``meta["gamma_max"]`` is the
    certified max-norm margin of the accepted draw. After ``max_tries`` failures: NotSeparableError.
    """
    for option, value, low in (("k", k, 2), ("d", d, 1), ("per_class", per_class, 1), ("max_tries", max_tries, 1)):
        if not (isinstance(value, (int, np.integer)) and value >= low):
            raise InputError(OPTION, f"gaussian {option} must be an integer >= {low}, got {value!r}")
    try:
        sigma = float(sigma)
    except (TypeError, ValueError):
        sigma = math.nan
    if not (math.isfinite(sigma) and sigma >= 0):
        raise InputError(OPTION, f"gaussian sigma must be a finite number >= 0, got {sigma!r}")
    if k * per_class < 2:
        raise InputError(OPTION, "gaussian data need at least 2 points")
    budget.check_generated_data(k * per_class, k, d, "gaussian")
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k, dtype=np.int64), per_class)
    label = name or f"gaussian:k={k},d={d},per_class={per_class},sigma={sigma:g},seed={seed}"
    gamma = 0.0
    for tries in range(1, max_tries + 1):
        centres = rng.standard_normal((k, d))
        H = centres[y] + sigma * rng.standard_normal((k * per_class, d))
        gamma = _separability_margin(H, y, k)
        if gamma > min_gamma:
            meta = dict(generator="gaussian", k=k, d=d, per_class=per_class, sigma=float(sigma), seed=seed,
                        tries=tries, gamma_max=gamma, centres=centres.tolist(),
                        source="SIGNADAM sec. 7; MINIBATCH sec. 5")
            return Dataset(H, y, k, label, meta)
    raise NotSeparableError(OPTION, f"{label}: no draw with max-norm margin > {min_gamma:g} in {max_tries} tries "
                                    f"(last gamma {gamma:.3g}); lower sigma, raise d or give more tries")


def orthogonal_skewed(counts: Sequence[int], scales, name: Optional[str] = None) -> Dataset:
    """Orthogonal scale-skewed data (MINIBATCH Def. 4.8 setting, docs/theory.md section 5): ``h_i = s_i e_{y_i}``.

    ``counts[c]`` samples of class c (``d = k = len(counts)``), samples ordered by class. ``scales`` is a
    scalar, a length-k sequence (one scale per class) or a length-n sequence (one per sample, in class
    order); all must be > 0. The max margins depend only on the hardest scale per class
    ``min_{i: y_i = c} s_i`` (recorded as ``meta["hardest_scales"]``), the per-sample bias only on counts.
    """
    counts = [int(c) for c in counts]
    if len(counts) < 2 or min(counts) < 1:
        raise InputError(OPTION, f"orthogonal counts need k >= 2 classes with >= 1 sample each, got {counts}")
    k, n = len(counts), sum(counts)
    budget.check_generated_data(n, k, k, "orthogonal")
    y = np.repeat(np.arange(k, dtype=np.int64), counts)
    s = np.asarray(scales, dtype=np.float64).reshape(-1)
    if s.size == 1:
        s = np.full(n, float(s[0]))
    elif s.size == k and k != n:
        s = s[y]
    elif s.size != n:
        raise InputError(OPTION, f"orthogonal scales: give 1, k = {k} or n = {n} values, got {s.size}")
    if not (np.all(np.isfinite(s)) and np.all(s > 0)):
        raise InputError(OPTION, "orthogonal scales must be finite and > 0")
    H = s[:, None] * np.eye(k)[y]
    hardest = [float(s[y == c].min()) for c in range(k)]
    label = name or "orthogonal:counts=" + "/".join(map(str, counts))
    meta = dict(generator="orthogonal_skewed", counts=counts, scales=s.tolist(), hardest_scales=hardest,
                source="MINIBATCH sec. 4.4, Def. 4.8, Thm 4.9")
    return Dataset(H, y, k, label, meta)


def orthogonal_random(k: int, n: int, seed: int = 0, scale_ranges: Optional[Sequence[tuple[float, float]]] = None,
                      name: Optional[str] = None) -> Dataset:
    """MINIBATCH App. J experiment, as far as it is stated: class counts multinomial (label imbalance),
    each sample's scale uniform on a class-specific range (scale variation). Every class gets >= 1 sample.

    The seed's numbers (n, k, ranges) were lost in extraction; ``scale_ranges`` defaults to
    ``[(0.5 + c, 1 + c)]`` (chosen here) so hardness differs by class.
    """
    if not (k >= 2 and n >= k):
        raise InputError(OPTION, f"orthogonal_random needs k >= 2 and n >= k, got k={k}, n={n}")
    rng = np.random.default_rng(seed)
    probabilities = rng.dirichlet(np.ones(k))
    counts = 1 + rng.multinomial(n - k, probabilities)
    ranges = list(scale_ranges) if scale_ranges is not None else [(0.5 + c, 1.0 + c) for c in range(k)]
    scales = np.concatenate([rng.uniform(*ranges[c], size=counts[c]) for c in range(k)])
    ds = orthogonal_skewed(counts, scales, name=name or f"orthogonal-random:k={k},n={n},seed={seed}")
    ds.meta.update(generator="orthogonal_random", seed=seed, scale_ranges=[list(r) for r in ranges],
                   source="MINIBATCH App. J (Orthogonal Scale-Skewed experiment)")
    return ds


# ----------------------------------------------------------------------------------------------------------
# presets


@dataclass(frozen=True)
class Preset:
    """A named dataset: ``build(seed)`` makes it (``seed=None`` -> the preset's own seed)."""

    name: str
    description: str
    source: str
    stated: str  # what the seed states about this setting
    chosen: str  # what is chosen here because the seed's numbers were lost in extraction
    build: Callable[[Optional[int]], Dataset]

    def __call__(self, seed: Optional[int] = None) -> Dataset:
        ds = self.build(seed)
        ds.meta.update(preset=self.name, preset_source=self.source, preset_stated=self.stated,
                       preset_chosen=self.chosen)
        return ds


def _seeded(default: int, make: Callable[[int], Dataset]) -> Callable[[Optional[int]], Dataset]:
    return lambda seed: make(default if seed is None else seed)


PRESETS: dict[str, Preset] = {
    "default": Preset(
        "default",
        "small Gaussian mixture for the default study: k=3, d=5, 10 per class (n=30), sigma=0.3",
        "SIGNADAM sec. 7",
        "Gaussian class centres N(0, I); within-class normal spread; separable",
        "k=3, d=5, per_class=10, sigma=0.3, seed=0 (small so ~20 configs x 1e6 steps fit in minutes)",
        _seeded(0, lambda seed: gaussian(3, 5, 10, 0.3, seed, name="default")),
    ),
    "signadam": Preset(
        "signadam",
        "SIGNADAM section 7 synthetic data: Gaussian class centres, Gaussian spread, separable",
        "SIGNADAM sec. 7 (Experiments)",
        "centres ~ N(0, I_d); points ~ N(mu_c, sigma^2 I); positive margin ensured",
        "k=5, d=10, per_class=10, sigma=0.5 (the seed's values were lost in extraction)",
        _seeded(0, lambda seed: gaussian(5, 10, 10, 0.5, seed, name="signadam")),
    ),
    "minibatch": Preset(
        "minibatch",
        "MINIBATCH section 5 synthetic data: Gaussian features, linearly separable, equal class sizes",
        "MINIBATCH sec. 5 (Experiment)",
        "k classes with equal samples per class, i.i.d. Gaussian features with a variance, separable",
        "k=4, d=8, per_class=16 (n=64, divisible by batch sizes 1..64 powers of 2), sigma=0.5",
        _seeded(0, lambda seed: gaussian(4, 8, 16, 0.5, seed, name="minibatch")),
    ),
    "orthogonal-imbalanced": Preset(
        "orthogonal-imbalanced",
        "orthogonal scale-skewed data, counts 6/3/1, per-class scales 1/0.5/2 (docs/theory.md section 5)",
        "MINIBATCH sec. 4.4, Def. 4.8, Thm 4.9",
        "d = k, h_i = s_i e_{y_i}, arbitrary scales, possibly unequal class counts",
        "counts 6/3/1 and scales 1/0.5/2 so that frequency and hardness disagree; deterministic",
        lambda seed: orthogonal_skewed([6, 3, 1], [1.0, 0.5, 2.0], name="orthogonal-imbalanced"),
    ),
    "orthogonal-random": Preset(
        "orthogonal-random",
        "MINIBATCH App. J: multinomial class counts, class-specific uniform scale ranges",
        "MINIBATCH App. J",
        "class counts multinomial; scales uniform on class-specific ranges; d = k",
        "k=4, n=40, ranges [0.5+c, 1+c] (the seed's values were lost in extraction)",
        _seeded(0, lambda seed: orthogonal_random(4, 40, seed, name="orthogonal-random")),
    ),
}


# ----------------------------------------------------------------------------------------------------------
# parsing a --data spec and loading files


# scikit-learn's bundled data sets (no download): name -> loader in sklearn.datasets
PUBLIC_SETS = {"digits": "load_digits", "wine": "load_wine", "breast_cancer": "load_breast_cancer",
               "iris": "load_iris"}
# column transforms, written after the data as SPEC+NAME; "scale" keeps separability (a positive diagonal map of
# the features), "standardize" also centres the columns, which a linear classifier without bias can feel
TRANSFORMS = {"standardize": "columns centred to mean 0 and divided by their standard deviation",
              "scale": "columns divided by their standard deviation (not centred: separability unchanged)"}
LIBSVM_SUFFIXES = (".svm", ".libsvm", ".svmlight")

DATA_FORMS = ("PRESET (" + ", ".join(PRESETS) + ") | gaussian:k=K,d=D,per_class=N[,sigma=S][,seed=R] | "
              "orthogonal:counts=C1/C2/...[,scales=S1/S2/...] | sklearn:NAME (" + ", ".join(PUBLIC_SETS) + ") | "
              "FILE.npz (H or X, y) | FILE.csv (features, label) | FILE.arff (OpenML; last attribute the class) | "
              "libsvm:FILE (or FILE" + "/".join(LIBSVM_SUFFIXES) + "); any of them +standardize or +scale")


def parse_data(spec: str, seed: Optional[int] = None) -> Dataset:
    """Build the dataset named by a ``--data`` value; ``seed`` overrides a preset's or generator's seed
    unless the spec gives ``seed=`` itself. A spec ending in ``+standardize`` or ``+scale`` (:data:`TRANSFORMS`)
    is the data before it with that column transform applied (:func:`transformed`)."""
    if seed is not None:  # numpy's generators take non-negative seeds only
        check("seed", seed)
    text = str(spec).strip()
    base, transform = split_transform(text)
    if transform is not None:
        return transformed(parse_data(base, seed), transform)
    _, plus, transform = text.rpartition("+")
    if plus and not Path(text).is_file() and transform.strip() and transform.strip().isidentifier():
        raise InputError(OPTION, f"unknown transform +{transform.strip()}; allowed: "
                                 + ", ".join(f"+{name} ({what})" for name, what in TRANSFORMS.items()))
    if text in PRESETS:
        return PRESETS[text](seed)
    kind, colon, rest = text.partition(":")
    if colon and kind in ("gaussian", "orthogonal"):
        params = _parse_params(rest, kind)
        return _gaussian_from(params, seed) if kind == "gaussian" else _orthogonal_from(params)
    if colon and kind == "sklearn":
        return public_set(rest.strip())
    if colon and kind == "libsvm":
        return load_file(Path(rest.strip()), libsvm=True)
    path = Path(text)
    if path.suffix.lower() in (".npz", ".csv", ".arff") + LIBSVM_SUFFIXES:
        return load_file(path)
    raise InputError(OPTION, f"unknown data {text!r}; allowed: {DATA_FORMS}")


def public_set(name: str) -> Dataset:
    """One of scikit-learn's bundled data sets (:data:`PUBLIC_SETS`), as shipped: features unscaled, labels the
    classes in sklearn's order. Read from the files installed with scikit-learn, never downloaded."""
    if name not in PUBLIC_SETS:
        raise InputError(OPTION, f"unknown public data set sklearn:{name}; allowed: "
                                 + ", ".join(f"sklearn:{known}" for known in PUBLIC_SETS))
    try:
        from sklearn import datasets
    except ImportError:
        raise InputError(OPTION, f"sklearn:{name} needs scikit-learn: pip install scikit-learn") from None
    bunch = getattr(datasets, PUBLIC_SETS[name])()
    originals, y = _label_classes(np.asarray(bunch.target), f"sklearn:{name}")
    meta = dict(generator="sklearn", source=f"sklearn.datasets.{PUBLIC_SETS[name]}", labels=originals,
                class_names=[str(c) for c in getattr(bunch, "target_names", originals)])
    return Dataset(np.asarray(bunch.data, dtype=np.float64), y, len(originals), f"sklearn:{name}", meta)


def transformed(ds: Dataset, transform: str) -> Dataset:
    """``ds`` with its columns standardised (:data:`TRANSFORMS`); a constant column becomes 0 ("standardize") or
    stays as it is ("scale"). ``meta["transform"]`` keeps the name and ``B = max_i ||h_i||_1`` before and after;
    :func:`transform_effect` adds gamma."""
    H = ds.H
    spread = H.std(axis=0)
    divisor = np.where(spread > 0, spread, 1.0)
    centred = H - H.mean(axis=0) if transform == "standardize" else H
    H_new = centred / divisor
    meta = dict(ds.meta)
    meta["transform"] = dict(name=transform, meaning=TRANSFORMS[transform], B_before=data_bound(ds),
                             B_after=float(np.abs(H_new).sum(axis=1).max()), constant_columns=int((spread == 0).sum()))
    return Dataset(H_new, ds.y, ds.k, f"{ds.name}+{transform}", meta)


def split_transform(spec: str) -> tuple[str, Optional[str]]:
    """``("sklearn:wine", "standardize")`` for ``"sklearn:wine+standardize"``; ``(spec, None)`` without one."""
    base, plus, transform = str(spec).strip().rpartition("+")
    if plus and transform.strip() in TRANSFORMS and base.strip():
        return base.strip(), transform.strip()
    return str(spec).strip(), None


def transform_effect(spec: str, seed: Optional[int] = None) -> Optional[str]:
    """One line for a spec with a transform (None without one): what it did to B and to the max-norm max margin
    gamma, both certified by :func:`rates.numeric.margins.max_margin` ("0, not separable" where the LP says so)."""
    base, transform = split_transform(spec)
    if transform is None:
        return None
    before, after = parse_data(base, seed), parse_data(spec, seed)
    info = after.meta["transform"]

    def gamma(data: Dataset) -> str:
        from rates.numeric.margins import max_margin

        try:
            return f"{max_margin(data, 'max').gamma:.6g}"
        except NotSeparableError:
            return "0 (not separable)"

    return (f"+{transform} ({info['meaning']}): B = max_i ||h_i||_1 {info['B_before']:.6g} -> {info['B_after']:.6g}; "
            f"max-norm max margin gamma {gamma(before)} -> {gamma(after)} (both certified by the max-margin LP)")


def _parse_params(rest: str, kind: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise InputError(OPTION, f"{kind}: expected key=value items, got {item!r}")
        params[key.strip()] = value.strip()
    return params


def _int_param(params: dict, key: str, kind: str, default=None) -> int:
    if key not in params:
        if default is None:
            raise InputError(OPTION, f"{kind}: missing {key}=...; form: {DATA_FORMS}")
        return default
    try:
        return int(params.pop(key))
    except ValueError:
        raise InputError(OPTION, f"{kind}: {key} must be an integer") from None


def _float_list(text: str, key: str) -> list[float]:
    try:
        return [float(part) for part in text.split("/")]
    except ValueError:
        raise InputError(OPTION, f"orthogonal: {key} must be numbers separated by '/', got {text!r}") from None


def _gaussian_from(params: dict[str, str], seed: Optional[int]) -> Dataset:
    params = dict(params)
    k = _int_param(params, "k", "gaussian")
    d = _int_param(params, "d", "gaussian")
    per_class = _int_param(params, "per_class", "gaussian")
    seed_value = _int_param(params, "seed", "gaussian", default=0 if seed is None else seed)
    try:
        sigma = float(params.pop("sigma", DEFAULT_SIGMA))
    except ValueError:
        raise InputError(OPTION, "gaussian: sigma must be a number") from None
    if params:
        raise InputError(OPTION, f"gaussian: unknown keys {sorted(params)}; allowed: k, d, per_class, sigma, seed")
    return gaussian(k, d, per_class, sigma, seed_value)


def _orthogonal_from(params: dict[str, str]) -> Dataset:
    params = dict(params)
    if "counts" not in params:
        raise InputError(OPTION, f"orthogonal: missing counts=C1/C2/...; form: {DATA_FORMS}")
    counts = _float_list(params.pop("counts"), "counts")
    if not all(c == int(c) for c in counts):
        raise InputError(OPTION, "orthogonal: counts must be integers")
    scales = _float_list(params.pop("scales"), "scales") if "scales" in params else [1.0]
    if params:
        raise InputError(OPTION, f"orthogonal: unknown keys {sorted(params)}; allowed: counts, scales")
    return orthogonal_skewed([int(c) for c in counts], scales)


CSV_LAYOUT = ("CSV layout: one sample per row, the feature columns first and the integer class label in the last "
              "column; comma-separated, UTF-8. An optional first header row is recognised by a non-numeric cell "
              "(x1,x2,label). A first row of column numbers (0,1,2,... as pandas writes by default) and a leading "
              "index column are refused, never guessed: write with pandas' index=False and named columns, or with "
              "numpy.savetxt. Labels are integers (any values; mapped in sorted order onto 0..k-1) of at most 2^53 "
              "in size; features are finite real numbers.")
MAX_LABEL = 2**53  # beyond it a float64 label is no longer a unique integer (1e19 also overflows int64)


def load_file(path, libsvm: bool = False) -> Dataset:
    """Load ``.npz`` (arrays ``H`` or ``X``, and ``y``), ``.csv`` (:data:`CSV_LAYOUT`), ``.arff`` (OpenML's
    format: numeric attributes, the last attribute the class) or a LIBSVM/svmlight file (``libsvm=True`` or a
    suffix of :data:`LIBSVM_SUFFIXES`). Labels may be any integers up to 2^53 in size (an ARFF class may be any
    nominal value); they are mapped in sorted order onto ``0..k-1`` (``meta["labels"]`` keeps the originals)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(OPTION, f"data file {str(path)!r} does not exist or is not a regular file")
    suffix = path.suffix.lower()
    if libsvm or suffix in LIBSVM_SUFFIXES:
        H, labels = _read_libsvm(path)
    elif suffix == ".npz":
        H, labels = _read_npz(path)
    elif suffix == ".csv":
        H, labels = _read_csv(path)
    elif suffix == ".arff":
        H, labels = _read_arff(path)
    else:
        raise InputError(OPTION, f"data file {path.name!r}: expected .npz, .csv, .arff or a LIBSVM file "
                                 f"(libsvm:FILE)")
    if H.ndim != 2:
        raise InputError(OPTION, f"{path.name}: features must be 2-D (n, d), got shape {H.shape}")
    if labels.ndim != 1 or labels.shape[0] != H.shape[0]:
        raise InputError(OPTION,
                         f"{path.name}: need one label per row, got {labels.shape} labels for {H.shape[0]} rows")
    if not np.all(np.isfinite(H)):
        raise InputError(OPTION, f"{path.name}: features contain NaN or infinity")
    originals, y = _label_classes(labels, path.name)
    if len(originals) < 2:
        raise InputError(OPTION, f"{path.name}: need at least 2 classes, found labels {originals}")
    meta = dict(generator="file", path=str(path), labels=originals)
    return Dataset(H, y.astype(np.int64), len(originals), path.name, meta)


def _label_classes(labels: np.ndarray, name: str) -> tuple[list[int], np.ndarray]:
    """Sorted distinct integer labels and each row's class index; refuse non-integers and labels beyond 2^53."""
    if labels.dtype.kind in "iu":
        if labels.size and max(abs(int(labels.min())), abs(int(labels.max()))) > MAX_LABEL:
            raise InputError(OPTION, f"{name}: labels must be integers of at most 2^53 in size, got {labels.max()}")
    elif labels.dtype.kind == "f":
        if not (np.all(np.isfinite(labels)) and np.all(labels == np.round(labels))):
            raise InputError(OPTION, f"{name}: labels (the last column) must be integers")
        if labels.size and np.abs(labels).max() > MAX_LABEL:
            raise InputError(OPTION, f"{name}: labels must be integers of at most 2^53 in size, got "
                                     f"{np.abs(labels).max():.4g}")
    else:
        raise InputError(OPTION, f"{name}: labels must be integers, got {labels.dtype} values")
    originals, y = np.unique(labels.astype(np.int64), return_inverse=True)
    return [int(v) for v in originals], y.reshape(-1)


def _real(array: np.ndarray, what: str, name: str) -> np.ndarray:
    """A real float64 array; complex values are refused, not truncated to their real part."""
    if np.iscomplexobj(array):
        raise InputError(OPTION, f"{name}: {what} are complex numbers; give real values")
    try:
        return np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(OPTION, f"{name}: {what} must be numeric, got {array.dtype} values") from None


def _read_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            names = set(archive.files)
            feature_key = "H" if "H" in names else "X" if "X" in names else None
            if feature_key is None or "y" not in names:
                raise InputError(OPTION, f"{path.name}: needs arrays 'H' (or 'X') and 'y', found {sorted(names)}")
            H, labels = archive[feature_key], archive["y"]
    except InputError:
        raise
    except Exception as exc:  # zip/pickle/format errors all mean "not a readable npz"
        raise InputError(OPTION, f"{path.name}: not a readable .npz file ({type(exc).__name__})") from None
    labels = np.asarray(labels).reshape(-1)
    if labels.dtype.kind not in "iuf":
        labels = _real(labels, "labels", path.name)
    return _real(H, "features", path.name), labels


def _read_libsvm(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A LIBSVM/svmlight file by scikit-learn's reader; the sparse features are made dense (the engine's layout),
    after checking that they fit in memory."""
    from sklearn.datasets import load_svmlight_file

    try:
        X, labels = load_svmlight_file(str(path))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(OPTION, f"{path.name}: not a readable LIBSVM file ({str(err).splitlines()[0][:80]})") from None
    classes = np.unique(labels).size
    budget.check_generated_data(X.shape[0], max(classes, 2), X.shape[1], path.name)
    return np.asarray(X.toarray(), dtype=np.float64), np.asarray(labels)


def _read_arff(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """An ARFF file (OpenML's download format) by scipy's reader: every attribute but the last numeric, the last one
    the class (nominal, or numeric with integer values); nominal classes map onto 0..k-1 in sorted order."""
    from scipy.io import arff

    try:
        records, info = arff.loadarff(str(path))
    except (ValueError, NotImplementedError, arff.ArffError, UnicodeDecodeError) as err:
        raise InputError(OPTION, f"{path.name}: not an ARFF file scipy can read ({str(err).splitlines()[0][:80]})"
                         ) from None
    names, types = info.names(), info.types()
    if len(names) < 2:
        raise InputError(OPTION, f"{path.name}: need at least one feature attribute and the class attribute")
    nominal = [name for name, kind in zip(names[:-1], types[:-1]) if kind != "numeric"]
    if nominal:
        raise InputError(OPTION, f"{path.name}: features must be numeric; nominal attributes {nominal[:5]} "
                                 "(encode them first, e.g. one-hot)")
    H = np.column_stack([np.asarray(records[name], dtype=np.float64) for name in names[:-1]])
    target = records[names[-1]]
    if types[-1] == "nominal":
        values = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in target])
        if np.any(values == "?"):
            raise InputError(OPTION, f"{path.name}: the class attribute {names[-1]!r} has missing values ('?')")
        _, labels = np.unique(values, return_inverse=True)
        return H, labels.reshape(-1)
    return H, np.asarray(target, dtype=np.float64)


def _read_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            rows = [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    except UnicodeDecodeError as err:
        raise InputError(OPTION, f"{path.name}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset "
                                 f"{err.start}); save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None
    except csv.Error as err:
        raise InputError(OPTION, f"{path.name}: not a readable CSV file ({err})") from None
    for delimiter, name in ((";", "semicolons (;)"), ("\t", "tabs")):  # a spreadsheet's export in some locales
        if any(delimiter in cell for row in rows[:2] for cell in row):
            raise InputError(OPTION, f"{path.name}: its columns are separated by {name}; rates reads comma-separated "
                                     f"values with '.' decimals: save it as CSV with ',' as the delimiter")
    if rows and not _numeric_row(rows[0]):
        if not rows[0][0].strip():
            raise InputError(OPTION, f"{path.name}: the header starts with an empty cell, as pandas writes its index "
                                     f"column; write the file with index=False")
        rows = rows[1:]  # a header line
    elif len(rows) > 1 and _column_numbers(rows[0]):
        raise InputError(OPTION, f"{path.name}: the first row {','.join(c.strip() for c in rows[0])[:60]} looks like "
                                 f"pandas' default column names, not a sample; name the columns (x1,...,label) "
                                 f"or drop the header row")
    if len(rows) < 2:
        raise InputError(OPTION, f"{path.name}: need at least 2 data rows")
    widths = {len(row) for row in rows}
    if len(widths) != 1 or widths.pop() < 2:
        raise InputError(OPTION,
                         f"{path.name}: every row needs the same number (>= 2) of columns: features, then label")
    for number, row in enumerate(rows, start=1):
        if not _numeric_row(row):
            cell = next(c for c in row if not _is_real(c))
            if _is_complex(cell):
                raise InputError(OPTION, f"{path.name}: data row {number} holds the complex number "
                                         f"{cell.strip()[:30]!r}; features must be real")
            raise InputError(OPTION, f"{path.name}: data row {number} is not numeric (cell {cell.strip()[:30]!r})")
    features = np.array([[float(cell) for cell in row[:-1]] for row in rows])
    labels = np.array([_label_value(row[-1], path.name, number) for number, row in enumerate(rows, start=1)])
    return features, labels


def _label_value(cell: str, name: str, number: int) -> float:
    text = cell.strip()
    try:  # integers exactly, so 10**19 is seen as too large rather than rounded
        value = int(text)
    except ValueError:
        value = float(text)
        if not (math.isfinite(value) and value == round(value)):
            raise InputError(OPTION, f"{name}: data row {number}: label {text[:30]!r} is not an integer") from None
    if abs(value) > MAX_LABEL:
        raise InputError(OPTION, f"{name}: data row {number}: label {text[:30]} is beyond 2^53")
    return float(value)


def _column_numbers(row: list[str]) -> bool:
    """``0,1,2,...`` or ``1,2,3,...``: column numbers as pandas/R write them, not a sample."""
    try:
        values = [int(cell.strip()) for cell in row]
    except ValueError:
        return False
    return len(values) >= 2 and values in (list(range(len(values))), list(range(1, len(values) + 1)))


def _is_complex(cell: str) -> bool:
    try:
        complex(cell.strip().replace(" ", ""))
    except ValueError:
        return False
    return True


def _is_real(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _numeric_row(row: list[str]) -> bool:
    return all(_is_real(cell) for cell in row)
