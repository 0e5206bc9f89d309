"""The numeric layer: datasets, max margins and the optimisers' runs, in float64 on CPU or CUDA.

Owns datasets (:mod:`~rates.numeric.data`), losses, certified max-margin programs
(:mod:`~rates.numeric.margins`), the measures taken at checkpoints (:mod:`~rates.numeric.measures`),
optimisers as compositions of transforms (:mod:`~rates.numeric.optim`), the named algorithms
(:mod:`~rates.numeric.algorithms`), the engines that run them (:mod:`~rates.numeric.engine` with the fused
numba kernels :mod:`~rates.numeric.fused` and CUDA graphs :mod:`~rates.numeric.graphed`), the exact mpmath
reference runs (:mod:`~rates.numeric.reference`), the batch executor (:mod:`~rates.numeric.tasks`) and its
duration estimate (:mod:`~rates.numeric.duration`), the homogeneous networks of FLAVORS
(:mod:`~rates.numeric.homogeneous`) and the run's record (:mod:`~rates.numeric.trajectory`).

May import: the foundation modules and :mod:`rates.symbolic` (a run names the theorem family that covers
it and carries the data constants its hypotheses read). Never a verdict, a table or a study.
"""
