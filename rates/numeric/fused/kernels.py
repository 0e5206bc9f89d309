"""Compiled step kernels: every recipe of the engine, many steps per call, 64 configurations side by side.

Setting: docs/theory.md sections 1, 2 and 7; the same algorithms as :mod:`rates.numeric.optim` (signal -> [momentum] ->
steepest direction | Adam -> ``W <- W - eta_t * direction``, ``eta_t = eta0 (t+2)^-a``), float64.

Algorithm: :func:`advance` moves every configuration of a group from step ``t0`` to ``t1`` without returning
to Python. Each step has two parts:

* the gradient (:func:`_gradient_lanes`), the part every recipe shares and nearly all of a step's work
  (~4 k d n flops and k n exponentials; the exponentials are a third of the time), is computed for a
  block of ``LANES`` = 64 configurations at once. Layout: the configuration is the LAST (innermost,
  unit-stride) axis of every array of the block -- ``W`` as (k, d, lanes), the step's samples as
  (count, d, lanes) with labels (count, lanes) (one copy, (count, d, 1), when all lanes share them),
  logits and exponentials as (k, count, lanes) -- and every loop over it is the innermost loop, so LLVM
  turns it into SIMD code for the host (four configurations per AVX2 instruction, eight per AVX-512 one:
  numba compiles for the CPU it runs on). A loop body only ever combines entries
  of one configuration, in the order of the scalar formula, so each configuration's arithmetic is what a
  scalar loop would do: a run gives the same bits alone (a block of one lane) or in a block of 64, whatever
  the other runs (tests/test_fused.py checks this bit for bit). No fast-math flag: no reassociation, no
  contraction into FMA. The two sums of products -- the logits over features and the gradient over
  samples -- go through :func:`_lane_dots_shared` / :func:`_lane_dots_own`, LLVM IR whose 32 running sums
  per call stay in vector registers for the whole sum (numba's loops stored and reloaded them at every
  term): same terms, same order, same bits; measured on one thread, 64 configurations of SignGD, 1.63-1.73M
  -> 1.83-1.86M configuration-steps per CPU second on the Gaussian k = 4, d = 6, n = 48 set and 3.50M ->
  3.79-3.92M on the default preset (with one power ``(t + 2)^-a`` per distinct ``a`` and step);
* the rest of the recipe (in :func:`advance`: VR correction, momentum, Adam, the steepest direction) runs
  per configuration, scalar: ~10 k d flops. This is the one definition of every recipe. The update
  ``W <- W - eta_t D`` is one loop over the block in the same layout (the iterates stay in it from ``t0``
  to ``t1``: no copy in and out per step), and plain SignGD (the sign of the gradient, no momentum, no
  VR) takes its direction in that loop too, since its sign needs no per-configuration state. Measured on
  the issue's Gaussian shape (k = 4, d = 6, n = 48), one thread, 64 configurations: the per-configuration
  part cost ~0.3 us per configuration-step, a fifth of the step; in the block layout SignGD ran ~15%
  faster (``benchmarks/engine_speed.py``).

Why across configurations: inside one configuration the gradient's loops run over k, d and n, which are
tiny (3, 5 and 30 on the default preset), so a vector of four would be mostly idle and the sums over
samples could not be vectorised without reordering them (which would change the bits); across
configurations every loop is 64 long and nothing is reordered. Measured on a 2-core AMD EPYC with AVX2
(Zen 3, no AVX-512), one thread, full-batch SignGD on the default preset: the previous kernel (one scalar loop per
configuration, libm ``exp``) ran 0.5-0.65M configuration-steps per CPU second; this one 1.3-1.4M
(``benchmarks/engine_speed.py`` prints both clocks).

Why 64: LLVM fully unrolls constant loops of up to ~32 iterations before its loop vectoriser runs, and
numba disables the SLP vectoriser that would re-vectorise the unrolled code (numba issue #8705), so a
32-lane block ran as scalar code (measured: 0.85M against 1.5M configuration-steps per CPU second). The
lane count is a compile-time constant (``numba.literally``): :func:`_gradient_lanes` is compiled for 64
lanes, in three forms: samples and labels shared by all lanes (full batch), each lane its own samples and
labels (mini-batches, data draws in different orders), and each lane its own samples with one label
sequence (data draws of a preset). A single
configuration has its own function, :func:`_gradient_one`: the same arithmetic on arrays without the lane
axis, whose sample loops are innermost with unit strides and so vectorise where no sum over samples is
involved (the block layout with one lane left the compiler runtime strides: strided and gathered loads, 1.56x
slower on both benchmark shapes, measured interleaved in one process). Runs left over after the full blocks
go through it one at a time when they are fewer than ``MIN_FILLED_LANES`` (``MIN_FILLED_OWN_LANES`` where each
lane reads its own samples), or when a block's scratch would pass ``BLOCK_BYTES``.

The exponential and logarithm: llvmlite here has no vector math library (no SVML), so ``math.exp`` is a
scalar libm call, which stops vectorisation. :func:`_exp` and :func:`_log` are fdlibm's ``e_exp.c`` and
``e_log.c`` algorithms (error below 1 ulp; tests/test_fused.py checks them against mpmath) written with
plain arithmetic, selects, bit casts and (in the exponential) fused multiply-adds, which LLVM vectorises.
They are used in the gradient; the scalar recipe code keeps libm.

The gradient of one configuration (the log-domain gradient of :mod:`rates.numeric.losses`, written per sample; the
formula is in :func:`_gradient_lanes`): row c of the gradient is ``2^{N_c} G[c]`` over the step's samples,
where every exponential is kept as a mantissa and an integer exponent (nothing underflows), ``S_y - 1 =
-sum_{c != y} S_c``, and ``N_c`` is the largest exponent of row c's coefficients: each class row has its
own scale, so sign-type directions see the signs of a row 1e-1000 below the others. No logarithm per step.
Mini-batches: the batch of step t is the slice ``perm[j b : (j+1) b]`` of the epoch's permutation, drawn on
the Python side with the torch generator of :func:`rates.numeric.optim.sources.epoch_permutations` (so the batches
are those of the torch path); each lane gathers its own samples. VR keeps the epoch-start coefficients, as
:class:`rates.numeric.optim.sources.VarianceReduced`. Momentum and Adam carry log-scales (one per class row for
the sign and Adam, one per run otherwise) exactly as :mod:`rates.numeric.optim.transforms` does (same formulas,
same order of operations); steepest directions are those of :mod:`rates.norms` (sign, one coordinate,
Frobenius, entry-wise l_p, polar factor by SVD or Newton-Schulz, nuclear, Schatten-p).

Guarantee: the iterates equal the torch engine's to rounding (tests/test_fused.py: 1e-12 relative after
2,000 steps for every recipe, and the mpmath reference of :mod:`rates.numeric.reference` to 1e-12), and a run's
iterates do not depend on the runs it is advanced with.

Why one file: numba's on-disk cache (``cache=True``) is keyed on the file of the compiled entry point
only; a kernel calling a changed function in another file would load a stale binary. Every compiled
function therefore lives here. Compiled functions called per step nest one level below :func:`advance`:
numba re-optimises a callee's code in each caller's module, and a third level took the first compile
from 23 s to 47 s of CPU time.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from llvmlite import ir
from numba import config as numba_config
from numba import literally, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

SOURCE_FULL, SOURCE_MINIBATCH, SOURCE_VR = 0, 1, 2
(DIRECTION_SIGN, DIRECTION_COORDINATE, DIRECTION_FROBENIUS, DIRECTION_LP, DIRECTION_POLAR, DIRECTION_NUCLEAR,
 DIRECTION_SCHATTEN, DIRECTION_NEWTON_SCHULZ, DIRECTION_ADAM) = range(9)

# Configurations per vector block (see the module docstring for why 64 and not fewer).
LANES = 64
# Doubles per vector instruction of :func:`_add_scaled_quad` (AVX2's 256 bits; on AVX-512 still correct)
QUAD = 4
# Vector accumulators per call of the lane sums (_lane_dots_*): 8 x 4 = 32 lanes, registers to spare on AVX2
DOT_QUADS = 8
# Below this many configurations left, a 64-lane block (padded) costs more than running them one by one.
# Measured (one thread, configuration-steps per CPU second, SignGD): a single configuration 0.93M on the
# Gaussian k = 4, d = 6, n = 48 set and 1.5-1.6M on the default preset; a full block 1.66M and 3.5M when the
# lanes share their samples, 1.09M and 2.34M when each lane reads its own (data draws, mini-batches). A
# block of N then costs as much as N single runs at N ~ 36 and 29 (shared samples) and N ~ 55 and 41 (own).
MIN_FILLED_LANES = 33
MIN_FILLED_OWN_LANES = 48
# A block's scratch ((d + k + 4) x count x 64 doubles: samples, exponentials, four per-sample rows) above
# this many bytes runs one configuration at a time instead.
BLOCK_BYTES = 1 << 25



@njit(cache=True)
def filled_lanes(own_samples, count, k, d):
    """How many configurations :func:`advance` needs left to run them as one (padded) 64-lane block rather than
    one at a time (the break-even of the two, in single runs), or more than any count when a block's scratch
    would pass ``BLOCK_BYTES`` (every configuration then runs alone)."""
    if (d + k + 4) * count * LANES * 8 > BLOCK_BYTES:
        return 1 << 62
    return MIN_FILLED_OWN_LANES if own_samples else MIN_FILLED_LANES


_TINY = np.finfo(np.float64).tiny
_LN2 = math.log(2.0)
# A gradient coefficient below 2^FLUSH_EXPONENT of its class row's largest power of two is 0: far below the
# rounding of the row's sums (see _gradient_lanes), and above 2^-1022 by the mantissas' range, so no
# coefficient is a subnormal number.
FLUSH_EXPONENT = -1000.0
_EPS = np.finfo(np.float64).eps
_HALF_EPS = 2.0**-53  # the unit roundoff (rates.numeric.exact_sign.EPS)
# Muon's quintic Newton-Schulz coefficients, as rates.norms.NS_COEFFS
_NS_A, _NS_B, _NS_C = 3.4445, -4.7750, 2.0315
_NS_STEPS = 5

# fdlibm e_exp.c: ln2 split so that k * _LN2_HI is exact for |k| < 2^11, and the coefficients of the
# rational approximation R(r^2) of r (e^r + 1) / (e^r - 1) on |r| <= ln2 / 2.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
_P1 = 1.66666666666666019037e-01
_P2 = -2.77777777770155933842e-03
_P3 = 6.61375632143793436117e-05
_P4 = -1.65339022054652515390e-06
_P5 = 4.13813679705723846039e-08
# Adding 1.5 * 2^52 rounds a double of magnitude < 2^51 to an integer held in the low mantissa bits.
_ROUND = 6755399441055744.0
_ROUND_BITS = 0x4338000000000000
# fdlibm e_log.c: coefficients of the approximation of (log(1+s) - log(1-s) - 2s) / s on s^2 <= 0.0295.
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01


@intrinsic
def _bits_of(typingctx, x):
    """The IEEE bits of a float64 as an int64 (a bit cast, free in a vector register)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _float_of(typingctx, bits):
    """The float64 whose IEEE bits are ``bits`` (the inverse bit cast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``llvm.fma.f64``: the same correctly rounded result on every machine,
    one instruction where the CPU has FMA)."""
    def codegen(context, builder, signature, args):
        double = ir.DoubleType()
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(double, [double] * 3), "llvm.fma.f64")
        return builder.call(fma, args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@intrinsic
def _larger(typingctx, a, b):
    """``b if b > a else a`` for float64, as one LLVM ``select``: no branch, so a lane loop that updates a
    running maximum in place stores every lane unconditionally. Written as Python (``max``, or a
    conditional expression) the update is a branch that LLVM turns into a masked store, which on AMD Zen
    cost ~10% of the gradient (measured with perf)."""
    def codegen(context, builder, signature, args):
        first, second = args
        return builder.select(builder.fcmp_ordered(">", second, first), second, first)
    return types.float64(types.float64, types.float64), codegen


@intrinsic
def _smaller(typingctx, a, b):
    """``b if b < a else a`` for float64, one LLVM ``select`` (see :func:`_larger`)."""
    def codegen(context, builder, signature, args):
        first, second = args
        return builder.select(builder.fcmp_ordered("<", second, first), second, first)
    return types.float64(types.float64, types.float64), codegen


@intrinsic
def _pick(typingctx, condition, if_true, if_false):
    """``if_true if condition else if_false`` for float64 as one LLVM ``select``. Written as Python, a conditional
    that stores a value back into the array it was read from (``U[j] = U[j] if wrong else m``) becomes a
    branch around a store, which the loop vectoriser turns into masked stores (slow on AMD Zen, see
    :func:`_larger`); a select keeps the store unconditional (measured: 76 -> 45 masked stores in
    :func:`advance`'s code, 2.5-4.5% more configuration-steps per CPU second in 64-lane blocks)."""
    def codegen(context, builder, signature, args):
        flag = context.cast(builder, args[0], signature.args[0], types.boolean)
        return builder.select(flag, args[1], args[2])
    return types.float64(condition, types.float64, types.float64), codegen


@njit(cache=True, error_model="numpy", inline='always')
def _reduced_exp(x):
    """``(y, k)`` with ``e^x = y 2^k`` for ``|x| <= 2^40`` (the one range reduction and approximation of
    :func:`_exp` and :func:`_exp_parts`; see :func:`_exp`): ``k`` rounded to nearest, held in a double."""
    k_float = np.rint(x * _INV_LN2)
    hi = _fma(-k_float, _LN2_HI, x)
    lo = k_float * _LN2_LO
    r = hi - lo
    t = r * r
    t2 = t * t
    c = _fma(-t, _fma(t2, _fma(t2, _P5, _fma(t, _P4, _P3)), _fma(t, _P2, _P1)), r)
    return 1.0 - ((lo - (r * c) / (2.0 - c)) - hi), k_float


@njit(cache=True, error_model="numpy")
def _exp(x):
    """e^x, fdlibm's algorithm without branches (so that a loop of it vectorises); error below 1 ulp, and 0
    in place of results near or below the smallest normal number.

    ``x = k ln2 + r``, ``|r| <= ln2/2`` (k = ``rint(x / ln2)``, one vector rounding instruction; the same k as the
    1.5 * 2^52 shift, one add fewer); ``e^r = 1 + 2r / (R(r^2) - r)`` in fdlibm's form
    ``1 - ((lo - r c / (2 - c)) - hi)``. Two departures from fdlibm's operations, both for speed, neither for
    accuracy: ``hi = x - k ln2_hi`` and ``c = r - t P(t)`` (fdlibm's degree-5 polynomial in ``t = r^2``, in
    Estrin's form: pairs, then powers of ``t^2``) are evaluated with fused multiply-adds (:func:`_fma`, one
    rounding per pair). The exponential is a quarter to a third of a step, and on the AVX-512 AMD EPYC of the
    benchmarks its vector loop is bound by the number of floating-point operations (the divider runs beside
    them: a timing run with the division replaced by a multiplication was 3% faster); the fused form has 18
    operations where the separate one had 24 (measured: 0.76 -> 0.67 ns per exponential in a 64-lane loop,
    1.85M -> 1.95M configuration-steps per CPU second at R = 256 on the Gaussian k=4, d=6, n=48 set). On
    45,000 arguments spread over [-1e6, 0] the two forms differ in 18 results, by one unit in the last place,
    and both stay within 0.84 ulp of mpmath (tests/test_fused.py checks the bound). Estrin's form, not
    Horner's, because the loop was bound by its chain of dependent operations before (2.47 -> 1.86 ns). Then
    times ``2^k``, as ``2^(k-1) * 2`` for k > 0 (2^1024 is not a
    double) and at once otherwise (``y 2^(k-1)`` could be subnormal at k = -1021). Where ``k < -1021`` (x below
    -708.05, e^x below 1.5 * 2^-1022) the result is 0, never a subnormal number: in the kernels such an
    exponential is a weight below 2^-1021 of the largest weight (which is 1), far below the rounding of
    any sum it enters, and every arithmetic operation with a subnormal operand or result takes a
    microcode assist on x86 (measured: SignGD runs slowed by ~10% as their margins grew and more weights
    became subnormal). Arguments above 710 give inf. ``x`` must not be NaN.
    """
    y, k_float = _reduced_exp(min(max(x, -746.0), 710.0))
    k = _bits_of(k_float + _ROUND) - _ROUND_BITS  # k_float + _ROUND is the shifted double again, exactly
    positive = k > 0
    exponent = k - 1 if positive else k
    last = 2.0 if positive else 1.0
    return y * _float_of((exponent + 1023) << 52) * last if k >= -1021 else 0.0


@njit(cache=True, error_model="numpy")
def _log(x):
    """log x for a positive normal x, fdlibm's algorithm without branches; error below 1 ulp.

    ``x = 2^k (1 + f)`` with ``sqrt(2)/2 < 1 + f < sqrt(2)`` (by bit operations), ``s = f / (2 + f)``,
    ``log(1 + f) = 2s + s R(s^2)`` with fdlibm's degree-14 polynomial, assembled in fdlibm's two forms (the
    one fdlibm picks for f's range is selected, both are computed); ``k`` becomes a double by the same
    1.5 * 2^52 shift as in :func:`_exp`. Zero, negative, subnormal, inf and NaN arguments are not handled.
    """
    bits = _bits_of(x)
    high = (bits >> 32) & 0x7FFFFFFF
    k = (high >> 20) - 1023
    high &= 0x000FFFFF
    carry = (high + 0x95F64) & 0x100000  # set when 1 + f would pass sqrt(2): halve it
    f = _float_of(((high | (carry ^ 0x3FF00000)) << 32) | (bits & 0xFFFFFFFF)) - 1.0
    k += carry >> 20
    dk = _float_of(k + _ROUND_BITS) - _ROUND
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    R = t2 + t1
    half_square = 0.5 * f * f
    wide = ((high - 0x6147A) | (0x6B851 - high)) > 0
    wide_form = dk * _LN2_HI - ((half_square - (s * (half_square + R) + dk * _LN2_LO)) - f)
    narrow_form = dk * _LN2_HI - ((s * (f - R) - dk * _LN2_LO) - f)
    return wide_form if wide else narrow_form


@njit(cache=True)
def exp_array(x, out):
    """``out[i] = _exp(x[i])``: the kernels' exponential, exposed for tests/test_fused.py."""
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])


