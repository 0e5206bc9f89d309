"""Executable lemma claims for ``rates check`` (issue 5).

* :mod:`proofs.claims` -- the Claim type (statement, source, [given]/[rebuilt], domain, problems) and results;
* methods: :mod:`proofs.symbolic` (sympy), :mod:`proofs.interval` (mpmath ``iv`` + bisection, rigorous),
  :mod:`proofs.adversarial` (seeded random starts + scipy Nelder-Mead on LHS/RHS);
* lemma families: :mod:`proofs.softmax`, :mod:`proofs.proxy`, :mod:`proofs.gradient`, :mod:`proofs.stochastic`,
  :mod:`proofs.schedule`, :mod:`proofs.homogeneous`, :mod:`proofs.per_sample`;
* :mod:`proofs.registry` (all claims, lookup by name) and :mod:`proofs.runner` (run, table, JSON, saved instances).

Findings (rebuilt constants a counterexample broke): ``proofs/FINDINGS.md``.
"""
