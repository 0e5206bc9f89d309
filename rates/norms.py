"""Matrix norms on W in R^{k x d}, their duals and steepest directions (torch, batched).

Setting: docs/theory.md sections 1-2 (MINIBATCH Lemma C.1, section 3.1; SIGNADAM eq. 4-5). Two kinds:

* entry-wise l_p, ``lp:P`` (``max`` = l_inf, ``sum`` = l_1, ``frobenius`` = l_2);
* Schatten-p on singular values, ``schatten:P`` (``spectral`` = S_inf, ``nuclear`` = S_1, S_2 = Frobenius).

The dual of l_p is l_q and of S_p is S_q with 1/p + 1/q = 1. The steepest direction of a signal Z is a
maximiser of <Z, Delta> over the unit ball, so that <Z, Delta> = ||Z||_* and ||Delta|| = 1:

* l_p:  sign(Z) |Z|^(q-1) / ||Z||_q^(q-1)  (max-norm -> sign(Z); sum-norm -> one signed coordinate at the
  largest |Z_jl|, i.e. coordinate descent);
* S_p:  U diag(sigma^(q-1) / ||sigma||_q^(q-1)) V^T (spectral -> U V^T, the polar factor; nuclear -> u_1 v_1^T).

Algorithm: a norm kind is one subclass of :class:`Norm` carrying everything the rest of the library asks of
a norm: ``value`` (torch; ``value_array``, the same in numpy, for the fused CPU path), ``dual``, ``steepest``
(torch), ``cvxpy`` (its conic expression, for the max-margin solver) and ``steepest_mp`` (mpmath, for the
high-precision reference). :func:`register_norm` makes a kind known, so adding a norm kind is one decorated
class (docs/extending.md); :func:`parse_norm` reads ``PREFIX:P`` for every registered kind and the aliases
each kind declares.

All torch functions act on the last two axes and broadcast over any leading axes (the engine's runs axis).
Ties (sign 0, repeated singular values) resolve to one maximiser; Z = 0 maps to Delta = 0.

>>> parse_norm("max").dual().name, parse_norm("spectral").dual().name, parse_norm("lp:3").q
('sum', 'nuclear', 1.5)
>>> W = torch.tensor([[3.0, -4.0], [0.0, 0.0]])
>>> [float(parse_norm(name).value(W)) for name in ("max", "sum", "frobenius", "spectral", "nuclear")]
[4.0, 7.0, 5.0, 5.0, 5.0]
>>> Z = torch.tensor([[1.0, -2.0], [0.5, 0.0]])
>>> norm = parse_norm("lp:3")
>>> bool(torch.isclose(inner(Z, norm.steepest(Z)), norm.dual_value(Z)))  # <Z, Delta> = ||Z||_*
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import mpmath as mp

from rates.errors import InputError
from rates.lazy import lazy_module

torch = lazy_module("torch", globals())  # parse_norm serves `rates predict`, which must not wait for torch

POLAR_METHODS = ("exact", "newton-schulz")


def _conjugate(p: float) -> float:
    if p == 1.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def _format_p(p: float) -> str:
    if math.isinf(p):
        return "inf"
    return str(int(p)) if float(p).is_integer() else repr(p)


NORM_KINDS: dict[str, type[Norm]] = {}  # kind name ("entrywise", "schatten", ...) -> class, see register_norm


def register_norm(cls: type[Norm]) -> type[Norm]:
    """Class decorator: make a :class:`Norm` subclass known to :func:`parse_norm` (and so to every command)."""
    NORM_KINDS[cls.kind] = cls
    return cls


@dataclass(frozen=True)
class Norm:
    """A norm on matrices, ``p`` in [1, inf]; one subclass per kind (entry-wise, Schatten, ...).

    A subclass sets ``kind`` (its registry name), ``prefix`` (the ``PREFIX:P`` spelling) and ``aliases``
    (names for particular ``p``), and implements ``value``, ``steepest`` and, where it has them, ``cvxpy`` and
    ``steepest_mp``. Everything else (dual, dual value, name, parsing, margins) follows.
    """

    p: float
    kind: ClassVar[str] = ""
    prefix: ClassVar[str] = ""
    aliases: ClassVar[dict[str, float]] = {}
    polyhedral: ClassVar[bool] = False  # unit ball a polytope for every p this kind allows: the solver uses LPs

    # -- naming ---------------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """Canonical name: an alias when one exists (Schatten-2 is reported as frobenius), else ``prefix:P``."""
        for kind in NORM_KINDS.values():
            for alias, p in kind.aliases.items():
                if (kind.kind, p) == (self.kind, self.p) or (alias == "frobenius" and self.is_frobenius):
                    return alias
        return f"{self.prefix}:{_format_p(self.p)}"

    @property
    def q(self) -> float:
        """Conjugate exponent: the dual norm is the same kind with exponent q."""
        return _conjugate(self.p)

    @property
    def is_frobenius(self) -> bool:
        """True when this norm is the Frobenius norm (entry-wise l_2 = Schatten-2): a Euclidean unit ball."""
        return False

    def dual(self) -> Norm:
        return type(self)(self.q)

    # -- values and steepest directions (torch) -------------------------------------------------------------
    def __call__(self, W: torch.Tensor) -> torch.Tensor:
        return self.value(W)

    def value(self, W: torch.Tensor) -> torch.Tensor:
        """||W|| over the last two axes."""
        raise NotImplementedError

    def dual_value(self, Z: torch.Tensor) -> torch.Tensor:
        """||Z||_* over the last two axes."""
        return self.dual().value(Z)

    def value_array(self, W: Any) -> Any:
        """||W|| over the last two axes of a float64 numpy array: the same formula as :meth:`value`, for the
        fused CPU path's checkpoints, which do not import torch (a kind without it runs on the torch path)."""
        raise NotImplementedError(f"no numpy value for the {self.name} norm")

    def steepest(self, Z: torch.Tensor, polar: str = "exact", ns_steps: int = 5) -> torch.Tensor:
        """A maximiser Delta of <Z, Delta> over ||Delta|| <= 1 (``polar``: see :class:`SchattenNorm`)."""
        raise NotImplementedError

    # -- the max-margin solver and the mpmath reference ------------------------------------------------------
    @property
    def has_conic_form(self) -> bool:
        """Whether :meth:`cvxpy` can express this norm (the max-margin solver needs it unless polyhedral)."""
        return True

    def cvxpy(self, matrix: Any, vectorised: Any) -> Any:
        """The cvxpy expression of ``||matrix||`` (``vectorised`` is the same variable as a vector)."""
        raise NotImplementedError(f"no conic form for the {self.name} norm")

    def face_points(self, Z: Any) -> list:
        """Extra maximisers of <Z, W> on the unit ball worth scoring in the margin solver (numpy arrays)."""
        return []

    def steepest_mp(self, Z: list) -> list:
        """The steepest direction of an mpmath matrix (list of rows), in the working precision."""
        raise ValueError(f"the mpmath reference has no steepest direction for the {self.name} norm")


