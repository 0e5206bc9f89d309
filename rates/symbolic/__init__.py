"""The symbolic layer: what the theorems predict, in sympy, before any run.

Owns the learning-rate schedules and their partial sums (:mod:`~rates.symbolic.schedules`), the dominant-term
analysis of a bound per regime of ``a`` (:mod:`~rates.symbolic.asymptotics`), the source papers
(:mod:`~rates.symbolic.papers`) and one module per theorem family with its template, hypotheses and source
(:mod:`~rates.symbolic.theorems`; :func:`rates.symbolic.theorems.predict` is the entry point).

May import: the foundation modules of :mod:`rates` only (norms, schedule, errors, cache). Nothing here runs
an optimiser; the numeric layer and everything after it read this one.
"""