@njit(cache=True)
def exp_parts_array(x, mantissa, exponent):
    """``mantissa[i], exponent[i] = _exp_parts(x[i])`` (``x <= 0``): the gradient's exponential, for tests."""
    for i in range(x.shape[0]):
        mantissa[i], exponent[i] = _exp_parts(x[i])


@njit(cache=True)
def fma_array(a, b, c, out):
    """``out[i] = _fma(a[i], b[i], c[i])``, for tests."""
    for i in range(a.shape[0]):
        out[i] = _fma(a[i], b[i], c[i])


@njit(cache=True)
def log_array(x, out):
    """``out[i] = _log(x[i])``: the kernels' logarithm, exposed for tests/test_fused.py."""
    for i in range(x.shape[0]):
        out[i] = _log(x[i])


@njit(cache=True, error_model="numpy", inline='always')
def _exp_parts(x):
    """``(y, k)`` with ``e^x = y 2^k``, ``y`` in [0.70, 1.42] and ``k`` an integer held in a double: :func:`_exp`
    without its final scaling, so that nothing underflows however negative ``x`` is (clamped to -2^40). For
    ``x <= 0`` only, the kernels' case (a logit minus one at least as large, or ``-|lead|``): no upper clamp,
    one operation fewer per exponential."""
    return _reduced_exp(max(x, -1099511627776.0))


@njit(cache=True, error_model="numpy", inline='always')
def _power_of_two(e):
    """``2^e`` for an integer ``e <= 0`` held in a double, and 0 below ``2^FLUSH_EXPONENT``: bit operations
    only (the 1.5 * 2^52 shift turns the double into an integer, as in :func:`_exp`). No clamp of ``e`` first:
    where ``e`` is so negative that the shifted bits are meaningless (|e| of 2^51 or more, or an exponent field
    out of range), the select returns 0 anyway, and a clamp is one floating-point operation more in loops that
    are bound by their count of them."""
    bits = _bits_of(e + _ROUND) - _ROUND_BITS
    return _float_of((bits + 1023) << 52) if e >= FLUSH_EXPONENT else 0.0


def _make_lane_dots(broadcast):
    """An intrinsic ``(out, out_at, A, a_at, a_stride, B, b_at, b_stride, length)`` over flat float64 arrays:
    for the 32 lanes i = 0..31, ``out[out_at + i] = sum_t A[a_at + t a_stride + i] * B[...]`` with t = 0 ..
    length - 1 summed in that order from +0, each term a multiply then an add (no fused multiply-add), where
    the factor is ``B[b_at + t b_stride]`` for every lane (``broadcast``: samples shared by all lanes) or
    ``B[b_at + t b_stride + i]`` (each lane its own). The same arithmetic, in the same order, as the
    scalar ``out = 0.0; for t: out += A * B`` of each lane; written as LLVM IR because the 32 running
    sums then stay in eight vector registers for the whole sum, where numba's loops stored and reloaded
    them at every t (a loop over t of unknown length around a 64-lane loop). ``length`` must be at least 1
    (the loop body runs before its test; the kernels sum over d >= 1 features and count >= 1 samples)."""
    def typer(typingctx, out, out_at, A, a_at, a_stride, B, b_at, b_stride, length):
        def codegen(context, builder, signature, args):
            out_v, out_at_v, A_v, a_at_v, a_stride_v, B_v, b_at_v, b_stride_v, length_v = args
            f64 = ir.DoubleType()
            quad = ir.VectorType(f64, QUAD)
            i64 = ir.IntType(64)
            i32 = ir.IntType(32)
            out_ptr = context.make_array(signature.args[0])(context, builder, out_v).data
            A_ptr = context.make_array(signature.args[2])(context, builder, A_v).data
            B_ptr = context.make_array(signature.args[5])(context, builder, B_v).data
            zero = ir.Constant(quad, [0.0] * QUAD)
            before = builder.block
            loop = builder.append_basic_block("lane_dots.loop")
            after = builder.append_basic_block("lane_dots.after")
            builder.branch(loop)
            builder.position_at_end(loop)
            t = builder.phi(i64)
            accs = [builder.phi(quad) for _ in range(DOT_QUADS)]
            t.add_incoming(ir.Constant(i64, 0), before)
            for acc in accs:
                acc.add_incoming(zero, before)
            a_base = builder.add(a_at_v, builder.mul(t, a_stride_v))
            b_base = builder.add(b_at_v, builder.mul(t, b_stride_v))
            if broadcast:
                b = builder.load(builder.gep(B_ptr, [b_base]), typ=f64)
                one = builder.insert_element(ir.Constant(quad, ir.Undefined), b, ir.Constant(i32, 0))
                splat = builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(i32, QUAD), [0] * QUAD))
            new = []
            for i, acc in enumerate(accs):
                a_ptr = builder.bitcast(builder.gep(A_ptr, [builder.add(a_base, ir.Constant(i64, QUAD * i))]),
                                        quad.as_pointer())
                a = builder.load(a_ptr, align=8, typ=quad)
                if broadcast:
                    factor = splat
                else:
                    b_ptr = builder.bitcast(builder.gep(B_ptr, [builder.add(b_base, ir.Constant(i64, QUAD * i))]),
                                            quad.as_pointer())
                    factor = builder.load(b_ptr, align=8, typ=quad)
                new.append(builder.fadd(acc, builder.fmul(a, factor)))
            t_next = builder.add(t, ir.Constant(i64, 1))
            t.add_incoming(t_next, loop)
            for acc, value in zip(accs, new):
                acc.add_incoming(value, loop)
            builder.cbranch(builder.icmp_signed("<", t_next, length_v), loop, after)
            builder.position_at_end(after)
            for i, value in enumerate(new):
                o_ptr = builder.bitcast(builder.gep(out_ptr, [builder.add(out_at_v, ir.Constant(i64, QUAD * i))]),
                                        quad.as_pointer())
                builder.store(value, o_ptr, align=8)
            return context.get_dummy_value()
        return types.void(out, out_at, A, a_at, a_stride, B, b_at, b_stride, length), codegen
    return intrinsic(typer)


_lane_dots_shared = _make_lane_dots(True)
_lane_dots_own = _make_lane_dots(False)


