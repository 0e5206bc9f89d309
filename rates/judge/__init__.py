"""The comparator: a Trajectory against a Prediction gives a verdict.

Owns the slope fits, windows and envelope verdicts of rate theorems (:mod:`~rates.judge.compare`), the
limit-direction judge of the per-sample theorem and its prediction on a dataset
(:mod:`~rates.judge.limit_direction`), and how tight a bound's constants are (:mod:`~rates.judge.tightness`).

May import: the foundation modules, :mod:`rates.symbolic` and :mod:`rates.numeric`. Never writes a table.
"""
