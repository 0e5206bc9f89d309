"""rates: predict, run, fit and check implicit-bias rates of steepest-descent optimisers.

The package is the pipeline, one subpackage per stage; a stage imports only the stages before it
(``tests/test_repository.py`` enforces the order, docs/design.md draws it)::

    rates.symbolic  -> rates.numeric -> rates.judge -> rates.output -> rates.studies -> rates.sweep
    (predictions)      (trajectories)   (verdicts)     (tables,         (runs + fits +     (grids over
                                                         figures)         tables per paper)   a cluster)
    -> rates.plugins (the public API of plug-ins, which registers into every stage)

The modules at this level are the foundation every stage may use: the norms that define the geometry
(:mod:`rates.norms`), schedules and exponent parsing (:mod:`rates.schedule`), errors, the on-disk cache, resource
budgets, atomic file writes, progress bars and lazy imports. They import no subpackage.
"""

__version__ = "0.1.0"

# The order of the pipeline's stages: a module in stage i may import stage j only for j <= i (the
# foundation modules above are stage -1 and import nothing from a stage).
# rates.plugins, the public plug-in API, registers into every stage, so it comes last.
STAGES = ("symbolic", "numeric", "judge", "output", "studies", "sweep", "plugins")