@njit(cache=True, error_model="numpy")
def _gradient_lanes(W, W_flat, X, X_flat, Y, Z, Z_flat, K, K_flat, T, T_flat, L, L_flat, U, U_flat, P, P_flat,
                    G_flat, log_scale, lanes, shared, shared_labels):
    """For each lane r and class row c: ``G[c, :, r]`` and ``s_c`` with ``e^{s_c} G[c, :, r]`` = row c of the
    mean gradient over that lane's samples, where ``G`` (k, d, lanes) is the memory of ``G_flat``.

    ``W`` (k, d, lanes); the step's samples ``X`` (count, d, lanes) with labels ``Y`` (count, lanes); the sums of
    products read ``W`` and ``X`` through their flat views ``W_flat``, ``X_flat`` (the same memory); the
    ``s_c / ln 2`` go to ``log_scale`` (k, lanes). Scratch: ``Z``, ``K`` (k, count, lanes), ``T``, ``L``, ``U``, ``P``
    (count, lanes), each with a flat view of the same memory (``*_flat``) for the loops that need no index.
    ``lanes`` is a compile-time constant (see the module docstring), and so is ``shared``: when 1,
    every lane sees the same samples in the same order (full batch), ``X`` is (count, d, 1) and ``Y``
    (count, 1), and the loops read that one copy (a scalar broadcast across the lanes) instead of 64
    copies, which kept ~150 KB of identical samples in the cache; the arithmetic is the same. ``shared_labels``
    (compile-time too; 1 whenever ``shared`` is) says that every lane has the same labels in the same order
    although each has its own samples -- data draws of a preset, whose classes come in order -- so the class
    tests read ``Y[j, 0]`` once per sample instead of one label per lane. Loops run class, then
    sample, then lane: the lane loop is innermost (64 long: vectorised across configurations; a single
    configuration runs :func:`_gradient_one` instead); the logits' sums over features and the gradient's sums
    over samples run 32 lanes at a time in registers (:func:`_make_lane_dots`). No loop body mixes two lanes,
    and the sums over classes and over samples keep the scalar order.

    The formula, per lane. Sample j has logits ``z``, top wrong logit ``t_j``, ``lead_j = z_y - t_j`` and
    ``b_j = max(lead_j, 0)``; its wrong-class probabilities are ``S_c = e^{z_c - t_j} e^{-b_j} / A_j`` with
    ``A_j = sum_c e^{z_c - max(z_y, t_j)}`` in [1, k], i.e. ``A_j = V_j e^{-lead_j} + 1`` if ``lead_j > 0``,
    else ``V_j + e^{lead_j}``, where ``V_j = sum_{c != y} e^{z_c - t_j}`` in [1, k - 1] (the top wrong class
    gives e^0 = 1). The coefficient of (c, j) in the gradient is ``S_c / count`` for ``c != y_j`` and
    ``-V_j e^{-b_j} / A_j / count`` (minus the sum of the others) at ``c = y_j``.

    Every exponential is kept as ``y 2^e`` (:func:`_exp_parts`: mantissa and integer exponent, no
    underflow), one per class and sample: ``e^{z_c - t_j}`` for the wrong classes and ``e^{-|lead_j|}`` in
    the label's slot (which gives ``e^{-b_j}`` when ``lead_j > 0``, and ``e^{lead_j}`` for ``A_j`` otherwise).
    A coefficient is then a mantissa ``mu`` in ~[0.35/(k count), 2/count] times ``2^E`` with an exact integer
    ``E``; row c's exponent ``N_c`` is the largest ``E`` of its coefficients, and the row is computed as
    ``sum_j mu 2^{E - N_c} x_j``, so ``s_c = N_c ln 2``; ``log_scale[c, r]`` holds ``N_c`` (an exact integer,
    so that rows are brought to a common scale by exact powers of two). Each class row has its own scale
    because sign-type directions (sign, Signum, Adam per entry) take every entry's sign whatever its size:
    a row 1e-400 below another is as much a part of the step as the largest. Coefficients below
    ``2^FLUSH_EXPONENT`` of their row's largest ``2^E`` are 0 (no subnormal operand: see :func:`_exp`).

    Which signs can still be wrong (and why that does not happen on generic data). An entry
    ``G[c, l] = sum_j coef_{c,j} x_{j,l}`` is computed with a relative error of ~(count + |z| + 10) eps
    of ``sum_j |coef_{c,j} x_{j,l}|`` (eps = 2^-53; the logits' rounding enters the exponents as an absolute
    error |z| eps), and the dropped terms are below ``count 2^FLUSH_EXPONENT`` of that sum. So a sign is
    exact unless the entry cancels to ~1e-12 of its own terms (logits up to ~1e3), a hundred orders of
    magnitude before the flush could matter. Sign-type dynamics move each entry by ~eta_t relative per
    step, so hitting a 1e-12 window has a chance ~1e-12 / eta_t per entry and step on data in general
    position (no exact ties or zero features that make an entry vanish identically): ~1e-5 over a 10^7-step
    run of 15 entries. The hard cases of tests/test_exact_sign.py (rows 1e-300 to 1e-3000 below the largest)
    are compared step by step with 40-digit signs. Data not in general position (integer pixels: exact ties at
    W = 0, sparse columns whose every coefficient is flushed) does hit both; plain full-batch SignGD therefore
    tests every entry against that bound (:func:`_undecided_signs`) and has the open ones decided exactly
    (:mod:`rates.numeric.exact_sign`, through :func:`advance`'s ``certify``).
    """
    literally(lanes)
    literally(shared)
    literally(shared_labels)
    k, d = W.shape[0], W.shape[1]
    count = X.shape[0]
    # logits z = W x_j
    for c in range(k):
        for j in range(count):
            for first in range(0, lanes, DOT_QUADS * QUAD):
                if shared:
                    _lane_dots_shared(Z_flat, (c * count + j) * lanes + first, W_flat, c * d * lanes + first, lanes,
                                      X_flat, j * d, 1, d)
                else:
                    _lane_dots_own(Z_flat, (c * count + j) * lanes + first, W_flat, c * d * lanes + first, lanes,
                                   X_flat, j * d * lanes + first, lanes, d)
    # T = the top wrong logit t_j, L = the label's logit z_y. The running maximum goes back and forth between
    # T and P (free until the weights): updated in place, LLVM stores it with masked stores, slow on AMD.
    for i in range(T_flat.size):
        T_flat[i] = -np.inf
        L_flat[i] = 0.0
    for c in range(k):
        source, target = (T, P) if c % 2 == 0 else (P, T)
        for j in range(count):
            label_of_all = Y[j, 0]  # all lanes' label when shared; a local, since a load of Y in the lane loop
            # could alias the stores there and would be repeated per lane, as scalar code
            for r in range(lanes):
                z = Z[c, j, r]
                wrong = c != (label_of_all if shared_labels else Y[j, r])
                target[j, r] = _larger(source[j, r], z if wrong else -np.inf)
                L[j, r] = _pick(wrong, L[j, r], z)
    if k % 2 == 1:
        for i in range(T_flat.size):
            T_flat[i] = P_flat[i]
    for i in range(L_flat.size):
        L_flat[i] -= T_flat[i]  # L = lead_j
    # the exponents: z_c - t_j for the wrong classes, -|lead_j| in the label's slot; then y 2^e of each
    for c in range(k):
        for j in range(count):
            label_of_all = Y[j, 0]
            for r in range(lanes):
                shifted = Z[c, j, r] - T[j, r]
                Z[c, j, r] = shifted if c != (label_of_all if shared_labels else Y[j, r]) else -abs(L[j, r])
    for i in range(Z_flat.size):
        Z_flat[i], K_flat[i] = _exp_parts(Z_flat[i])
    # V_j (summed in T; terms below 2^FLUSH_EXPONENT of the top wrong class's 1 are 0) and the label's slot:
    # mantissa in U, exponent in P
    for i in range(T_flat.size):
        T_flat[i] = 0.0
    for c in range(k):
        for j in range(count):
            label_of_all = Y[j, 0]
            for r in range(lanes):
                mantissa, exponent = Z[c, j, r], K[c, j, r]  # loaded unconditionally: the selects vectorise
                wrong = c != (label_of_all if shared_labels else Y[j, r])
                T[j, r] += mantissa * _power_of_two(exponent) if wrong else 0.0
                U[j, r] = _pick(wrong, U[j, r], mantissa)
                P[j, r] = _pick(wrong, P[j, r], exponent)
    # per sample: A_j; e^{-b_j} / A_j / count as mantissa (U) and exponent (P)
    inv_count = 1.0 / count
    for j in range(count):
        for r in range(lanes):
            above = L[j, r] > 0.0
            slot = U[j, r] * _power_of_two(P[j, r])  # e^{-|lead_j|}
            total = T[j, r] * slot + 1.0 if above else T[j, r] + slot
            U[j, r] = (U[j, r] if above else 1.0) / total * inv_count
            P[j, r] = _pick(above, P[j, r], 0.0)
    # row exponents N_c: the largest exponent E of row c's coefficients (E kept in K for the next loop)
    for c in range(k):
        for r in range(lanes):
            log_scale[c, r] = -np.inf
        for j in range(count):
            label_of_all = Y[j, 0]
            for r in range(lanes):
                wrong = c != (label_of_all if shared_labels else Y[j, r])
                K[c, j, r] = (K[c, j, r] if wrong else 0.0) + P[j, r]
                log_scale[c, r] = _larger(log_scale[c, r], K[c, j, r])
    # the coefficients, in place in Z: mu 2^{E - N_c}, the label's minus V_j times its sample's factor
    for c in range(k):
        for j in range(count):
            label_of_all = Y[j, 0]
            for r in range(lanes):
                wrong = c != (label_of_all if shared_labels else Y[j, r])
                exponent = K[c, j, r] - log_scale[c, r]
                Z[c, j, r] = (Z[c, j, r] if wrong else -T[j, r]) * U[j, r] * _power_of_two(exponent)
    # G = sum_j coefficients x_j, in sample order. A weight flushed to 0 adds +-0 terms, which change no
    # entry (G starts at +0 and round-to-nearest never makes a sum -0 from a +0 start).
    for c in range(k):
        for l in range(d):
            for first in range(0, lanes, DOT_QUADS * QUAD):
                if shared:
                    _lane_dots_shared(G_flat, (c * d + l) * lanes + first, Z_flat, c * count * lanes + first, lanes,
                                      X_flat, l, d, count)
                else:
                    _lane_dots_own(G_flat, (c * d + l) * lanes + first, Z_flat, c * count * lanes + first, lanes,
                                   X_flat, l * lanes + first, d * lanes, count)


@intrinsic
def _add_scaled_quad(typingctx, target, target_at, source, source_at, factor):
    """``target[target_at + i] += factor * source[source_at + i]`` for i = 0..3 (flat float64 arrays), as one
    vector multiply and one vector add: each entry is rounded as the scalar statement would be (no fused
    multiply-add: LLVM contracts only under fast-math flags, which this does not set). Why by hand: numba
    turns LLVM's SLP vectoriser off (numba issue #8705), and the loop vectoriser picks vectors of 8 with 4
    interleaved, so a loop over a class row's d = 5 or 6 entries never reached its vector body."""
    def codegen(context, builder, signature, args):
        quad = ir.VectorType(ir.DoubleType(), QUAD)
        target_array = context.make_array(signature.args[0])(context, builder, args[0])
        source_array = context.make_array(signature.args[2])(context, builder, args[2])
        target_ptr = builder.bitcast(builder.gep(target_array.data, [args[1]]), quad.as_pointer())
        source_ptr = builder.bitcast(builder.gep(source_array.data, [args[3]]), quad.as_pointer())
        one = builder.insert_element(ir.Constant(quad, ir.Undefined), args[4], ir.Constant(ir.IntType(32), 0))
        splat = builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(ir.IntType(32), QUAD), [0] * QUAD))
        total = builder.fadd(builder.load(target_ptr, align=8, typ=quad),
                             builder.fmul(builder.load(source_ptr, align=8, typ=quad), splat))
        builder.store(total, target_ptr, align=8)
        return context.get_dummy_value()
    return types.void(target, target_at, source, source_at, factor), codegen


