"""Named optimisers as one-line compositions: the one definition of every algorithm ``rates`` runs.

Setting: docs/theory.md section 2 (MINIBATCH section 3.1, SIGNADAM eq. 3-5). Every algorithm is a chain
*signal -> [momentum] -> steepest direction for a norm | Adam -> step size*, the optax habit of
docs/design.md: ``signum`` is ``chain(full_gradient(), momentum(), steepest_direction("max"),
scale_by_schedule())``. A line of :data:`OPTIMISERS` is the whole definition of a name; everything else
derives from it or is checked against it:

* :mod:`rates.numeric.algorithms` reads a name's norm and pieces from here (``rates predict`` / ``run`` /
  ``fit`` accept the name, and its theorem family follows from the pieces);
* :func:`rates.numeric.optim.compose.build` turns each piece of a run's composition into its torch transform
  (:mod:`rates.numeric.optim.transforms`, :mod:`~rates.numeric.optim.sources`); the CUDA graphs of
  :mod:`rates.numeric.graphed` replay that torch program;
* :func:`rates.numeric.reference.config_of` turns each piece into its mpmath step (the independent
  expectation), and the fused kernels (:mod:`rates.numeric.fused`) run the same recipe compiled;
  ``tests/test_one_definition.py`` runs every registered name on every CPU engine against that reference,
  step by step, so a name added here is checked without editing a test.

The pieces carry no numbers: a run's hyper-parameters (beta, Adam's betas and eps, eta0, a, the batch size)
come from its configuration (``rates.numeric.engine.RunSpec``), so one composition serves a whole sweep. This
module is torch-free (``rates predict`` reads it and must not wait for torch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

SOURCES = ("full", "minibatch", "vr")


@dataclass(frozen=True)
class Piece:
    """One stage of a composition: ``role`` is ``source``, ``momentum``, ``adam``, ``direction`` or
    ``schedule``; ``kind`` is the source's kind (``full``, ``minibatch``, ``vr``) or the direction's norm
    (None: the run's ``--norm``); ``over`` is the signal a variance-reduced source corrects."""

    role: str
    kind: Optional[str] = None
    over: Optional[str] = None


def full_gradient() -> Piece:
    """``grad L(W_t)`` over all n samples."""
    return Piece("source", "full")


def reshuffled_batches() -> Piece:
    """The mean gradient over the step's batch; each epoch splits a fresh permutation into n/b batches."""
    return Piece("source", "minibatch")


def variance_reduced(signal: Piece) -> Piece:
    """SVRG-style ``grad_B(W_t) - grad_B(W~) + grad L(W~)`` (MINIBATCH Thm 4.6) in place of ``signal``."""
    return Piece("source", "vr", over=signal.kind)


def momentum() -> Piece:
    """``M_t = beta M_{t-1} + (1 - beta) Z_t`` from ``M_{-1} = 0`` (MINIBATCH section 3.1)."""
    return Piece("momentum")


def adam() -> Piece:
    """Bias-corrected Adam (SIGNADAM eq. 3); its geometry is the max-norm (SIGNADAM Thm 6.3)."""
    return Piece("adam", "max")


def steepest_direction(norm: Optional[str] = None) -> Piece:
    """``argmax_{||D|| <= 1} <Z, D>`` for ``norm`` (:meth:`rates.norms.Norm.steepest`); None: the run's norm."""
    return Piece("direction", norm)


def scale_by_schedule() -> Piece:
    """``eta_t = eta0 (t + 2)^(-a)``."""
    return Piece("schedule")


@dataclass(frozen=True)
class Composition:
    """A validated chain of pieces: one source, optional momentum, a direction or Adam, the schedule."""

    pieces: tuple[Piece, ...]

    def _role(self, role: str) -> Optional[Piece]:
        return next((piece for piece in self.pieces if piece.role == role), None)

    @property
    def source(self) -> str:
        return self.pieces[0].kind

    @property
    def norm(self) -> Optional[str]:
        """The geometry: the direction's norm (Adam's is the max-norm); None leaves it to ``--norm``."""
        return (self._role("direction") or self._role("adam")).kind

    @property
    def momentum(self) -> bool:
        return self._role("momentum") is not None

    @property
    def adam(self) -> bool:
        return self._role("adam") is not None

    @property
    def vr(self) -> bool:
        return self.source == "vr"

    @property
    def stochastic(self) -> bool:
        """Whether the signal is a mini-batch one (the run must give ``--batch``)."""
        return self.source == "minibatch" or self.pieces[0].over == "minibatch"

    def transforms(self) -> tuple[Piece, ...]:
        """The pieces after the source, in order."""
        return self.pieces[1:]


def chain(*pieces: Piece) -> Composition:
    """Compose pieces as ``optax.chain`` does; refuses a chain outside the framework of docs/theory.md
    section 2 (``source, [momentum], direction | adam, schedule``)."""
    roles = [piece.role for piece in pieces]
    if roles not in (["source", "direction", "schedule"], ["source", "momentum", "direction", "schedule"],
                     ["source", "adam", "schedule"]):
        raise ValueError(f"a composition is source, [momentum], direction | adam, schedule; got {roles}")
    if pieces[0].kind not in SOURCES or (pieces[0].kind == "vr" and pieces[0].over not in ("full", "minibatch")):
        raise ValueError(f"unknown gradient source {pieces[0]}")
    return Composition(tuple(pieces))


def with_variance_reduction(composition: Composition) -> Composition:
    """The same chain with its signal variance reduced (the ``vr-`` twin of a name)."""
    return Composition((variance_reduced(composition.pieces[0]),) + composition.pieces[1:])


def for_run(composition: Composition, source: str, norm: str, momentum_on: bool) -> Composition:
    """The chain a resolved run executes: its name's chain with the run's options applied (what
    :class:`rates.numeric.recipe.Recipe` carries). ``source`` is the signal the batch size and ``--vr`` chose
    (``full``, ``minibatch`` or ``vr``; a variance-reduced run always corrects mini-batches), ``norm`` the
    resolved norm of the direction, ``momentum_on`` whether beta > 0 (``--momentum`` adds or removes the
    piece). Every other piece of the name's chain is kept where it is."""
    head = {"full": full_gradient(), "minibatch": reshuffled_batches(),
            "vr": variance_reduced(reshuffled_batches())}[source]
    rest = []
    for piece in composition.transforms():
        if piece.role == "momentum":
            continue
        if piece.role == "direction":
            rest += [momentum()] if momentum_on else []
            piece = steepest_direction(norm)
        rest.append(piece)
    return chain(head, *rest)


# One line per name: adding an optimiser is adding a line (or register_optimiser from outside the package).
OPTIMISERS: dict[str, Composition] = {
    "signgd": chain(full_gradient(), steepest_direction("max"), scale_by_schedule()),
    "ngd": chain(full_gradient(), steepest_direction("frobenius"), scale_by_schedule()),
    "spectral-gd": chain(full_gradient(), steepest_direction("spectral"), scale_by_schedule()),
    "cd": chain(full_gradient(), steepest_direction("sum"), scale_by_schedule()),
    "nsd": chain(full_gradient(), steepest_direction(None), scale_by_schedule()),
    "signum": chain(full_gradient(), momentum(), steepest_direction("max"), scale_by_schedule()),
    "muon": chain(full_gradient(), momentum(), steepest_direction("spectral"), scale_by_schedule()),
    "momentum-ngd": chain(full_gradient(), momentum(), steepest_direction("frobenius"), scale_by_schedule()),
    "adam": chain(full_gradient(), adam(), scale_by_schedule()),
    "signsgd": chain(reshuffled_batches(), steepest_direction("max"), scale_by_schedule()),
    "nsgd": chain(reshuffled_batches(), steepest_direction("frobenius"), scale_by_schedule()),
    "spectral-sgd": chain(reshuffled_batches(), steepest_direction("spectral"), scale_by_schedule()),
}
# Every stochastic or momentum name has a variance-reduced twin (MINIBATCH Thm 4.6 covers them all).
OPTIMISERS.update({f"vr-{name}": with_variance_reduction(composition) for name, composition in list(OPTIMISERS.items())
                   if composition.stochastic or composition.momentum})


def register_optimiser(name: str, composition: Composition) -> Composition:
    """Make ``name`` known to ``predict``, ``run``, ``fit``, the engines and the reference test, e.g.
    ``register_optimiser("signum-sum", chain(full_gradient(), momentum(), steepest_direction("sum"),
    scale_by_schedule()))`` (docs/extending.md)."""
    if not isinstance(composition, Composition):
        raise TypeError(f"register {name!r} with a chain(...) of pieces, got {composition!r}")
    OPTIMISERS[name.strip().lower()] = composition
    return composition


__all__ = ["Piece", "Composition", "chain", "full_gradient", "reshuffled_batches", "variance_reduced", "momentum",
           "adam", "steepest_direction", "scale_by_schedule", "OPTIMISERS", "register_optimiser",
           "with_variance_reduction", "for_run"]
