"""Matrix norms on W in R^{k x d}, their duals and steepest directions (torch, batched).

THEORY.md section 1-2 (MINIBATCH Lemma C.1, section 3.1; SIGNADAM eq. 4-5). Two families:

* entry-wise l_p, ``lp:P`` (``max`` = l_inf, ``sum`` = l_1, ``frobenius`` = l_2);
* Schatten-p on singular values, ``schatten:P`` (``spectral`` = S_inf, ``nuclear`` = S_1, S_2 = Frobenius).

The dual of l_p is l_q and of S_p is S_q with 1/p + 1/q = 1. The steepest direction of a signal Z is a
maximiser of <Z, Delta> over the unit ball, so that <Z, Delta> = ||Z||_* and ||Delta|| = 1:

* l_p:  sign(Z) |Z|^(q-1) / ||Z||_q^(q-1)  (max-norm -> sign(Z); sum-norm -> one signed coordinate at the
  largest |Z_jl|, i.e. coordinate descent);
* S_p:  U diag(sigma^(q-1) / ||sigma||_q^(q-1)) V^T (spectral -> U V^T, the polar factor; nuclear -> u_1 v_1^T).

All functions act on the last two axes and broadcast over any leading axes (the engine's runs axis).
Ties (sign 0, repeated singular values) resolve to one maximiser; Z = 0 maps to Delta = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rates.lazy import lazy_module

torch = lazy_module("torch", globals())  # parse_norm serves `rates predict`, which must not wait for torch

from rates.errors import InputError

_ALIASES = {
    "max": ("entrywise", math.inf),
    "linf": ("entrywise", math.inf),
    "sum": ("entrywise", 1.0),
    "l1": ("entrywise", 1.0),
    "frobenius": ("entrywise", 2.0),
    "fro": ("entrywise", 2.0),
    "l2": ("entrywise", 2.0),
    "spectral": ("schatten", math.inf),
    "nuclear": ("schatten", 1.0),
}

KNOWN_NORMS = "max, sum, frobenius, spectral, nuclear, lp:P (entry-wise, 1 <= P <= inf), schatten:P (1 <= P <= inf)"


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


@dataclass(frozen=True)
class Norm:
    """A norm on matrices: ``kind`` is ``entrywise`` or ``schatten``, ``p`` in [1, inf]."""

    kind: str
    p: float

    @property
    def name(self) -> str:
        """Canonical name: the alias when one exists (Schatten-2 is reported as frobenius)."""
        if self.kind == "schatten" and self.p == 2.0:
            return "frobenius"
        for alias in ("max", "sum", "frobenius", "spectral", "nuclear"):
            if _ALIASES[alias] == (self.kind, self.p):
                return alias
        prefix = "lp" if self.kind == "entrywise" else "schatten"
        return f"{prefix}:{_format_p(self.p)}"

    @property
    def q(self) -> float:
        """Conjugate exponent: the dual norm is the same kind with exponent q."""
        return _conjugate(self.p)

    def dual(self) -> "Norm":
        return Norm(self.kind, self.q)

    def __call__(self, W: torch.Tensor) -> torch.Tensor:
        return self.value(W)

    def value(self, W: torch.Tensor) -> torch.Tensor:
        """||W|| over the last two axes."""
        if self.kind == "entrywise":
            return _vector_norm(W.flatten(-2), self.p)
        return _vector_norm(torch.linalg.svdvals(W), self.p)

    def dual_value(self, Z: torch.Tensor) -> torch.Tensor:
        """||Z||_* over the last two axes."""
        return self.dual().value(Z)

    def steepest(self, Z: torch.Tensor, polar: str = "exact", ns_steps: int = 5) -> torch.Tensor:
        """A maximiser Delta of <Z, Delta> over ||Delta|| <= 1.

        ``polar`` only matters for the spectral norm: ``exact`` uses the SVD polar factor the theory
        assumes; ``newton-schulz`` uses Muon's quintic iteration (:func:`newton_schulz_polar`).
        """
        if self.kind == "entrywise":
            return _entrywise_steepest(Z, self.q)
        if math.isinf(self.p) and polar == "newton-schulz":
            return newton_schulz_polar(Z, steps=ns_steps)
        if polar not in ("exact", "newton-schulz"):
            raise InputError("--polar", f"must be exact or newton-schulz, got {polar!r}")
        return _schatten_steepest(Z, self.q)


MAX_FINITE_P = 1000.0  # largest finite P (and P/(P-1)) the margin solver represents


def parse_norm(name: str, option: str = "--norm") -> Norm:
    """``max``, ``sum``, ``frobenius``, ``spectral``, ``nuclear``, ``lp:P`` or ``schatten:P``."""
    key = str(name).strip().lower()
    if key in _ALIASES:
        kind, p = _ALIASES[key]
        return Norm(kind, p)
    prefix, _, exponent = key.partition(":")
    if prefix in ("lp", "schatten") and exponent:
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
        return Norm("entrywise" if prefix == "lp" else "schatten", p)
    raise InputError(option, f"unknown norm {name!r}; known: {KNOWN_NORMS}")


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


def _schatten_steepest(Z: torch.Tensor, q: float) -> torch.Tensor:
    """Maximiser for the Schatten-p ball, p = conjugate of q, from the SVD of Z."""
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
_NS_COEFFS = (3.4445, -4.7750, 2.0315)


def newton_schulz_polar(Z: torch.Tensor, steps: int = 5) -> torch.Tensor:
    """Approximate polar factor U V^T of Z by Muon's quintic Newton-Schulz iteration."""
    a, b, c = _NS_COEFFS
    transpose = Z.shape[-2] > Z.shape[-1]
    X = Z.transpose(-2, -1) if transpose else Z
    fro = torch.linalg.matrix_norm(X, ord="fro", keepdim=True)
    X = X / torch.where(fro > 0, fro, torch.ones_like(fro))
    for _ in range(steps):
        A = X @ X.transpose(-2, -1)
        X = a * X + (b * A + c * A @ A) @ X
    return X.transpose(-2, -1) if transpose else X
