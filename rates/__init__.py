"""rates: predict, run, fit and check implicit-bias rates of steepest-descent optimisers.

Layers (see DESIGN.md): theorems (sympy) -> Prediction; engine (torch) -> Trajectory;
comparator -> Verdict; proofs -> CheckResult.
"""

__version__ = "0.1.0"
