"""What the user reads: tables (LaTeX booktabs, Markdown, JSON), figures, claims tables.

Owns the table model and its renderers (:mod:`~rates.output.tables`), the fit figures
(:mod:`~rates.output.plots`) and the claims table of a study (:mod:`~rates.output.claims`).

May import: the foundation modules, :mod:`rates.symbolic`, :mod:`rates.numeric` and :mod:`rates.judge`.
"""