@register_norm
@dataclass(frozen=True)
class EntrywiseNorm(Norm):
    """Entry-wise l_p: ``(sum_jl |W_jl|^p)^(1/p)``; ``max`` (p = inf), ``sum`` (p = 1), ``frobenius`` (p = 2)."""

    kind: ClassVar[str] = "entrywise"
    prefix: ClassVar[str] = "lp"
    aliases: ClassVar[dict[str, float]] = {"max": math.inf, "linf": math.inf, "sum": 1.0, "l1": 1.0,
                                            "frobenius": 2.0, "fro": 2.0, "l2": 2.0}

    @property
    def polyhedral(self) -> bool:  # type: ignore[override]
        return self.p in (1.0, math.inf)

    @property
    def is_frobenius(self) -> bool:
        return self.p == 2.0

    def value(self, W: torch.Tensor) -> torch.Tensor:
        return _vector_norm(W.flatten(-2), self.p)

    def value_array(self, W: Any) -> Any:
        return _vector_norm_array(W.reshape(*W.shape[:-2], -1), self.p)

    def steepest(self, Z: torch.Tensor, polar: str = "exact", ns_steps: int = 5) -> torch.Tensor:
        return _entrywise_steepest(Z, self.q)

    def cvxpy(self, matrix: Any, vectorised: Any) -> Any:
        import cvxpy as cp

        if self.p == 2.0:
            return cp.norm(vectorised, 2)
        if math.isinf(self.p):
            return cp.norm(vectorised, "inf")
        if self.p == 1.0:
            return cp.norm(vectorised, 1)
        return cp.pnorm(vectorised, self.p)

    def steepest_mp(self, Z: list) -> list:
        k, d = len(Z), len(Z[0])
        if math.isinf(self.p):
            return [[mp.sign(v) for v in row] for row in Z]
        if self.p == 1.0:
            c, j = max(((c, j) for c in range(k) for j in range(d)), key=lambda cj: abs(Z[cj[0]][cj[1]]))
            out = _mp_zeros(k, d)
            out[c][j] = mp.sign(Z[c][j])
            return out
        return _mp_lq_direction(Z, self.q)


