"""Fused multi-step kernels (numba/LLVM, CPU): all configurations of a group advance many steps per call.

Setting: the CPU engine's speed. The torch engine spends ~40 us of Python and per-kernel overhead on a step of ~5 kflop;
here a whole segment between two checkpoints is one compiled call, configurations spread over one thread
per core and, within a thread, computed 64 at a time in the lanes of SIMD vectors.

* :mod:`rates.numeric.fused.kernels` -- the compiled step of every recipe (log-domain gradient, reshuffled
  batches, VR, momentum, Adam eps = 0 / eps > 0, every steepest direction of :mod:`rates.norms`); the
  gradient, shared by all recipes, is laid out with the configuration as the innermost array axis so
  that it vectorises across configurations (the module docstring says why and what it measured);
* :mod:`rates.numeric.fused.group` -- the driver: per-run arrays, epoch permutations from the torch generator,
  chunked calls, one thread per core.
* :mod:`rates.numeric.fused.products` -- ``A B^T`` for a few rows ``A``, in register tiles that read ``B`` in
  place: the GEMM stepper's (:mod:`rates.numeric.gemm`) two products for one or two configurations on many
  features, where a BLAS GEMM spends as long packing the samples as multiplying them.

Why numba: the kernels are loops over k x d x n blocks of a few hundred entries, where a compiled loop is
~10x faster than any sequence of library calls; numba compiles plain Python with LLVM and caches the
machine code on disk (``cache=True``), so only the first use pays the compilation (measured by
``benchmarks/engine_speed.py``). The cache is one user-wide folder keyed by the source's content
(:mod:`rates.numeric.fused.compiled_cache`, installed when this package is imported, before any kernel is
decorated), so a second virtualenv of the same release loads the kernels the first one compiled.

Scope: the CPU path of ``rates.numeric.engine`` (``engine="auto"`` or ``"fused"`` on cpu). On cuda the torch path
(:mod:`rates.numeric.optim`) remains the implementation (no GPU kernel here: no GPU was available to measure one);
it is also kept callable on the CPU (``--engine torch``) as the previous engine that the tests compare
against. The mpmath reference (:mod:`rates.numeric.reference`) stays the independent check of both.

One definition per optimiser: each name is one line of :mod:`rates.numeric.optim.alias`. The torch program (the
cuda path, and ``--engine torch`` on the CPU) is built from those lines piece by piece; these kernels cannot be
built from them, so they are checked against them: ``tests/test_one_definition.py`` runs every registered name
here and on the torch engine against the mpmath reference (whose steps are read from the same pieces) at
each of the first steps, and ``tests/test_fused.py`` over 2,000 steps on harder data. Within the kernels each
recipe is written once: the 64-lane layout is confined to the gradient, and a single configuration runs
through the same code as a block of one lane.
"""

from __future__ import annotations


def _install_compiled_cache() -> None:
    from rates.numeric.fused.compiled_cache import install

    try:
        install()
    except Exception:  # pragma: no cover - numba missing or broken: available() says so, the torch path runs
        return


_install_compiled_cache()


def available() -> bool:
    """Whether numba imports (it is a dependency; a broken install falls back to the torch path)."""
    try:
        import numba  # noqa: F401
    except Exception:  # pragma: no cover - depends on the installation
        return False
    return True