if numba_config.DISABLE_JIT:
    # With NUMBA_DISABLE_JIT=1 every @njit function runs as Python (slowly: small cases only), so that a test can
    # reach each line of the kernels -- mutation testing (docs/testing.md) changes one line at a time and a
    # recompile per change would cost minutes. The intrinsics above exist only as LLVM IR; these are their
    # Python twins, with the same arithmetic in the same order (each float64 operation rounded once, as there).
    _INT64 = 1 << 64

    def _bits_of(x):
        return int(np.float64(x).view(np.int64))

    def _float_of(bits):
        wrapped = (int(bits) + (_INT64 >> 1)) % _INT64 - (_INT64 >> 1)  # int64 arithmetic wraps
        return float(np.int64(wrapped).view(np.float64))

    def _fma(a, b, c):
        if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
            return float(np.float64(a) * np.float64(b) + np.float64(c))
        return float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))  # exact, rounded once

    def _larger(a, b):
        return b if b > a else a

    def _smaller(a, b):
        return b if b < a else a

    def _pick(condition, if_true, if_false):
        return if_true if condition else if_false

    def _python_lane_dots(broadcast):
        width = QUAD * DOT_QUADS

        def lane_dots(out, out_at, A, a_at, a_stride, B, b_at, b_stride, length):
            total = np.zeros(width)
            for t in range(max(int(length), 1)):  # the IR's loop body runs before its test
                a = A[a_at + t * a_stride:a_at + t * a_stride + width]
                b = B[b_at + t * b_stride] if broadcast else B[b_at + t * b_stride:b_at + t * b_stride + width]
                total = total + a * b
            out[out_at:out_at + width] = total

        return lane_dots

    _lane_dots_shared = _python_lane_dots(True)
    _lane_dots_own = _python_lane_dots(False)

    def _add_scaled_quad(target, target_at, source, source_at, factor):
        target[target_at:target_at + QUAD] = target[target_at:target_at + QUAD] + \
            source[source_at:source_at + QUAD] * factor


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _coefficients_of_logits(Z, Z_flat, Y, K, K_flat, T, L, U, P, log_scale, M, keep):
    """The gradient's coefficients from one run's logits ``Z`` (k, count), in place, with ``Z_flat`` and
    ``K_flat`` flat views of ``Z`` and the scratch ``K`` (k, count): the top wrong logit, exponentials as
    mantissa and exact integer exponent by :func:`_exp_parts` (over the flat views: one vector loop), ``A_j``,
    the label's ``-V_j`` (the mean's 1/count included), the row exponents ``log_scale`` (k,) as the integer
    maximum of ``E`` (over the bits of ``E + 1.5 * 2^52``: exact integers below 2^51 in a double are ordered as
    their bits), so that row c of the mean gradient is ``2^{log_scale[c]} sum_j Z[c, j] x_j``. The one
    definition shared by :func:`_gradient_one` and :func:`logit_coefficients`; ``T``, ``L``, ``U``, ``P``
    (count,) are scratch. With ``keep``, every coefficient is also
    kept unflushed as ``M[c, j] 2^{K[c, j]}`` (its mantissa times the mean's 1/count, and its exact exponent ``E``
    left in ``K``), so that an entry whose terms all lie 2^1000 below their row can still be summed at its own scale
    (:func:`_own_scale_signs`)."""
    k, count = Z.shape[0], Z.shape[1]
    for j in range(count):
        T[j] = -np.inf
        L[j] = 0.0
    for c in range(k):
        for j in range(count):
            z = Z[c, j]
            wrong = c != Y[j]
            T[j] = _larger(T[j], z if wrong else -np.inf)
            L[j] = _pick(wrong, L[j], z)
    for j in range(count):
        L[j] -= T[j]
    for c in range(k):
        for j in range(count):
            shifted = Z[c, j] - T[j]
            Z[c, j] = shifted if c != Y[j] else -abs(L[j])
    for i in range(Z_flat.size):
        Z_flat[i], K_flat[i] = _exp_parts(Z_flat[i])
    for j in range(count):
        U[j] = Z[Y[j], j]
        P[j] = K[Y[j], j]
        T[j] = 0.0
    for c in range(k):
        for j in range(count):
            term = Z[c, j] * _power_of_two(K[c, j])
            T[j] += term if c != Y[j] else 0.0
    inv_count = 1.0 / count
    for j in range(count):
        above = L[j] > 0.0
        slot = U[j] * _power_of_two(P[j])
        total = T[j] * slot + 1.0 if above else T[j] + slot
        U[j] = (U[j] if above else 1.0) / total * inv_count
        P[j] = _pick(above, P[j], 0.0)
    for c in range(k):
        top = np.int64(0)  # below the bits of every E + 1.5 * 2^52 (positive doubles; |E| < 2^51)
        for j in range(count):
            K[c, j] = (K[c, j] if c != Y[j] else 0.0) + P[j]  # E, kept for the next loop
            top = max(top, _bits_of(K[c, j] + _ROUND))
        log_scale[c] = _float_of(top) - _ROUND
    for c in range(k):
        for j in range(count):
            wrong = c != Y[j]
            exponent = K[c, j] - log_scale[c]
            mantissa = (Z[c, j] if wrong else -T[j]) * U[j]
            if keep:
                M[c, j] = mantissa
            Z[c, j] = mantissa * _power_of_two(exponent)