@register_norm
@dataclass(frozen=True)
class SchattenNorm(Norm):
    """Schatten-p on the singular values; ``spectral`` (p = inf), ``nuclear`` (p = 1); Schatten-2 = Frobenius."""

    kind: ClassVar[str] = "schatten"
    prefix: ClassVar[str] = "schatten"
    aliases: ClassVar[dict[str, float]] = {"spectral": math.inf, "nuclear": 1.0}

    @property
    def is_frobenius(self) -> bool:
        return self.p == 2.0

    def value(self, W: torch.Tensor) -> torch.Tensor:
        finite, safe = _finite_matrices(W)
        values = _vector_norm(torch.linalg.svdvals(safe), self.p)
        return torch.where(finite, values, torch.full_like(values, math.nan))

    def value_array(self, W: Any) -> Any:
        import numpy as np

        W = np.asarray(W)
        finite = np.isfinite(W).all(axis=(-2, -1))
        # a diverged matrix (inf / NaN entries) has no singular values: its norm is NaN, not an SVD error
        values = _vector_norm_array(np.linalg.svd(np.where(finite[..., None, None], W, 0.0), compute_uv=False),
                                    self.p)
        return np.where(finite, values, np.nan)

    def steepest(self, Z: torch.Tensor, polar: str = "exact", ns_steps: int = 5) -> torch.Tensor:
        """``polar`` only matters for the spectral norm: ``exact`` uses the SVD polar factor the theory
        assumes; ``newton-schulz`` uses Muon's quintic iteration (:func:`newton_schulz_polar`)."""
        if math.isinf(self.p) and polar == "newton-schulz":
            return newton_schulz_polar(Z, steps=ns_steps)
        if polar not in POLAR_METHODS:
            raise InputError("polar", f"must be exact or newton-schulz, got {polar!r}")
        return _schatten_steepest(Z, self.q)

    @property
    def has_conic_form(self) -> bool:
        return self.p in (1.0, 2.0, math.inf)

    def cvxpy(self, matrix: Any, vectorised: Any) -> Any:
        import cvxpy as cp

        if math.isinf(self.p):
            return cp.sigma_max(matrix)
        if self.p == 1.0:
            return cp.normNuc(matrix)
        if self.p == 2.0:
            return cp.norm(vectorised, 2)
        return super().cvxpy(matrix, vectorised)

    def face_points(self, Z: Any) -> list:
        """Spectral: the polar factor of Z on its clearly positive singular values.

        ``Z(lambda)`` of the margin dual always has ``1^T Z = 0`` (rank <= k-1) and an inexact lambda turns the
        zero singular values into ~1e-6 noise that the exact-polar steepest direction would keep with weight 1;
        dropping them gives a point of the optimal face (up to the free null-space block).
        """
        if not math.isinf(self.p):
            return []
        import numpy as np

        U, sigma, Vh = np.linalg.svd(Z, full_matrices=False)
        keep = sigma > 1e-6 * sigma.max()
        return [(U[:, keep] @ Vh[keep]) if keep.any() else Z]

    def steepest_mp(self, Z: list) -> list:
        k, d = len(Z), len(Z[0])
        if self.p == 2.0:
            return _mp_lq_direction(Z, self.q)
        U, S, V = mp.svd_r(mp.matrix(Z))
        sigma = [S[i] for i in range(len(S))]
        cut = max(sigma) * mp.mpf(10) ** (-mp.mp.dps // 2)  # exact zeros come out of the SVD as ~10^-dps
        if math.isinf(self.p):  # the polar factor on the positive singular values
            weights = [mp.mpf(1) if s > cut else mp.mpf(0) for s in sigma]
        elif self.p == 1.0:  # nuclear: the top singular pair
            top = max(range(len(sigma)), key=lambda i: sigma[i])
            weights = [mp.mpf(1) if i == top else mp.mpf(0) for i in range(len(sigma))]
        else:
            q = mp.mpf(self.q)
            kept = [s if s > cut else mp.mpf(0) for s in sigma]
            denom = mp.fsum(s ** q for s in kept) ** ((q - 1) / q)
            weights = [s ** (q - 1) / denom if denom > 0 else mp.mpf(0) for s in kept]
        rank = [i for i in range(len(sigma)) if weights[i] != 0]
        return [[mp.fsum(U[c, i] * weights[i] * V[i, j] for i in rank) for j in range(d)] for c in range(k)]


def known_norms() -> str:
    """The accepted spellings, for messages: each kind's canonical aliases and its ``prefix:P``.

    >>> known_norms()
    'max, sum, frobenius, lp:P (entrywise, 1 <= P <= inf), spectral, nuclear, schatten:P (schatten, 1 <= P <= inf)'
    """
    parts = []
    for kind in NORM_KINDS.values():
        parts += [alias for alias, p in kind.aliases.items() if kind(p).name == alias]
        parts.append(f"{kind.prefix}:P ({kind.kind}, 1 <= P <= inf)")
    return ", ".join(parts)


MAX_FINITE_P = 1000.0  # largest finite P (and P/(P-1)) the margin solver represents


def parse_norm(name: str, option: str = "norm") -> Norm:
    """``max``, ``sum``, ``frobenius``, ``spectral``, ``nuclear``, ``lp:P``, ``schatten:P`` or another kind's
    ``PREFIX:P``; ``option`` names the parameter an error is reported against.

    >>> parse_norm("schatten:inf") == parse_norm("spectral"), parse_norm("lp:2").name
    (True, 'frobenius')
    """
    key = str(name).strip().lower()
    for kind in NORM_KINDS.values():
        if key in kind.aliases:
            return kind(kind.aliases[key])
    prefix, _, exponent = key.partition(":")
    kinds = {kind.prefix: kind for kind in NORM_KINDS.values()}
    if prefix in kinds and exponent:
        try:
            p = math.inf if exponent in ("inf", "infinity") else float(exponent)
        except ValueError:
            p = math.nan
        if not (p >= 1.0):
            raise InputError(option, f"{prefix}:P needs 1 <= P <= inf, got {name!r}")
        if math.isfinite(p) and p != 1.0 and not (1 + 1 / MAX_FINITE_P <= p <= MAX_FINITE_P):
            # cvxpy approximates P and its conjugate by fractions with denominator <= 1024: lp:1e6 divides by 0
            raise InputError(option, f"{prefix}:P needs P = 1, {1 + 1 / MAX_FINITE_P:g} <= P <= {MAX_FINITE_P:g} "
                                     f"or P = inf, got {name!r}")
        return kinds[prefix](p)
    raise InputError(option, f"unknown norm {name!r}; known: {known_norms()}")


def _mp_zeros(k: int, d: int) -> list:
    return [[mp.mpf(0) for _ in range(d)] for _ in range(k)]


def _mp_lq_direction(Z: list, q: float) -> list:
    """``sign(Z) |Z|^(q-1) / ||Z||_q^(q-1)`` entry by entry in mpmath (entry-wise l_p, 1 < p < inf)."""
    q = mp.mpf(q)
    total = mp.fsum(abs(v) ** q for row in Z for v in row)
    if total == 0:
        return _mp_zeros(len(Z), len(Z[0]))
    scale = total ** ((q - 1) / q)
    return [[mp.sign(v) * abs(v) ** (q - 1) / scale for v in row] for row in Z]


def inner(Z: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Frobenius inner product <Z, W> = tr(Z^T W) over the last two axes."""
    return (Z * W).sum(dim=(-2, -1))


def _vector_norm(x: torch.Tensor, p: float) -> torch.Tensor:
    if math.isinf(p):
        return x.abs().amax(dim=-1)
    if p == 1.0:
        return x.abs().sum(dim=-1)
    # Scale by the largest entry so that |x|^p neither overflows nor underflows for large p.
    scale = x.abs().amax(dim=-1, keepdim=True)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    return (x.abs() / safe).pow(p).sum(dim=-1).pow(1.0 / p) * scale.squeeze(-1)


def _vector_norm_array(x: Any, p: float) -> Any:
    """:func:`_vector_norm` on a numpy array, operation for operation."""
    import numpy as np

    if math.isinf(p):
        return np.abs(x).max(axis=-1)
    if p == 1.0:
        return np.abs(x).sum(axis=-1)
    scale = np.abs(x).max(axis=-1, keepdims=True)
    safe = np.where(scale > 0, scale, 1.0)
    return ((np.abs(x) / safe) ** p).sum(axis=-1) ** (1.0 / p) * scale[..., 0]


def _entrywise_steepest(Z: torch.Tensor, q: float) -> torch.Tensor:
    """Maximiser for the entry-wise l_p ball, p = conjugate of q."""
    if q == 1.0:  # p = inf: sign descent
        return torch.sign(Z)
    if q == 2.0:  # Frobenius: Z / ||Z||_F; the generic pow path below costs ~20x more per step
        tiny = torch.finfo(Z.dtype).tiny  # Z = 0 gives 0 / tiny = 0, the documented Delta for Z = 0
        flat = Z.flatten(-2)
        scaled = flat / flat.abs().amax(dim=-1, keepdim=True).clamp_min_(tiny)
        fro = torch.linalg.vector_norm(scaled, dim=-1, keepdim=True).clamp_min_(tiny)
        return scaled.div_(fro).reshape(Z.shape)
    if math.isinf(q):  # p = 1: one coordinate of largest magnitude (coordinate descent)
        flat = Z.flatten(-2)
        index = flat.abs().argmax(dim=-1, keepdim=True)
        out = torch.zeros_like(flat)
        out.scatter_(-1, index, torch.sign(flat.gather(-1, index)))
        return out.reshape(Z.shape)
    flat = Z.flatten(-2)
    scale = flat.abs().amax(dim=-1, keepdim=True)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    u = flat.abs() / safe
    powered = u.pow(q - 1.0)
    denom = u.pow(q).sum(dim=-1, keepdim=True).pow((q - 1.0) / q)
    out = torch.sign(flat) * powered / torch.where(denom > 0, denom, torch.ones_like(denom))
    return out.reshape(Z.shape)


def _finite_matrices(Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Which matrices of the batch ``Z`` (..., k, d) are finite, and ``Z`` with the others zeroed: the SVD raises
    on a diverged run's inf / NaN entries, so those get NaN results instead (no host sync: no data-dependent
    branch)."""
    finite = torch.isfinite(Z).all(dim=-1).all(dim=-1)
    return finite, torch.where(finite[..., None, None], Z, torch.zeros_like(Z))


def _schatten_steepest(Z: torch.Tensor, q: float) -> torch.Tensor:
    """Maximiser for the Schatten-p ball, p = conjugate of q, from the SVD of Z (NaN for a non-finite Z: a
    diverged run stays diverged, :func:`_finite_matrices`)."""
    finite, safe = _finite_matrices(Z)
    return torch.where(finite[..., None, None], _schatten_steepest_finite(safe, q), torch.full_like(Z, math.nan))


def _schatten_steepest_finite(Z: torch.Tensor, q: float) -> torch.Tensor:
    U, sigma, Vh = torch.linalg.svd(Z, full_matrices=False)
    if q == 1.0:  # spectral: polar factor on the positive singular values
        tol = sigma.amax(dim=-1, keepdim=True) * (max(Z.shape[-2:]) * torch.finfo(Z.dtype).eps)
        weights = (sigma > tol).to(Z.dtype)
    elif math.isinf(q):  # nuclear: top singular pair
        weights = torch.zeros_like(sigma)
        weights[..., 0] = (sigma[..., 0] > 0).to(Z.dtype)
    else:
        top = sigma.amax(dim=-1, keepdim=True)
        safe = torch.where(top > 0, top, torch.ones_like(top))
        u = sigma / safe
        denom = u.pow(q).sum(dim=-1, keepdim=True).pow((q - 1.0) / q)
        weights = u.pow(q - 1.0) / torch.where(denom > 0, denom, torch.ones_like(denom))
    return (U * weights.unsqueeze(-2)) @ Vh


# Muon's quintic Newton-Schulz coefficients (Jordan et al., 2024): fast, approximate orthogonalisation
# whose singular values land near 1 (not exactly), which is why the exact polar factor is the default.
NS_COEFFS = (3.4445, -4.7750, 2.0315)


def newton_schulz_polar(Z: torch.Tensor, steps: int = 5) -> torch.Tensor:
    """Approximate polar factor U V^T of Z by Muon's quintic Newton-Schulz iteration."""
    a, b, c = NS_COEFFS
    transpose = Z.shape[-2] > Z.shape[-1]
    X = Z.transpose(-2, -1) if transpose else Z
    fro = torch.linalg.matrix_norm(X, ord="fro", keepdim=True)
    X = X / torch.where(fro > 0, fro, torch.ones_like(fro))
    for _ in range(steps):
        A = X @ X.transpose(-2, -1)
        X = a * X + (b * A + c * A @ A) @ X
    return X.transpose(-2, -1) if transpose else X
