"""What ``rates homogeneous`` accepts, checked without torch: the names of the algorithms, losses, data,
initialisation rules and subgradient signals, and the optimiser constants (FLAVORS eq. 1 steepest descent, Adam
eq. 75, Shampoo).

The modules that train (:mod:`~rates.numeric.homogeneous.steepest`, ``models``, ``measures``, ``data``,
``train``) import torch, seconds before the first check could run; they read their names from here, and the
command checks every option here first, so a bad value is refused at once.
"""

from __future__ import annotations

import math
from typing import Optional

from rates.errors import InputError

STEEPEST_ALGORITHMS = ("gd", "sd", "cd", "spectral")
SHAMPOO_ALGORITHMS = ("shampoo", "shampoo-no-acc")
ALGORITHMS = (*STEEPEST_ALGORITHMS, "adam", *SHAMPOO_ALGORITHMS)
LOSSES = ("exp", "logistic")
INIT_RULES = ("fan-in", "width")
SUBGRADIENTS = ("gradient", "two-point")


def check_algorithm(algorithm: str, option: str = "algo") -> str:
    if algorithm not in ALGORITHMS:
        raise InputError(option, f"must be one of {'|'.join(ALGORITHMS)}, got {algorithm!r}")
    return algorithm


def check_loss(loss: str) -> str:
    if loss not in LOSSES:
        raise InputError("loss", f"must be one of {'|'.join(LOSSES)}, got {loss!r}")
    return loss


def check_optimizer_constants(lr: float, eps: float, beta1: float, beta2: float, subgradient: str,
                              adam: bool) -> None:
    """The learning rate and signal of every algorithm; Adam's constants where the algorithm is Adam."""
    if not (lr > 0 and math.isfinite(lr)):
        raise InputError("lr", f"must be a finite number > 0, got {lr}")
    if subgradient not in SUBGRADIENTS:
        raise InputError("subgradient", f"must be one of {'|'.join(SUBGRADIENTS)}, got {subgradient!r}")
    if adam:
        check_adam_constants(beta1, beta2, eps)


def check_adam_constants(beta1: float, beta2: float, eps: float) -> None:
    if not (0.0 <= beta1 < 1.0):
        raise InputError("beta1", f"must be in [0, 1), got {beta1}")
    if not (0.0 <= beta2 < 1.0):
        raise InputError("beta2", f"must be in [0, 1), got {beta2}")
    if not (eps >= 0.0 and math.isfinite(eps)):
        raise InputError("eps", f"must be a finite number >= 0, got {eps}")


def parse_data_spec(spec: str) -> tuple[str, Optional[tuple[int, int]]]:
    """``teacher-student`` -> ("teacher-student", None); ``digits:3,6`` -> ("digits", (3, 6))."""
    text = str(spec).strip().lower()
    if text == "teacher-student":
        return "teacher-student", None
    if text.startswith("digits:"):
        parts = text[len("digits:"):].split(",")
        try:
            pair = tuple(int(p) for p in parts)
        except ValueError:
            pair = ()
        if len(pair) != 2 or not all(0 <= p <= 9 for p in pair) or pair[0] == pair[1]:
            raise InputError("data", f"digits:A,B needs two different digits in 0..9, got {spec!r}")
        return "digits", pair
    raise InputError("data", f"must be teacher-student or digits:A,B (A, B in 0..9), got {spec!r}")


def check_device_name(device: str) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (whether cuda is there is the trainer's to say)."""
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise InputError("device", f"must be auto, cpu or cuda[:N], got {device!r}")
    return device