@njit(cache=True, error_model="numpy")
def _gradient_one(W, XT, X_quads, Y, Z, Z_flat, K, K_flat, T, L, U, P, G, G_quads, width, log_scale):
    """:func:`_gradient_lanes` for a single configuration, entry by entry the same arithmetic in the same order,
    on arrays whose last axis is the one the inner loops run over: ``W`` (k, d), the samples transposed ``XT``
    (d, count) and, for the gradient's sums, flat (count x width) with each sample's features padded by zeros
    to ``width`` (a multiple of ``QUAD``) in ``X_quads``; labels ``Y`` (count,), ``Z``, ``K`` (k, count) with flat
    views, ``T``, ``L``, ``U``, ``P`` (count,), ``G`` (k, d) with a flat (k x width) scratch ``G_quads``,
    ``log_scale`` (k,). Why a function of its own: in the block layout with one lane, every array has a
    trailing axis of length 1 whose neighbours' strides the compiler cannot know, so the loops over samples
    became strided and gathered loads; here they are unit strides, and the logits are summed feature by
    feature for all samples at once (a vector of samples per instruction, each logit still summed in
    feature order). The label's slot is gathered rather than selected (a select with a store there kept the
    loop scalar); the row exponents' maximum is taken over the bits of ``E + 1.5 * 2^52`` (exact integers
    below 2^51 in a double: their bits are ordered as they are), an integer maximum that LLVM vectorises
    where a floating-point one needs fast-math flags; each gradient row is summed over the samples in
    order, four features per vector instruction (:func:`_add_scaled_quad`), one row quad at a time."""
    k, d = W.shape[0], W.shape[1]
    count = Y.shape[0]
    for i in range(Z_flat.size):
        Z_flat[i] = 0.0
    for c in range(k):
        for l in range(d):
            w = W[c, l]
            for j in range(count):
                Z[c, j] += w * XT[l, j]
    _coefficients_of_logits(Z, Z_flat, Y, K, K_flat, T, L, U, P, log_scale, K, False)
    for i in range(G_quads.size):
        G_quads[i] = 0.0
    for c in range(k):
        for q in range(0, width // QUAD):
            at = c * width + q * QUAD
            for j in range(count):
                _add_scaled_quad(G_quads, at, X_quads, j * width + q * QUAD, Z[c, j])
    for c in range(k):
        for l in range(d):
            G[c, l] = G_quads[c * width + l]


@njit(cache=True, error_model="numpy", nogil=True)
def logit_coefficients(Z, y, K, T, L, U, P, log_scale):
    """The gradient's coefficients from logits formed elsewhere (the GEMM path, :mod:`rates.numeric.gemm`):
    ``Z`` (R, k, n), each run's logits ``z_{c,j}`` over all n samples, becomes in place the coefficients
    ``mu 2^{E - N_c}`` of :func:`_gradient_lanes` (the mean's 1/n included) and ``log_scale`` (R, k) their row
    exponents ``N_c``, so that row c of run r's mean gradient is ``2^{N_c} sum_j Z[r, c, j] x_j``.

    :func:`_coefficients_of_logits` per run, the arithmetic :func:`_gradient_one` applies to the logits it forms
    itself: given the same logits it gives the same coefficients bit for bit. ``y`` (n,) labels; scratch ``K`` (k,
    n), ``T``, ``L``, ``U``, ``P`` (n,). Sample loops innermost, with unit strides, so they vectorise. Releases the
    GIL."""
    R, k, n = Z.shape
    rows = Z.reshape(R, k * n)  # each run's logits as one flat row (Z is C-contiguous)
    K_flat = K.reshape(k * n)
    for r in range(R):
        _coefficients_of_logits(Z[r], rows[r], y, K, K_flat, T, L, U, P, log_scale[r], K, False)


@njit(cache=True)
def _coefficients(W, H, y, count, coeff, log_top, row_scale, per_row):
    """Per-sample coefficients ``(S_i - e_{y_i})`` of the gradient over all n samples (VR snapshot), row c
    divided by ``e^{row_scale[c]}`` (its largest |coefficient|, so each row's largest is 1): (k, n). Without
    ``per_row`` every ``row_scale[c]`` is the largest over all rows (one scale, as the steepest directions
    other than the sign need).

    Computed from the logarithms ``log S_c = z_c - t_i - log_total_i`` (``t_i`` the top wrong logit) and
    ``log(1 - S_y) = log(sum_{c != y} e^{z_c - t_i}) - log_total_i``, so no row underflows (see
    :func:`_gradient_lanes` for why each row has its own scale). Scalar libm code: it runs once per epoch.
    """
    k, d = W.shape
    for c in range(k):
        row_scale[c] = -np.inf
    for i in range(count):
        label = y[i]
        top_wrong = -np.inf
        for c in range(k):
            z = 0.0
            for l in range(d):
                z += W[c, l] * H[i, l]
            coeff[c, i] = z
            if c != label and z > top_wrong:
                top_wrong = z
        wrong_sum = 0.0
        for c in range(k):
            if c != label:
                coeff[c, i] -= top_wrong  # log of e^{z_c - t_i}
                wrong_sum += math.exp(coeff[c, i])
        lead = coeff[label, i] - top_wrong
        if lead > 0.0:
            log_total = lead + math.log1p(wrong_sum * math.exp(-lead))
        else:
            log_total = math.log(wrong_sum + math.exp(lead))
        coeff[label, i] = math.log(wrong_sum)
        for c in range(k):
            coeff[c, i] -= log_total  # log |coefficient|
            if coeff[c, i] > row_scale[c]:
                row_scale[c] = coeff[c, i]
    if not per_row:
        top = -np.inf
        for c in range(k):
            top = max(top, row_scale[c])
        for c in range(k):
            row_scale[c] = top
    for i in range(count):
        label = y[i]
        for c in range(k):
            value = math.exp(coeff[c, i] - row_scale[c])
            coeff[c, i] = -value if c == label else value


@njit(cache=True)
def _renormalise(value, scale, per_row):
    """Divide each row (``per_row``) or the whole matrix by its largest |entry| (when non-zero) and add the
    log of that factor to the log-scales ``scale[c]`` of the rows it divides (rates.numeric.optim.base.renormalise)."""
    k, d = value.shape
    top = 0.0
    for c in range(k):
        if per_row:
            top = 0.0
        for l in range(d):
            if abs(value[c, l]) > top:
                top = abs(value[c, l])
        if per_row and top > 0.0:
            for l in range(d):
                value[c, l] /= top
            scale[c] += math.log(top)
    if not per_row and top > 0.0:
        for c in range(k):
            for l in range(d):
                value[c, l] /= top
            scale[c] += math.log(top)


@njit(cache=True, nogil=True, inline="always")
def _logit_size(W_run, column_max):
    """``max_c sum_l |W_cl| max_j |x_jl|``: a bound on the size of every logit of one run ``W_run`` (k, d)."""
    largest = 0.0
    for c in range(W_run.shape[0]):
        total = 0.0
        for l in range(W_run.shape[1]):
            total += abs(W_run[c, l]) * column_max[l]
        largest = max(largest, total)
    return largest


@njit(cache=True, nogil=True, inline="always")
def _relative_error(n, k, d, logit_size):
    """:func:`rates.numeric.exact_sign.relative_error` with its ``logit_error`` written out (``(d + 2) eps`` times
    the logits' size bound), compiled for the kernels' exact-sign checks."""
    half_ulp = 2.0**-53
    return 4.0 * ((n + k + 16) * half_ulp + 4.0 * (d + 2) * half_ulp * logit_size)


@njit(cache=True, inline='always')
def _undecided_signs(W_lanes, G_lanes, Z, X, column_max, logit_bound, first, stop, count, rho, row_mass, signs):
    """Whether an entry of a block's gradient (``G_lanes`` (k, d, lanes), coefficients in ``Z`` (k, count, lanes),
    iterates ``W_lanes``) has a sign that its rounding bound does not decide; if so, ``signs[first + r]`` holds each
    run's signs, NaN where undecided. ``column_max`` (d, lanes): each lane's ``max_j |x_jl|``. The bound of
    :mod:`rates.numeric.exact_sign` (``relative_error``, ``logit_error``, ``flush_error``), computed here because
    the kernels' entry points must not call into other files (see the module docstring):
    ``rho (sum_j |coef_cj|) max_j |x_jl| + 2.2 k 2^FLUSH_EXPONENT max_j |x_jl|``, ``rho = 4 ((count + k + 16) eps +
    4 (d + 2) eps max_c sum_l |W_cl| max_j |x_jl|)``, eps = 2^-53. Scratch ``rho`` (lanes,), ``row_mass`` (k, lanes).
    ``logit_bound`` (lanes,): an upper bound on ``max_c sum_l |W_cl| max_j |x_jl|`` kept by the caller (its value at the
    block's first step plus ``eta_t sum_l max_j |x_jl|`` per step, since a sign step moves an entry by at most eta_t).
    Inlined, with loops over the lanes innermost: a compiled call per step cost a third of a single
    configuration's step on the default preset. A NaN entry (a diverged run) counts as decided."""
    k, d, lanes = G_lanes.shape
    used = stop - first
    flush = 2.2 * k * 2.0**FLUSH_EXPONENT
    # first with the caller's logit bound and sum_j |coef_cj| <= 2.2 k (each coefficient is at most ~2.02 k / count
    # of its row's unit): where that decides every entry, the passes over W and the coefficients are saved
    # (measured: 1.1M -> 1.6M single configuration-steps per CPU second on the default preset)
    for r in range(used):
        rho[r] = _relative_error(count, k, d, logit_bound[r])
    undecided = 0
    for c in range(k):
        for l in range(d):
            for r in range(used):
                size = column_max[l, r]
                undecided += (abs(G_lanes[c, l, r]) <= (rho[r] * 2.2 * k + flush) * size) & (size > 0.0)
    if undecided == 0:
        return False
    for r in range(used):
        rho[r] = 0.0
    for c in range(k):
        for r in range(used):
            row_mass[c, r] = 0.0
        for l in range(d):
            for r in range(used):
                row_mass[c, r] += abs(W_lanes[c, l, r]) * column_max[l, r]
        for r in range(used):
            rho[r] = _larger(rho[r], row_mass[c, r])
    for r in range(used):
        rho[r] = _relative_error(count, k, d, rho[r])
    for c in range(k):
        for r in range(used):
            row_mass[c, r] = 0.0
        for j in range(count):
            for r in range(used):
                row_mass[c, r] += abs(Z[c, j, r])
        for r in range(used):
            row_mass[c, r] = rho[r] * row_mass[c, r] + flush
    # an entry still open takes its own sum_j |coef_cj x_jl| (the samples X (count, d, 1 or lanes)): on sparse
    # columns (pixels few samples light up) the row's bound is far too wide
    own_samples = X.shape[2] > 1
    undecided = False
    for r in range(used):
        for c in range(k):
            for l in range(d):
                size = column_max[l, r]
                value = G_lanes[c, l, r]
                open_ = abs(value) <= row_mass[c, r] * size and size > 0.0
                if open_:
                    mass = 0.0
                    for j in range(count):
                        mass += abs(Z[c, j, r] * X[j, l, r if own_samples else 0])
                    open_ = abs(value) <= rho[r] * mass + flush * size
                undecided = undecided or open_
                signs[first + r, c, l] = np.nan if open_ else _sign(value)
    return undecided


@njit(cache=True, inline='always')
def _sign(x):
    # inlined: the block loop of plain SignGD calls it per entry, and a call per entry would not vectorise
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


@njit(cache=True)
def _entrywise_direction(Z, direction, q, D):
    """Steepest direction of the entry-wise l_p ball (q = dual exponent), as rates.norms."""
    k, d = Z.shape
    if direction == DIRECTION_SIGN:
        for c in range(k):
            for l in range(d):
                D[c, l] = _sign(Z[c, l])
        return
    top = 0.0
    best_c, best_l = 0, 0
    for c in range(k):
        for l in range(d):
            if abs(Z[c, l]) > top:
                top, best_c, best_l = abs(Z[c, l]), c, l
    if direction == DIRECTION_COORDINATE:
        for c in range(k):
            for l in range(d):
                D[c, l] = 0.0
        D[best_c, best_l] = _sign(Z[best_c, best_l])
        return
    if direction == DIRECTION_FROBENIUS:
        safe = max(top, _TINY)
        total = 0.0
        for c in range(k):
            for l in range(d):
                total += (Z[c, l] / safe) ** 2
        fro = max(math.sqrt(total), _TINY)
        for c in range(k):
            for l in range(d):
                D[c, l] = Z[c, l] / safe / fro
        return
    safe = top if top > 0.0 else 1.0
    total = 0.0
    for c in range(k):
        for l in range(d):
            total += (abs(Z[c, l]) / safe) ** q
    denom = total ** ((q - 1.0) / q)
    if not denom > 0.0:
        denom = 1.0
    for c in range(k):
        for l in range(d):
            D[c, l] = _sign(Z[c, l]) * (abs(Z[c, l]) / safe) ** (q - 1.0) / denom


@njit(cache=True)
def _schatten_direction(Z, direction, q, D):
    """Steepest direction of the Schatten-p ball from the SVD of Z (polar factor, top pair, general p); NaN for
    a non-finite Z (a diverged run stays diverged and is reported so, where the SVD would raise)."""
    k, d = Z.shape
    if not np.isfinite(Z).all():
        D[:, :] = np.nan
        return
    U, sigma, Vh = np.linalg.svd(np.ascontiguousarray(Z), full_matrices=False)
    rank = sigma.shape[0]
    weights = np.zeros(rank)
    top = sigma[0]
    if direction == DIRECTION_POLAR:
        tol = top * (max(k, d) * _EPS)
        for j in range(rank):
            weights[j] = 1.0 if sigma[j] > tol else 0.0
    elif direction == DIRECTION_NUCLEAR:
        weights[0] = 1.0 if sigma[0] > 0.0 else 0.0
    else:
        # As for the polar factor, singular values within the SVD's rounding of 0 are 0. Kept, they would
        # weigh sigma^(q-1) ~ eps^(q-1) (1e-8 at q = 3/2): the gradient's rows sum to 0, so for k <= d one
        # singular value is exactly 0 and the SVD returns rounding noise for it.
        tol = top * (max(k, d) * _EPS)
        safe = top if top > 0.0 else 1.0
        total = 0.0
        for j in range(rank):
            if sigma[j] > tol:
                total += (sigma[j] / safe) ** q
        denom = total ** ((q - 1.0) / q)
        if not denom > 0.0:
            denom = 1.0
        for j in range(rank):
            weights[j] = (sigma[j] / safe) ** (q - 1.0) / denom if sigma[j] > tol else 0.0
    for c in range(k):
        for l in range(d):
            total = 0.0
            for j in range(rank):
                total += U[c, j] * weights[j] * Vh[j, l]
            D[c, l] = total


@njit(cache=True)
def _newton_schulz_direction(Z, D):
    """Muon's quintic Newton-Schulz approximation of the polar factor (rates.norms.newton_schulz_polar)."""
    k, d = Z.shape
    transpose = k > d
    rows, cols = (d, k) if transpose else (k, d)
    X = np.empty((rows, cols))
    total = 0.0
    for i in range(rows):
        for j in range(cols):
            X[i, j] = Z[j, i] if transpose else Z[i, j]
            total += X[i, j] * X[i, j]
    fro = math.sqrt(total)
    if fro > 0.0:
        for i in range(rows):
            for j in range(cols):
                X[i, j] /= fro
    A = np.empty((rows, rows))
    B = np.empty((rows, rows))
    Y = np.empty((rows, cols))
    for _ in range(_NS_STEPS):
        for i in range(rows):
            for j in range(rows):
                s = 0.0
                for l in range(cols):
                    s += X[i, l] * X[j, l]
                A[i, j] = s
        for i in range(rows):
            for j in range(rows):
                s = 0.0
                for l in range(rows):
                    s += A[i, l] * A[l, j]
                B[i, j] = _NS_B * A[i, j] + _NS_C * s
        for i in range(rows):
            for j in range(cols):
                s = 0.0
                for l in range(rows):
                    s += B[i, l] * X[l, j]
                Y[i, j] = _NS_A * X[i, j] + s
        X[:, :] = Y
    for i in range(rows):
        for j in range(cols):
            if transpose:
                D[j, i] = X[i, j]
            else:
                D[i, j] = X[i, j]


@njit(cache=True, inline="always")
def _steepest_direction(Z, direction, q, D):
    """The steepest direction ``D`` of the norm switch ``direction`` (not Adam) for the signal ``Z`` (k, d): the
    entry-wise norms, Muon's Newton-Schulz factor or the Schatten norms."""
    if direction <= DIRECTION_LP:
        _entrywise_direction(Z, direction, q, D)
    elif direction == DIRECTION_NEWTON_SCHULZ:
        _newton_schulz_direction(Z, D)
    else:
        _schatten_direction(Z, direction, q, D)


@njit(cache=True, nogil=True)
def advance(W, t0, t1, H, y, source, batch, direction, q, use_momentum, eta0, a, beta, beta1, beta2, eps,
            mom, mom_scale, adam_m, adam_v, adam_s, perms, epoch0, snap_coeff, snap_full, snap_scale,
            lane_H, lane_y, schedule_row, schedule_table, table_t0, certify, column_max, signs, stopped):
    """Advance every configuration r of ``W`` (R, k, d) from step t0 to t1 (see the module docstring).

    Data: every run trains on ``H`` (n, d) with labels ``y`` (n,), unless ``lane_H`` (R, n, d) and ``lane_y``
    (R, n) are given (a leading axis of length R, not 0): then run r trains on its own ``lane_H[r]``,
    ``lane_y[r]`` (draws of a dataset of one shape, advanced together; each lane of a block reads its own
    samples, the mini-batch layout of :func:`_gradient_lanes`). Not for VR: its snapshot reads ``H``.

    Schedules: run r's step size is ``eta0[r] * (t + 2)^-a[r]`` (the polynomial family) where
    ``schedule_row[r]`` is -1, else ``eta0[r] * schedule_table[schedule_row[r], t - table_t0]``: the float64
    values ``f(t)`` of its schedule for the steps ``table_t0 ..`` (one row per distinct schedule, covering t0 .. t1).
    ``schedule_table`` None (no run outside the polynomial family) compiles a specialisation without the table,
    the step loop the polynomial family had before schedules were expressions.

    Per-run arrays have a leading R axis: hyper-parameters (R,), momentum (R, k, d) with one log-scale per
    class row (R, k), Adam's m and sqrt(v) (R, k, d) with one log-scale per row shared by the two (R, k),
    the epoch permutations (R, E, n) of epochs ``epoch0 .. epoch0 + E - 1``, the VR snapshot coefficients
    (R, k, n), full gradient (R, k, d) and row log-scales (R, k). Log-scales start at -inf. Arrays a recipe
    does not use may be empty-shaped placeholders of the right rank.

    Configurations go through in blocks of ``LANES``, each block from t0 to t1 before the next; a remainder
    of fewer than :func:`filled_lanes` (and every configuration when a block's scratch would pass
    ``BLOCK_BYTES``) goes one configuration at a time. Lanes of a block past its last configuration are
    padding (zero weights and step sizes; zero samples where lanes read their own) that no result reads. A
    block's iterates are copied into the block layout once, at ``t0``, and back once, at ``t1``.

    Exact signs (``certify``, plain full-batch SignGD only): after each step's gradient, every entry is tested
    against the bound of its rounding (:mod:`rates.numeric.exact_sign`: ``rho sum_j |coef_j| max_j |x_jl|`` plus what
    the flushed coefficients can add; ``column_max`` (R, d) each run's ``max_j |x_jl|``). When an entry of a block
    is undecided, the block stops before that step's update: ``stopped[r]`` is that step for the block's runs
    (``t1`` for runs that reached it), ``signs[r]`` the signs of that step's gradient with NaN at the undecided
    entries, and ``W`` the iterate at that step; the caller settles the NaN signs exactly, takes the step and
    calls again from the next one (:class:`rates.numeric.fused.group.FusedGroup`).

    Per step: one compiled call computes the block's gradients (:func:`_gradient_lanes`); the rest of the
    recipe is written inline below rather than in a function called per configuration, because a compiled
    call with the ~25 arrays it needs cost ~0.3 us (measured), a sixth of a single configuration's step.
    """
    R, k, d = W.shape
    n = H.shape[0]
    own_data = lane_H.shape[0] > 0
    count = n if source == SOURCE_FULL else batch
    steps_per_epoch = n // count
    filled = filled_lanes(own_data or source != SOURCE_FULL, count, k, d)
    G = np.empty((k, d))
    D = np.empty((k, d))
    snap_batch = np.empty((k, d))
    log_top = np.empty(n)
    scale = np.empty(k)  # the log-scales of the signal's class rows
    for r in range(R):
        stopped[r] = t1
    first = 0
    while first < R:
        wide = R - first >= filled
        lanes = LANES if wide else 1
        stop = min(R, first + lanes)
        W_lanes = np.zeros((k, d, lanes))
        shared = wide and source == SOURCE_FULL and not own_data
        sample_lanes = 1 if shared else lanes
        X = np.zeros((count, d, sample_lanes))
        Y = np.zeros((count, sample_lanes), dtype=np.int64)
        # Z, K, T, L, U, P are views of the flat arrays (the same memory), which the flat loops use
        Z_flat = np.empty(k * count * lanes)
        Z = Z_flat.reshape((k, count, lanes))
        K_flat = np.empty(k * count * lanes)
        K = K_flat.reshape((k, count, lanes))
        T_flat, L_flat, U_flat, P_flat = np.empty(count * lanes), np.empty(count * lanes), \
            np.empty(count * lanes), np.empty(count * lanes)
        T, L, U, P = T_flat.reshape((count, lanes)), L_flat.reshape((count, lanes)), \
            U_flat.reshape((count, lanes)), P_flat.reshape((count, lanes))
        G_lanes = np.empty((k, d, lanes))
        log_scale = np.empty((k, lanes))
        W_lanes_flat, G_lanes_flat, X_flat = W_lanes.reshape(k * d * lanes), G_lanes.reshape(k * d * lanes), \
            X.reshape(count * d * sample_lanes)
        # one lane: the same memory without the lane axis (see _gradient_one), and the samples transposed
        W_one, G_one = W_lanes.reshape((k, d * lanes)), G_lanes.reshape((k, d * lanes))
        log_scale_one = log_scale.reshape(k * lanes)
        Y_one = Y.reshape(count * sample_lanes)
        Z_one, K_one = Z_flat.reshape((k, count * lanes)), K_flat.reshape((k, count * lanes))
        XT_one = np.empty((d, count))
        width = -(-d // QUAD) * QUAD
        X_quads = np.zeros(count * width)  # each sample's features, padded by zeros to a whole number of quads
        G_quads = np.empty(k * width)
        D_lanes = np.zeros((k, d, lanes))
        eta_lanes = np.zeros(lanes)
        # the block's distinct schedules: one power (t + 2)^-a per distinct a and step (or one table read per
        # distinct tabled schedule), not per run (libm's pow was ~5% of a SignGD step in a 64-lane block; data
        # draws share one schedule)
        exponent_of = np.zeros(lanes, dtype=np.int64)
        exponents = np.zeros(lanes)
        rows = np.zeros(lanes, dtype=np.int64)
        distinct = 0
        for r in range(stop - first):
            u = 0
            while u < distinct and (exponents[u] != a[first + r] or rows[u] != schedule_row[first + r]):
                u += 1
            if u == distinct:
                exponents[u] = a[first + r]
                rows[u] = schedule_row[first + r]
                distinct += 1
            exponent_of[r] = u
        powers = np.zeros(lanes)
        row_mass = np.zeros((k, lanes))
        rho = np.zeros(lanes)
        column_max_lanes = np.zeros((d, lanes))
        column_total = np.zeros(lanes)  # sum_l max_j |x_jl|
        logit_bound = np.zeros(lanes)  # max_c sum_l |W_cl| max_j |x_jl|, or more (see _undecided_signs)
        for r in range(stop - first):
            for c in range(k):
                for l in range(d):
                    W_lanes[c, l, r] = W[first + r, c, l]
            for l in range(d):
                column_max_lanes[l, r] = column_max[first + r, l]
                column_total[r] += column_max[first + r, l]
            for c in range(k):
                total = 0.0
                for l in range(d):
                    total += abs(W_lanes[c, l, r]) * column_max_lanes[l, r]
                logit_bound[r] = max(logit_bound[r], total)
        plain_sign = direction == DIRECTION_SIGN and not use_momentum and source != SOURCE_VR
        # Sign-type directions (the sign, Adam entry by entry) take each class row at its own scale; the
        # others weigh entries against each other, so their signal has one scale (a row 1e-308 below the
        # largest is 0 there), and per-row scales would only add the rounding of the log-scales (~|s| eps)
        # to the ratios of rows (which the polar factor's rank test sees).
        row_scales = direction == DIRECTION_SIGN or direction == DIRECTION_ADAM
        same_labels = False  # own samples, one label sequence (draws of a preset list their classes in order)
        if source == SOURCE_FULL and own_data:  # every lane sees every sample of its own data, in order
            same_labels = True
            for r in range(stop - first):
                for j in range(count):
                    Y[j, r] = lane_y[first + r, j]
                    same_labels = same_labels and Y[j, r] == Y[j, 0]
                    for l in range(d):
                        X[j, l, r] = lane_H[first + r, j, l]
        elif source == SOURCE_FULL:  # every lane sees every sample, in order
            for j in range(count):
                for l in range(d):
                    for r in range(sample_lanes):
                        X[j, l, r] = H[j, l]
                for r in range(sample_lanes):
                    Y[j, r] = y[j]
        if source == SOURCE_FULL and not wide:
            for j in range(count):
                for l in range(d):
                    XT_one[l, j] = X[j, l, 0]
                    X_quads[j * width + l] = X[j, l, 0]
        for t in range(t0, t1):
            epoch, offset = t // steps_per_epoch - epoch0, (t % steps_per_epoch) * count
            for r in range(stop - first):
                if source != SOURCE_FULL:
                    for j in range(count):
                        i = perms[first + r, epoch, offset + j]
                        Y[j, r] = lane_y[first + r, i] if own_data else y[i]
                        for l in range(d):
                            X[j, l, r] = lane_H[first + r, i, l] if own_data else H[i, l]
                            if not wide:
                                XT_one[l, j] = X[j, l, 0]
                                X_quads[j * width + l] = X[j, l, 0]
            if shared:
                _gradient_lanes(W_lanes, W_lanes_flat, X, X_flat, Y, Z, Z_flat, K, K_flat, T, T_flat, L, L_flat, U,
                                U_flat, P, P_flat, G_lanes_flat, log_scale, LANES, 1, 1)
            elif wide and same_labels:
                _gradient_lanes(W_lanes, W_lanes_flat, X, X_flat, Y, Z, Z_flat, K, K_flat, T, T_flat, L, L_flat, U,
                                U_flat, P, P_flat, G_lanes_flat, log_scale, LANES, 0, 1)
            elif wide:
                _gradient_lanes(W_lanes, W_lanes_flat, X, X_flat, Y, Z, Z_flat, K, K_flat, T, T_flat, L, L_flat, U,
                                U_flat, P, P_flat, G_lanes_flat, log_scale, LANES, 0, 0)
            else:
                _gradient_one(W_one, XT_one, X_quads, Y_one, Z_one, Z_flat, K_one, K_flat, T_flat, L_flat, U_flat,
                              P_flat, G_one, G_quads, width, log_scale_one)
            if schedule_table is None:  # the polynomial family only: numba prunes the table's branch
                for u in range(distinct):
                    powers[u] = (t + 2.0) ** (-exponents[u])
            else:
                for u in range(distinct):
                    if rows[u] < 0:
                        powers[u] = (t + 2.0) ** (-exponents[u])
                    else:
                        powers[u] = schedule_table[rows[u], t - table_t0]
            for r in range(stop - first):
                eta_lanes[r] = eta0[first + r] * powers[exponent_of[r]]
            if plain_sign and certify and _undecided_signs(W_lanes, G_lanes, Z, X, column_max_lanes, logit_bound,
                                                           first, stop, count, rho, row_mass, signs):
                for r in range(stop - first):
                    stopped[first + r] = t
                break
            if plain_sign:  # direction and update in one block loop
                for c in range(k):
                    for l in range(d):
                        for r in range(lanes):
                            W_lanes[c, l, r] -= eta_lanes[r] * _sign(G_lanes[c, l, r])
                if certify:
                    for r in range(lanes):
                        logit_bound[r] += 1.0000001 * eta_lanes[r] * column_total[r]  # covers its own rounding
                continue
            # the rest of the recipe, configuration by configuration: VR correction, momentum, Adam or the
            # steepest direction, into D_lanes; then the update, one block loop
            for r in range(stop - first):
                g = first + r
                for c in range(k):
                    for l in range(d):
                        G[c, l] = G_lanes[c, l, r]
                if row_scales:
                    for c in range(k):
                        scale[c] = log_scale[c, r] * _LN2
                else:  # one scale for all rows, by exact powers of two: rows keep their exact ratios
                    top = log_scale[0, r]
                    for c in range(k):
                        top = max(top, log_scale[c, r])
                    for c in range(k):
                        factor = 2.0 ** (log_scale[c, r] - top) if log_scale[c, r] - top >= FLUSH_EXPONENT else 0.0
                        scale[c] = top * _LN2
                        for l in range(d):
                            G[c, l] *= factor
                if source == SOURCE_VR:
                    if t % steps_per_epoch == 0:  # the snapshot W~: the epoch's first iterate (not yet updated)
                        for c in range(k):
                            for l in range(d):
                                D[c, l] = W_lanes[c, l, r]
                        _coefficients(D, H, y, n, snap_coeff[g], log_top, snap_scale[g], row_scales)
                        for c in range(k):
                            for l in range(d):
                                total = 0.0
                                for i in range(n):
                                    total += snap_coeff[g, c, i] * (H[i, l] / n)
                                snap_full[g, c, l] = total
                    for c in range(k):
                        for l in range(d):
                            total = 0.0
                            for j in range(count):
                                i = perms[g, epoch, offset + j]
                                total += snap_coeff[g, c, i] * (H[i, l] / count)
                            snap_batch[c, l] = total
                    for c in range(k):
                        top = max(scale[c], snap_scale[g, c])
                        fresh, old = math.exp(scale[c] - top), math.exp(snap_scale[g, c] - top)
                        for l in range(d):
                            G[c, l] = fresh * G[c, l] + old * (snap_full[g, c, l] - snap_batch[c, l])
                        scale[c] = top
                    _renormalise(G, scale, row_scales)
                if use_momentum:
                    log_beta = math.log(beta[g]) if beta[g] > 0.0 else -np.inf
                    log_rest = math.log1p(-beta[g])
                    for c in range(k):
                        old_exp, new_exp = mom_scale[g, c] + log_beta, scale[c] + log_rest
                        top = max(old_exp, new_exp)
                        keep, take = math.exp(old_exp - top), math.exp(new_exp - top)
                        for l in range(d):
                            mom[g, c, l] = keep * mom[g, c, l] + take * G[c, l]
                        mom_scale[g, c] = top
                    _renormalise(mom[g], mom_scale[g], row_scales)
                    for c in range(k):
                        scale[c] = mom_scale[g, c]
                        for l in range(d):
                            G[c, l] = mom[g, c, l]
                if direction == DIRECTION_ADAM:
                    b1, b2 = beta1[g], beta2[g]
                    root_beta2, root_rest2 = math.sqrt(b2), math.sqrt(1.0 - b2)
                    bias1, bias2 = 1.0 - b1 ** (t + 1), math.sqrt(1.0 - b2 ** (t + 1))
                    log_eps = math.log(eps[g]) if eps[g] > 0.0 else -np.inf
                    for c in range(k):  # each row with its own log-scale (m and sqrt(v) share it)
                        top = max(adam_s[g, c], scale[c])
                        keep, take = math.exp(adam_s[g, c] - top), math.exp(scale[c] - top)
                        largest = 0.0
                        for l in range(d):
                            grad = take * G[c, l]
                            adam_m[g, c, l] = b1 * keep * adam_m[g, c, l] + (1.0 - b1) * grad
                            adam_v[g, c, l] = math.hypot(root_beta2 * keep * adam_v[g, c, l], root_rest2 * grad)
                            largest = max(largest, abs(adam_m[g, c, l]), adam_v[g, c, l])
                        if not largest > 0.0:
                            largest = 1.0
                        adam_s[g, c] = top + math.log(largest)
                        floor = math.exp(log_eps - adam_s[g, c])
                        for l in range(d):
                            adam_m[g, c, l] /= largest
                            adam_v[g, c, l] /= largest
                            denom = adam_v[g, c, l] / bias2 + floor
                            D[c, l] = (adam_m[g, c, l] / bias1) / denom if denom > 0.0 else 0.0
                else:
                    _steepest_direction(G, direction, q, D)
                for c in range(k):
                    for l in range(d):
                        D_lanes[c, l, r] = D[c, l]
            for c in range(k):
                for l in range(d):
                    for r in range(lanes):
                        W_lanes[c, l, r] -= eta_lanes[r] * D_lanes[c, l, r]
        for r in range(stop - first):
            for c in range(k):
                for l in range(d):
                    W[first + r, c, l] = W_lanes[c, l, r]
        first = stop


@njit(cache=True)
def open_entries(G, Z, X, column_max, starts, rows, rho, flush, undecided):
    """The undecided entries of ``G`` (R, k, d; rows in their own units) by the bound of
    :mod:`rates.numeric.exact_sign`, compiled (the GEMM paths' check): ``Z`` (R k, n) the coefficients in their rows'
    units, ``X`` (n, d) the samples, ``column_max`` (d,) ``max_j |x_jl|``, ``rho`` (R,), ``flush``
    :func:`rates.numeric.exact_sign.flush_error`; an entry the row bound ``rho (sum_j |coef_cj|) max_j |x_jl|``
    leaves open is tested again with its own ``sum_j |coef_cj x_jl|`` (a loop over the samples for that entry only,
    those its column lights up: ``rows[starts[l]:starts[l + 1]]`` of :func:`lit_samples`, the same sum without its
    zero terms; a product of the absolute values for every entry cost as much as the gradient's, and a loop over all
    n samples read the column with a stride of d: ~550 us a step on digits, where the open entries lie in sparse
    columns). Writes ``undecided`` (R, k, d); returns whether any entry is undecided."""
    R, k, d = G.shape
    n = X.shape[0]
    anything = False
    for r in range(R):
        for c in range(k):
            row = r * k + c
            mass = 0.0
            for j in range(n):
                mass += abs(Z[row, j])
            for l in range(d):
                size = column_max[l]
                value = abs(G[r, c, l])
                open_ = size > 0.0 and value <= (rho[r] * mass + flush) * size
                if open_:
                    own = 0.0
                    for i in range(starts[l], starts[l + 1]):
                        j = rows[i]
                        own += abs(Z[row, j] * X[j, l])
                    open_ = value <= rho[r] * own + flush * size
                undecided[r, c, l] = open_
                anything = anything or open_
    return anything


def lit_samples(X):
    """The nonzero rows of every column of ``X`` (n, d), column by column: ``(starts, rows)`` with column l's in
    ``rows[starts[l]:starts[l + 1]]`` in increasing order (a compressed-column index, for :func:`float_signs`)."""
    columns, found = np.nonzero(X.T != 0.0)
    starts = np.searchsorted(columns, np.arange(X.shape[1] + 1)).astype(np.int64)
    return starts, found.astype(np.int64)


@njit(cache=True, nogil=True)
def float_signs(W, X, y, classes, features, starts, rows, out):
    """Stage 1 for the entries ``(classes[e], features[e])``: ``out[e]`` their signs, NaN where the rounding bound
    holds 0. Per sample lighting up one of the features: the logits (feature order), a bound on their rounding,
    ``log |coef_c|`` in the log domain (``log S_c = z_c - log sum e^z``, ``log(1 - S_y) = log sum_{c != y} e^z -
    log sum e^z``: nothing underflows) and a bound on its absolute error; per entry the terms ``coef_c x_l`` as
    ``exp(log |term| - m)`` with ``m`` the entry's largest log-term, their sum and the bound of its error. Compiled:
    as NumPy array operations this was ~1 ms per call, four times a whole GEMM step on digits. libm exp and log
    (correctly rounded to within 1 ulp). The samples that light up a feature come from its column's nonzero rows
    ``rows[starts[l]:starts[l + 1]]`` (:func:`lit_samples`), so a call costs what those samples cost, not a pass
    over all n d pixels."""
    n, d = X.shape
    k = W.shape[0]
    lit = np.zeros(n, dtype=np.int64)
    position = np.full(n, -1, dtype=np.int64)  # lit[position[j]] == j for the lit samples, -1 for the others
    m = 0
    for e in range(features.shape[0]):
        l = features[e]
        for i in range(starts[l], starts[l + 1]):
            j = rows[i]
            if position[j] < 0:
                lit[m] = j
                position[j] = m
                m += 1
    log_coeff = np.empty((m, k))
    error = np.empty(m)
    z = np.empty(k)
    sizes = np.empty(k)
    for jj in range(m):
        j = lit[jj]
        for c in range(k):
            z[c] = 0.0
            sizes[c] = 0.0
        # feature by feature for all k classes (k independent sums, where one sum per class was a chain of
        # dependent additions), skipping the zero pixels: the same terms but the zeros, in feature order
        for l in range(d):
            x = X[j, l]
            if x != 0.0:
                for c in range(k):
                    term = W[c, l] * x
                    z[c] += term
                    sizes[c] += abs(term)
        slack = 0.0
        for c in range(k):
            slack = max(slack, sizes[c])
        label = y[j]
        top_wrong = -np.inf
        largest = abs(z[label])
        for c in range(k):
            largest = max(largest, abs(z[c]))
            if c != label and z[c] > top_wrong:
                top_wrong = z[c]
        wrong_sum = 0.0
        for c in range(k):
            if c != label:
                wrong_sum += math.exp(z[c] - top_wrong)
        log_wrong = top_wrong + math.log(wrong_sum)
        top = max(log_wrong, z[label])
        log_total = top + math.log(math.exp(log_wrong - top) + math.exp(z[label] - top))
        for c in range(k):
            log_coeff[jj, c] = (z[c] if c != label else log_wrong) - log_total
        error[jj] = 2.0 * (d + 2) * _HALF_EPS * slack + 16.0 * _HALF_EPS * (largest + abs(log_total) + k + 2)
    for e in range(features.shape[0]):
        c, l = classes[e], features[e]
        top = -np.inf
        count = starts[l + 1] - starts[l]  # the samples that light up feature l, in increasing order
        for i in range(starts[l], starts[l + 1]):
            j = rows[i]
            top = max(top, log_coeff[position[j], c] + math.log(abs(X[j, l])))
        if count == 0:
            out[e] = 0.0
            continue
        total, mass, bound = 0.0, 0.0, 0.0
        for i in range(starts[l], starts[l + 1]):
            j = rows[i]
            x = X[j, l]
            log_term = log_coeff[position[j], c] + math.log(abs(x))
            size = math.exp(log_term - top)
            negative = (y[j] == c) != (x < 0.0)
            total += -size if negative else size
            mass += size
            relative = math.expm1(error[position[j]] + 8.0 * _HALF_EPS * (abs(log_term) + abs(top) + 1.0))
            bound += size * (relative + 2.0 * _HALF_EPS)
        bound += (count + 2) * _HALF_EPS * mass + count * 2.0**-1000
        out[e] = math.copysign(1.0, total) if abs(total) > 2.0 * bound else np.nan


@njit(cache=True, nogil=True, inline="always")
def _stacked_gradient(W, X, Xt, y, logit_tiles, gradient_tiles, Z, K, T, L, U, P, log_scale, G, M):
    """One step's gradient of the GEMM stepper's compiled loops: every run's logits stacked, ``Z = W X^T``
    ((R k) x n: one BLAS GEMM through ``np.dot``, or the tiles of :func:`rows_times_rows` with ``logit_tiles``),
    the coefficients of :func:`_coefficients_of_logits` run by run, then ``G = Z X`` (a GEMM, or the tiles with
    ``gradient_tiles``): row c of run r's mean gradient is ``2^{log_scale[r, c]} G[r, c]``. ``K`` (R, k, n) keeps
    each run's exponents; ``M`` (R, k, n) their unflushed mantissas, or (0, k, n) for none."""
    R, k, d = W.shape
    n = X.shape[0]
    Z_runs = Z.reshape(R, k, n)
    Z_flat = Z.reshape(R, k * n)
    K_flat = K.reshape(R, k * n)
    if logit_tiles:
        rows_times_rows(W.reshape(R * k, d), X, Z)
    else:
        np.dot(W.reshape(R * k, d), Xt, Z)
    keep = M.shape[0] > 0
    for r in range(R):
        _coefficients_of_logits(Z_runs[r], Z_flat[r], y, K[r], K_flat[r], T, L, U, P, log_scale[r],
                                M[r] if keep else K[r], keep)
    if gradient_tiles:
        rows_times_rows(Z, Xt, G.reshape(R * k, d))
    else:
        np.dot(Z, X, G.reshape(R * k, d))


@njit(cache=True, nogil=True)
def _own_scale_signs(G, M, K, X, starts, rows, rho, undecided):
    """The undecided entries of ``G`` (R, k, d) summed again at their own scale from the coefficients the step kept
    unflushed (``M[r, c, j] 2^{K[r, c, j]}``: :func:`_coefficients_of_logits`): each entry's terms over the samples
    its column lights up (``rows[starts[l]:starts[l + 1]]``), scaled by exact powers of two to the largest term's
    exponent instead of the row's. Where every term lies 2^1000 below its row the row's sum holds only the flush
    bound, while here the largest term is of order 1; the error is the row's ``rho`` (:mod:`rates.numeric.exact_sign`:
    the coefficients' and the sum's rounding) of ``sum |terms|``, plus ``2^-1000 |term|`` for each term more than
    2^1000 below the entry's largest (left out of the sum). An entry whose sum exceeds that bound gets its sign in
    ``G`` and leaves ``undecided``; returns whether any entry is still undecided (a near-cancellation of its own
    terms, or an exact tie: stage 1 and the exact stage decide those)."""
    R, k, d = G.shape
    left = False
    for r in range(R):
        for c in range(k):
            for l in range(d):
                if not undecided[r, c, l]:
                    continue
                lo, hi = starts[l], starts[l + 1]
                top = -np.inf
                for i in range(lo, hi):
                    top = max(top, K[r, c, rows[i]])
                total, mass, dropped = 0.0, 0.0, 0.0
                for i in range(lo, hi):
                    j = rows[i]
                    term = M[r, c, j] * X[j, l]
                    shift = K[r, c, j] - top
                    if shift >= FLUSH_EXPONENT:
                        value = term * _power_of_two(shift)
                        total += value
                        mass += abs(value)
                    else:
                        dropped += abs(term)
                bound = (rho[r] + (hi - lo + 4) * _HALF_EPS) * mass + dropped * 2.0**FLUSH_EXPONENT
                if abs(total) > bound and hi > lo:
                    G[r, c, l] = 1.0 if total > 0.0 else -1.0
                    undecided[r, c, l] = False
                else:
                    left = True
    return left


@njit(cache=True, nogil=True)
def _settle_in_loop(W, X, y, G, undecided, starts, rows):
    """Stage 1 of the exact signs (:func:`float_signs`) for the undecided entries of every run of ``G`` (R, k, d):
    each one it decides gets its sign in ``G`` (-1, 0 or +1) and leaves ``undecided``; returns whether none is
    left. A diverged iterate (non-finite) is left to the caller."""
    R, k, d = G.shape
    settled = True
    for r in range(R):
        count = 0
        for c in range(k):
            for l in range(d):
                count += 1 if undecided[r, c, l] else 0
        if count == 0:
            continue
        if not np.isfinite(W[r]).all():
            settled = False
            continue
        classes = np.empty(count, dtype=np.int64)
        features = np.empty(count, dtype=np.int64)
        e = 0
        for c in range(k):
            for l in range(d):
                if undecided[r, c, l]:
                    classes[e], features[e] = c, l
                    e += 1
        out = np.empty(count)
        float_signs(W[r], X, y, classes, features, starts, rows, out)
        for e in range(count):
            if math.isnan(out[e]):
                settled = False
            else:
                G[r, classes[e], features[e]] = out[e]
                undecided[r, classes[e], features[e]] = False
    return settled


@njit(cache=True, nogil=True)
def gemm_sign_advance(W, t0, t1, X, Xt, y, eta0, a, column_max, column_total, starts, rows, logit_tiles,
                      gradient_tiles, Z, K, T, L, U, P, log_scale, G, rho, undecided, signs, M):
    """Plain full-batch SignGD of the R runs of ``W`` (R, k, d) from step ``t0`` towards ``t1`` as the GEMM stepper
    computes its gradient (:mod:`rates.numeric.gemm`), every step in this one compiled loop: the logits of all runs
    stacked, ``Z = W X^T`` ((R k) x n, one BLAS GEMM through ``np.dot``, or the tiles of :func:`rows_times_rows`
    with ``logit_tiles``), the coefficients of :func:`_coefficients_of_logits` run by run, ``G = Z X`` (a second
    GEMM, or the tiles with ``gradient_tiles``; :mod:`rates.numeric.fused.products` says where each is faster),
    the check of :func:`open_entries`, and
    ``W <- W - eta_t sign(G)`` with ``eta_t = eta0 (t + 2)^-a`` (the polynomial family; the fused kernels'
    float64 operations). Why here and not in the torch program: at one configuration of 10 classes on 32-100
    features and 500-2,000 samples a step's products take 12-170 us, and the program's Python and torch calls
    around them ~100 us more.

    ``X`` (n, d) and ``Xt`` (d, n) the samples, ``y`` (n,) labels, ``eta0``, ``a`` (R,), ``column_max`` (d,)
    ``max_j |x_jl|`` and ``column_total`` its sum; scratch ``Z`` (R k, n), ``K`` (R, k, n), ``T``, ``L``, ``U``, ``P``
    (n,), ``log_scale`` (R, k), ``G`` (R, k, d), ``rho`` (R,), ``undecided`` (R, k, d) booleans. The exact-sign
    bound is :mod:`rates.numeric.exact_sign`'s (``relative_error``, ``logit_error``, ``flush_error``, written out
    here), first with a running upper bound on the logits' size (``max_c sum_l |W_cl| max_j |x_jl|`` grows by at
    most ``eta_t sum_l max_j |x_jl|`` per step), and only where that leaves an entry open with the iterate's own.

    Entries the bound leaves open are decided here, where they can be: first summed at their own scale from the
    step's unflushed coefficients (:func:`_own_scale_signs`; ``M`` (R, k, n) their mantissas, ``K`` (R, k, n) their
    exponents), then by stage 1 of :mod:`rates.numeric.exact_sign` (:func:`float_signs`: each entry in the log domain
    from the samples of its column, ``starts`` and ``rows`` of :func:`lit_samples`). On integer pixels a sparse
    column's entries lie below 2^-1000 of their row at most steps: returning to Python for each such step cost
    ~1 ms (SignGD on scikit-learn's digits: ~2,800 of the first 3,000 steps), stage 1 for every one of them
    ~150-200 us, the sums at their own scale a few us.

    Returns the step at which it stopped: ``t1``, or the first step with an entry whose sign neither the bound nor
    stage 1 decides; then ``W`` is that step's iterate (not updated), ``signs`` (R, k, d) the signs of its gradient
    with NaN at the undecided entries, and the caller settles those exactly, takes the step and calls again."""
    R, k, d = W.shape
    n = X.shape[0]
    flush = 2.2 * k * 2.0**FLUSH_EXPONENT
    logit_bound = np.zeros(R)
    for r in range(R):
        logit_bound[r] = _logit_size(W[r], column_max)
    for t in range(t0, t1):
        _stacked_gradient(W, X, Xt, y, logit_tiles, gradient_tiles, Z, K, T, L, U, P, log_scale, G, M)
        # the coefficients are at most ~2.02 k / n of their row's unit each, so sum_j |coef_cj| <= 2.2 k
        loose = False
        for r in range(R):
            rho[r] = _relative_error(n, k, d, logit_bound[r])
            for c in range(k):
                for l in range(d):
                    size = column_max[l]
                    loose = loose or (abs(G[r, c, l]) <= (rho[r] * 2.2 * k + flush) * size and size > 0.0)
        if loose:
            for r in range(R):
                rho[r] = _relative_error(n, k, d, _logit_size(W[r], column_max))
            if open_entries(G, Z, X, column_max, starts, rows, rho, flush, undecided) and _own_scale_signs(
                    G, M, K, X, starts, rows, rho, undecided) and not _settle_in_loop(
                    W, X, y, G, undecided, starts, rows):
                for r in range(R):
                    for c in range(k):
                        for l in range(d):
                            signs[r, c, l] = np.nan if undecided[r, c, l] else _sign(G[r, c, l])
                return t
        for r in range(R):
            eta = eta0[r] * (t + 2.0) ** (-a[r])
            for c in range(k):
                for l in range(d):
                    W[r, c, l] -= eta * _sign(G[r, c, l])
            logit_bound[r] += 1.0000001 * eta * column_total
    return t1


@njit(cache=True, nogil=True)
def gemm_steepest_advance(W, t0, t1, X, Xt, y, eta0, a, direction, q, logit_tiles, gradient_tiles, Z, K, T, L, U, P,
                          log_scale, G, one, D, M):
    """Plain full-batch steepest descent (no momentum, no VR, not Adam, not the sign: NGD, coordinate descent,
    entry-wise l_p, the polar factor, Schatten-p and Muon's Newton-Schulz factor) of the R runs of ``W`` (R, k, d)
    from step ``t0`` to ``t1``, the GEMM stepper's gradient in one compiled loop, as :func:`gemm_sign_advance` is
    for SignGD: the stacked logits ``Z = W X^T`` (a BLAS GEMM or the tiles with ``logit_tiles``), the coefficients
    of :func:`_coefficients_of_logits` run by run, ``G = Z X`` (a GEMM or the tiles with ``gradient_tiles``); then
    per run the rows brought to one scale by exact powers of two (row c times ``2^{N_c - max N}``, 0 below
    ``2^FLUSH_EXPONENT``: :func:`rates.numeric.gemm.one_scale`, the fused kernels' rule for directions that weigh
    entries against each other), the steepest direction of :func:`advance` (:func:`_entrywise_direction`,
    :func:`_newton_schulz_direction` or :func:`_schatten_direction`, by the switch ``direction`` and dual exponent
    ``q``) and ``W <- W - eta_t D`` with ``eta_t = eta0 (t + 2)^-a``.

    Why here and not in the torch program: at one configuration of 10 classes on 32-100 features and 500-2,000
    samples the program's Python and torch calls around the products cost ~100 us a step, as much as the
    products (measured: NGD on scikit-learn's digits, docs/benchmarks.md). The float64 operations of the direction
    and the update are the fused kernels'; the sums of the two products are a GEMM's (:mod:`rates.numeric.gemm`
    says what that changes: rounding, not the iterates beyond it).

    Scratch ``Z`` (R k, n), ``K`` (R, k, n), ``T``, ``L``, ``U``, ``P`` (n,), ``log_scale`` (R, k), ``G`` (R, k, d),
    ``one`` and ``D`` (k, d), ``M`` (0, k, n) (no mantissas kept)."""
    R, k, d = W.shape
    for t in range(t0, t1):
        _stacked_gradient(W, X, Xt, y, logit_tiles, gradient_tiles, Z, K, T, L, U, P, log_scale, G, M)
        for r in range(R):
            top = log_scale[r, 0]
            for c in range(1, k):
                top = max(top, log_scale[r, c])
            for c in range(k):
                factor = _power_of_two(log_scale[r, c] - top)
                for l in range(d):
                    one[c, l] = G[r, c, l] * factor
            _steepest_direction(one, direction, q, D)
            eta = eta0[r] * (t + 2.0) ** (-a[r])
            for c in range(k):
                for l in range(d):
                    W[r, c, l] -= eta * D[c, l]
    return t1


# The tiles of rates.numeric.fused.products (the module docstring there says why and what they measured): sums
# over the inner dimension that LLVM may split across vector lanes (reassociation, fused multiply-adds; no other
# fast-math assumption).
_REASSOCIATE = {"reassoc", "contract"}
_TILE = 6  # rows of B per tile


@njit(cache=True, nogil=True)
def rows_times_rows(A, B, out):
    """``out = A @ B.T`` for ``A`` (m, K), ``B`` (N, K), ``out`` (m, N), all C-contiguous float64. Tiles of
    5 x 6 entries, the last rows in tiles of 2 and 1, the last ``N mod 6`` columns one entry at a time."""
    m, N = A.shape[0], B.shape[0]
    whole = N - N % _TILE
    for j in range(0, whole, _TILE):
        i = 0
        while i + 5 <= m:
            _five_by_six(A, B, out, i, j)
            i += 5
        while i + 2 <= m:
            _two_by_six(A, B, out, i, j)
            i += 2
        if i < m:
            _one_by_six(A, B, out, i, j)
    for j in range(whole, N):
        for i in range(m):
            out[i, j] = _dot(A, B, i, j)


@njit(cache=True, nogil=True, fastmath=_REASSOCIATE)
def _dot(A, B, i, j):
    total = 0.0
    for l in range(A.shape[1]):
        total += A[i, l] * B[j, l]
    return total


@njit(cache=True, nogil=True, fastmath=_REASSOCIATE)
def _five_by_six(A, B, out, i, j):
    """``out[i:i+5, j:j+6]``: 30 running sums held in registers over the whole inner dimension."""
    s00 = s01 = s02 = s03 = s04 = s05 = 0.0
    s10 = s11 = s12 = s13 = s14 = s15 = 0.0
    s20 = s21 = s22 = s23 = s24 = s25 = 0.0
    s30 = s31 = s32 = s33 = s34 = s35 = 0.0
    s40 = s41 = s42 = s43 = s44 = s45 = 0.0
    for l in range(A.shape[1]):
        a0, a1, a2, a3, a4 = A[i, l], A[i + 1, l], A[i + 2, l], A[i + 3, l], A[i + 4, l]
        b0, b1, b2, b3, b4, b5 = B[j, l], B[j + 1, l], B[j + 2, l], B[j + 3, l], B[j + 4, l], B[j + 5, l]
        s00 += a0 * b0
        s01 += a0 * b1
        s02 += a0 * b2
        s03 += a0 * b3
        s04 += a0 * b4
        s05 += a0 * b5
        s10 += a1 * b0
        s11 += a1 * b1
        s12 += a1 * b2
        s13 += a1 * b3
        s14 += a1 * b4
        s15 += a1 * b5
        s20 += a2 * b0
        s21 += a2 * b1
        s22 += a2 * b2
        s23 += a2 * b3
        s24 += a2 * b4
        s25 += a2 * b5
        s30 += a3 * b0
        s31 += a3 * b1
        s32 += a3 * b2
        s33 += a3 * b3
        s34 += a3 * b4
        s35 += a3 * b5
        s40 += a4 * b0
        s41 += a4 * b1
        s42 += a4 * b2
        s43 += a4 * b3
        s44 += a4 * b4
        s45 += a4 * b5
    row = out[i]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s00, s01, s02, s03, s04, s05
    row = out[i + 1]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s10, s11, s12, s13, s14, s15
    row = out[i + 2]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s20, s21, s22, s23, s24, s25
    row = out[i + 3]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s30, s31, s32, s33, s34, s35
    row = out[i + 4]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s40, s41, s42, s43, s44, s45


@njit(cache=True, nogil=True, fastmath=_REASSOCIATE)
def _two_by_six(A, B, out, i, j):
    """``out[i:i+2, j:j+6]``: 12 running sums held in registers over the whole inner dimension."""
    s00 = s01 = s02 = s03 = s04 = s05 = 0.0
    s10 = s11 = s12 = s13 = s14 = s15 = 0.0
    for l in range(A.shape[1]):
        a0, a1 = A[i, l], A[i + 1, l]
        b0, b1, b2, b3, b4, b5 = B[j, l], B[j + 1, l], B[j + 2, l], B[j + 3, l], B[j + 4, l], B[j + 5, l]
        s00 += a0 * b0
        s01 += a0 * b1
        s02 += a0 * b2
        s03 += a0 * b3
        s04 += a0 * b4
        s05 += a0 * b5
        s10 += a1 * b0
        s11 += a1 * b1
        s12 += a1 * b2
        s13 += a1 * b3
        s14 += a1 * b4
        s15 += a1 * b5
    row = out[i]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s00, s01, s02, s03, s04, s05
    row = out[i + 1]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s10, s11, s12, s13, s14, s15


@njit(cache=True, nogil=True, fastmath=_REASSOCIATE)
def _one_by_six(A, B, out, i, j):
    """``out[i:i+1, j:j+6]``: 6 running sums held in registers over the whole inner dimension."""
    s00 = s01 = s02 = s03 = s04 = s05 = 0.0
    for l in range(A.shape[1]):
        a0 = A[i, l]
        b0, b1, b2, b3, b4, b5 = B[j, l], B[j + 1, l], B[j + 2, l], B[j + 3, l], B[j + 4, l], B[j + 5, l]
        s00 += a0 * b0
        s01 += a0 * b1
        s02 += a0 * b2
        s03 += a0 * b3
        s04 += a0 * b4
        s05 += a0 * b5
    row = out[i]
    row[j], row[j + 1], row[j + 2], row[j + 3], row[j + 4], row[j + 5] = s00, s01, s02, s03, s04, s05
