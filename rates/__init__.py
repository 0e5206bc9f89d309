"""rates: predict, run, fit and check implicit-bias rates of steepest-descent optimisers.

Layers (see docs/design.md): theorems (sympy) -> Prediction; engine (torch) -> Trajectory;
comparator -> Verdict; proofs -> CheckResult.
"""

__version__ = "0.1.0"
