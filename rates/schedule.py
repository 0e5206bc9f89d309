"""A learning-rate schedule ``eta_t = eta0 * f(t)`` as one object that every stage reads.

Setting: docs/theory.md section 2 runs every optimiser with a step size ``eta_t`` at step ``t = 0, 1, ...``;
the three papers state their theorems for general schedules (MINIBATCH Ass. 3.3/3.4, SIGNADAM's schedule
assumptions) and specialise them to the polynomial family ``eta0 (t+2)^(-a)``, ``a in (0, 1]`` (SIGNADAM
Cor. 5.4, MINIBATCH Lemma C.15) [given].

A :class:`Schedule` is the canonical text of a sympy expression in ``t`` and ``eta0`` plus, when the
expression is the polynomial family, its exponent ``a`` as an exact fraction. ``--a 1/2`` and ``--schedule
'eta0*(t+2)**(-1/2)'`` make the same object (equal, same hash), so every output of the polynomial family
stays what it was.

Importing this module does not import sympy (``rates run --a`` starts without it, tests/test_startup.py):
:meth:`Schedule.polynomial` needs only :mod:`fractions`; parsing, the symbolic forms and the values of a
non-polynomial schedule import sympy on first use, once per process and expression. A parsed schedule is kept
in the on-disk cache (:mod:`rates.cache`, folder ``schedules``) with its float64 evaluator's numpy source, so a
schedule parsed once is read back, and evaluated, without sympy (a repeated ``rates run --schedule``, a Dask
worker): the entry is used only when its evaluator reproduces the stored values at a few steps bit for bit.

The exponent ``a`` is read by :func:`parse_exponent_fraction` with the string rules of sympy's
``Rational(str)`` (sympy 1.14, ``Rational.__new__``), which themselves use :class:`fractions.Fraction`: at most
one ``/``, spaces removed, ``P/Q`` read as ``Fraction(P) / Fraction(Q)``, anything else as ``Fraction(text)``;
so this parser and :func:`rates.symbolic.schedules.parse_exponent` accept and refuse the same texts and give
the same number (tests/test_schedules.py compares them).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from rates.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import sympy

MAX_EXPONENT_DENOMINATOR = 10**15


def _fraction(text: str) -> Fraction:
    if text.count("/") > 1:
        raise ValueError(text)
    text = text.replace(" ", "")
    numerator, slash, denominator = text.rpartition("/")
    if slash:
        return Fraction(numerator) / Fraction(denominator)
    return Fraction(text)


def parse_exponent_fraction(a, option: str = "a") -> Fraction:
    """``a`` from ``1/2``, ``0.5``, ``2/3`` or a number, as an exact :class:`~fractions.Fraction` in (0, 1].

    Decimals are read exactly as written (``0.3`` is 3/10); a string's denominator is at most 1e15 (the
    engine steps in float64, and 1e-400 is 0 there).

    >>> parse_exponent_fraction("0.3"), parse_exponent_fraction(" 2 / 3 "), parse_exponent_fraction(1)
    (Fraction(3, 10), Fraction(2, 3), Fraction(1, 1))
    """
    try:
        value = _fraction(str(a).strip())
    except (TypeError, ValueError, ZeroDivisionError):
        raise InputError(option, f"expected a number such as 1/2, 0.5 or 2/3, got {a!r}") from None
    if not (0 < value <= 1):
        raise InputError(option, f"must be in (0, 1], got {a}")
    if isinstance(a, str) and value.denominator > MAX_EXPONENT_DENOMINATOR:
        raise InputError(option, f"must be a fraction with denominator <= 1e{len(str(MAX_EXPONENT_DENOMINATOR)) - 1} "
                                 f"(the engine steps in float64), got {str(a).strip()[:40]}")
    return value


# What an expression may name besides numbers: the step index, the base rate, and these functions/constants.
ALLOWED_FUNCTIONS = ("log", "exp", "sqrt", "Min", "Max", "Piecewise", "sin", "cos", "floor", "ceiling", "Abs")
ALLOWED_CONSTANTS = ("pi", "E")
# The values of f(t) are checked at every integer t below DENSE_CHECK_STOP and at log-spaced t up to
# SPARSE_CHECK_MAX (float64, as the engines step).
DENSE_CHECK_STOP = 10**6 + 1
SPARSE_CHECK_MAX = 10**12
MAX_TEXT_LENGTH = 1000
# A power of numbers (10**15, 2**-30) is computed exactly by sympy when the expression is read: its digits are
# limited before that, so that 10**10**10 is refused at once instead of being computed (a schedule needs no
# number beyond float64's 1.8e308).
MAX_POWER_DIGITS = 400
CACHE_KIND = "schedules"
# steps where a cached evaluator must give the stored float64 values again, bit for bit, to be used
PROBE_STEPS = (0, 1, 2, 3, 10, 99, 100, 1000, 12345, 10**6, 10**9)
# Python syntax that a schedule never needs and that would reach past the expression language
# (attribute access, subscripts, lambdas, strings, statements).
_FORBIDDEN = re.compile(r"__|[\[\]{}:;'\"@!`$\\#]|[A-Za-z_)]\s*\.")


def __getattr__(name: str):
    # t_sym and eta0_sym are sympy symbols: built on first access so that importing this module stays sympy-free.
    if name in ("t_sym", "eta0_sym"):
        return _symbols()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _symbols() -> dict:
    import sympy

    return {"t_sym": sympy.Symbol("t", integer=True, nonnegative=True),
            "eta0_sym": sympy.Symbol("eta0", positive=True)}


def _polynomial_text(a: Fraction) -> str:
    """sympy's ``str`` of ``eta0*(t + 2)**(-a)``, written without sympy (tests compare the two)."""
    if a == 1:
        return "eta0/(t + 2)"
    if a == Fraction(1, 2):
        return "eta0/sqrt(t + 2)"
    return f"eta0/(t + 2)**({a.numerator}/{a.denominator})"


@dataclass(frozen=True)
class Schedule:
    """``eta_t = eta0 * f(t)`` for integer ``t >= 0``; ``a`` is set iff ``f(t) = (t+2)^(-a)``, ``a in (0, 1]``.

    >>> Schedule.polynomial("1/2") == Schedule.parse("eta0*(t+2)**(-1/2)")
    True
    >>> Schedule.polynomial("0.3").label(), Schedule.parse("eta0/((t+2)*log(t+2))").label()
    ('a=3/10', 'eta0/((t + 2)*log(t + 2))')
    """

    text: str
    a: Fraction | None = None

    @classmethod
    def polynomial(cls, a, option: str = "a") -> Schedule:
        """``eta0 (t+2)^(-a)`` with ``a`` as :func:`parse_exponent_fraction` reads it."""
        value = parse_exponent_fraction(a, option)
        return cls(_polynomial_text(value), value)

    @classmethod
    def parse(cls, text: str, option: str = "schedule") -> Schedule:
        """The schedule written as ``text``; refuses with :class:`~rates.errors.InputError` (one line) an
        expression that is not parseable, names anything but ``t``, ``eta0`` and the allowed functions, is not
        ``eta0`` times a function of ``t``, or whose ``f(t)`` is not finite and > 0 at some integer ``t >= 0``
        (the first such ``t`` is named)."""
        return _parsed(str(text), option)

    @property
    def is_polynomial(self) -> bool:
        return self.a is not None

    @property
    def expr(self) -> sympy.Expr:
        """``eta0 * f(t)`` in :data:`t_sym` and :data:`eta0_sym`."""
        return _compiled(self.text)[0]

    @property
    def unit_expr(self) -> sympy.Expr:
        """``f(t) = expr / eta0``."""
        return _compiled(self.text)[1]

    def unit_values(self, start: int, stop: int) -> np.ndarray:
        """``f(t)`` in float64 for the integers ``t`` in ``[start, stop)``; for the polynomial family exactly
        ``(t + 2.0) ** (-a)`` elementwise, the engines' formula."""
        import numpy as np

        if self.a is not None:
            # one scalar power per step, as the engines compute it (numpy's vectorised power rounds
            # differently in the last bit for some arguments)
            exponent = -float(self.a)
            return np.fromiter(((t + 2.0) ** exponent for t in range(start, stop)), np.float64,
                               count=max(stop - start, 0))
        return _evaluate(_evaluator(self.text), np.arange(start, stop, dtype=np.float64))

    def unit_value(self, t: int) -> float:
        """``f(t)`` in float64 at one step (the same bits as ``unit_values(t, t + 1)[0]``)."""
        if self.a is not None:
            return (t + 2.0) ** (-float(self.a))
        return float(self.unit_values(t, t + 1)[0])

    def label(self) -> str:
        """Short text for tables: ``a=1/2`` for the polynomial family, the expression otherwise."""
        return f"a={self.a}" if self.a is not None else self.text

    def to_json(self) -> dict:
        return {"expr": self.text} if self.a is None else {"expr": self.text, "a": str(self.a)}

    @classmethod
    def from_json(cls, record: dict) -> Schedule:
        if record.get("a") is not None:
            return cls.polynomial(record["a"])
        return cls.parse(record["expr"])


def schedule_from_options(a: str | None, schedule: str | None, default_a: str | None = None) -> Schedule:
    """The one place the CLI turns ``--a`` / ``--schedule`` into a :class:`Schedule`."""
    if a is not None and schedule is not None:
        raise InputError("schedule", f"give either --a or --schedule, not both (got --a {a} and --schedule {schedule})")
    if schedule is not None:
        return Schedule.parse(schedule, "schedule")
    if a is None:
        if default_a is None:
            raise InputError("schedule", "give the learning rate as --a A (eta0*(t+2)**(-A)) or --schedule EXPR")
        a = default_a
    return Schedule.polynomial(a, "a")


@functools.lru_cache(maxsize=256)
def _parsed(text: str, option: str) -> Schedule:
    # once per text and process (a file of many runs of one schedule checks its values once), and once per
    # text and machine through the on-disk cache
    key = _cache_key(text)
    restored = _restore(key)
    if restored is not None:
        return restored
    expr = _parse_expression(text, option)
    unit = _unit_of(expr, option)
    exponent = _polynomial_exponent(unit)
    if exponent is not None:
        schedule = Schedule.polynomial(exponent, option)
    else:
        schedule = Schedule(str(expr), None)
        _check_values(schedule, option)
    _remember(schedule, key, _cache_key(schedule.text))
    return schedule


_NUMPY_EVALUATORS: dict = {}  # canonical text -> float64 evaluator restored from the on-disk cache


def _cache_key(text: str):
    from rates import cache

    return cache.key_for("schedule", text, packages=("rates",), libraries=("sympy", "numpy"))


def _numpy_namespace() -> dict:
    import numpy as np

    return {**vars(np), "reduce": functools.reduce, "Min": lambda *args: functools.reduce(np.minimum, args),
            "Max": lambda *args: functools.reduce(np.maximum, args), "__builtins__": {"abs": abs}}


def _remember(schedule: Schedule, *keys) -> None:
    """Store a parsed schedule under each key: its text and a, and (outside the polynomial family) the numpy
    source of its evaluator with its values at :data:`PROBE_STEPS`."""
    import inspect

    import numpy as np

    from rates import cache

    value: dict = {"text": schedule.text, "a": None if schedule.a is None else str(schedule.a)}
    if schedule.a is None:
        evaluator = _compiled(schedule.text)[2]
        try:
            value["numpy"] = inspect.getsource(evaluator)
        except (OSError, TypeError):
            return
        value["probe"] = [float(v).hex() for v in _evaluate(evaluator, np.array(PROBE_STEPS, dtype=np.float64))]
    for key in dict.fromkeys(k for k in keys if k is not None):
        cache.store(CACHE_KIND, key, value)


def _restore(key):
    """The schedule stored under ``key``, its evaluator registered, or None (absent, foreign, or an evaluator
    that does not give the stored values again)."""
    import numpy as np

    from rates import cache

    value = cache.load(CACHE_KIND, key) if key is not None else None
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        return None
    if value.get("a") is not None:
        try:
            return Schedule.polynomial(str(value["a"]))
        except InputError:
            return None
    source, probe = value.get("numpy"), value.get("probe")
    if not isinstance(source, str) or not isinstance(probe, list):
        return None
    namespace = _numpy_namespace()
    try:
        exec(compile(source, f"<schedule {value['text']}>", "exec"), namespace)  # our own lambdify output
        evaluator = namespace["_lambdifygenerated"]
        again = [float(v).hex() for v in _evaluate(evaluator, np.array(PROBE_STEPS, dtype=np.float64))]
    except Exception:  # noqa: BLE001 - a damaged entry is a miss
        return None
    if again != probe:
        return None
    _NUMPY_EVALUATORS[value["text"]] = evaluator
    return Schedule(value["text"], None)


def _evaluator(text: str):
    """The float64 evaluator of a schedule's ``f``: restored from the cache (no sympy) or lambdified."""
    if text not in _NUMPY_EVALUATORS:
        restored = _restore(_cache_key(text))
        if restored is None or restored.text != text:
            return _compiled(text)[2]
    return _NUMPY_EVALUATORS[text]


def _parse_expression(text: str, option: str):
    import sympy
    from sympy.parsing.sympy_parser import convert_xor, parse_expr, rationalize, standard_transformations

    shown = str(text).strip()
    if not shown:
        raise InputError(option, "expected an expression in t and eta0 such as eta0/sqrt(t+2), got an empty text")
    if len(shown) > MAX_TEXT_LENGTH:
        raise InputError(option, f"expression longer than {MAX_TEXT_LENGTH} characters")
    if _FORBIDDEN.search(shown):
        raise InputError(option, f"not parseable as an expression in t and eta0: {shown!r}")
    check_number_sizes(shown, option)
    symbols = _symbols()
    local = {"t": symbols["t_sym"], "eta0": symbols["eta0_sym"],
             **{name: getattr(sympy, name) for name in ALLOWED_FUNCTIONS + ALLOWED_CONSTANTS}}
    # parse_expr evaluates the transformed text: only sympy's number and symbol constructors are reachable.
    restricted_globals = {"__builtins__": {}, "Integer": sympy.Integer, "Float": sympy.Float,
                          "Rational": sympy.Rational, "Symbol": sympy.Symbol, "Function": sympy.Function}
    try:
        expr = parse_expr(shown, local_dict=local, global_dict=restricted_globals,
                          transformations=standard_transformations + (convert_xor, rationalize))
        expr = sympy.sympify(expr)
    except Exception as error:  # sympy raises SyntaxError, TypeError, TokenError, ... for bad text
        reason = str(error).splitlines()[0][:80] if str(error) else type(error).__name__
        raise InputError(option, f"not parseable as an expression in t and eta0: {shown!r} ({reason})") from None
    if not isinstance(expr, sympy.Expr):
        raise InputError(option, f"not an expression in t and eta0: {shown!r}")
    from sympy.core.function import AppliedUndef

    unknown_functions = sorted({str(f.func) for f in expr.atoms(AppliedUndef)})
    if unknown_functions:
        raise InputError(option, f"unknown function {unknown_functions[0]} in {shown!r} "
                                 f"(allowed: {', '.join(ALLOWED_FUNCTIONS)})")
    unknown = sorted(str(s) for s in expr.free_symbols - {symbols["t_sym"], symbols["eta0_sym"]})
    if unknown:
        raise InputError(option, f"unknown symbol {unknown[0]} in {shown!r} (only t, the step from 0, and eta0)")
    return expr


class _Opaque:
    """A constant whose exact value is not formed when read (``sqrt(2)``, ``exp(3)``, ``pi``): small by itself."""


def _number_of(node, names: frozenset) -> Fraction | _Opaque | None:
    """The exact value of a constant subtree (None when it holds ``t`` or ``eta0``), refusing through
    :class:`_TooLarge` a power whose exact result would have more than :data:`MAX_POWER_DIGITS` digits."""
    import ast

    if isinstance(node, ast.Constant):
        if isinstance(node.value, float) and math.isinf(node.value):
            raise _BeyondFloat()  # 1e999 reads as inf, which no fraction holds
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            return _Opaque()
        return Fraction(str(node.value)) if isinstance(node.value, float) else Fraction(node.value)
    if isinstance(node, ast.Name):
        return None if node.id in names else _Opaque()
    if isinstance(node, ast.UnaryOp):
        inner = _number_of(node.operand, names)
        return -inner if isinstance(inner, Fraction) and isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Call):
        values = [_number_of(arg, names) for arg in node.args]
        return None if any(value is None for value in values) else _Opaque()
    if isinstance(node, ast.BinOp):
        left, right = _number_of(node.left, names), _number_of(node.right, names)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Pow):
            return _power(left, right, node)
        if not (isinstance(left, Fraction) and isinstance(right, Fraction)):
            return _Opaque()
        try:
            return {ast.Add: left.__add__, ast.Sub: left.__sub__, ast.Mult: left.__mul__,
                    ast.Div: left.__truediv__}[type(node.op)](right)
        except (KeyError, ZeroDivisionError):
            return _Opaque()
    values = [_number_of(child, names) for child in ast.iter_child_nodes(node)]
    return None if any(value is None for value in values) else _Opaque()


class _TooLarge(Exception):
    pass


class _BeyondFloat(Exception):
    """A number literal that Python's parser reads as inf (``1e999``)."""


def _digits(value: Fraction) -> int:
    return len(str(abs(value.numerator))) + len(str(value.denominator))


def _power(base, exponent, node) -> Fraction | _Opaque:
    import ast

    if not isinstance(exponent, Fraction):
        return _Opaque()  # 2**sqrt(2), 2**pi: sympy keeps the power unevaluated
    if isinstance(base, Fraction) and (base == 0 or abs(base) == 1):
        return base if base == 0 or exponent.denominator != 1 else base ** exponent.numerator
    # sympy forms base**numerator exactly (roots of it after); an opaque base stays a symbolic power, but its
    # exponent is bounded alike so that no later evaluation meets it
    size = _digits(base) if isinstance(base, Fraction) else 1
    if abs(exponent.numerator) * size > MAX_POWER_DIGITS:
        raise _TooLarge(ast.unparse(node))
    if isinstance(base, Fraction) and exponent.denominator == 1:
        return base ** exponent.numerator
    return _Opaque()


def check_number_sizes(text: str, option: str, names=("t", "eta0")) -> None:
    """Refuse (:class:`InputError` naming ``option``) a power of numbers whose exact value would have more than
    :data:`MAX_POWER_DIGITS` digits (``10**10**10``, ``9**9**9``), before sympy computes it. Text that Python
    cannot parse is left to the expression parser's own message."""
    import ast

    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError):
        return
    try:
        _number_of(tree.body, frozenset(names))
    except _TooLarge as too_large:
        raise InputError(option, f"the power {str(too_large)[:60]} would have more than {MAX_POWER_DIGITS} digits; "
                                 f"powers of numbers must stay within 10^{MAX_POWER_DIGITS} (float64 reaches "
                                 "1.8e308)") from None
    except _BeyondFloat:
        raise InputError(option, "a number literal beyond float64's largest (1.8e308), such as 1e999; write large "
                                 "constants as powers (10**300)") from None
    except RecursionError:
        raise InputError(option, "expression nested too deeply") from None


def _divide_by_eta0(expr):
    """``expr / eta0`` with the division pushed into Min, Max and Piecewise (``eta0 > 0``, so ``Min(eta0 x,
    eta0 y) = eta0 Min(x, y)``), which sympy does not do on its own."""
    import sympy

    eta0 = _symbols()["eta0_sym"]
    if isinstance(expr, (sympy.Min, sympy.Max)):
        return expr.func(*(_divide_by_eta0(arg) for arg in expr.args))
    if isinstance(expr, sympy.Piecewise):
        return sympy.Piecewise(*((_divide_by_eta0(piece), condition) for piece, condition in expr.args))
    if isinstance(expr, sympy.Add):
        return sympy.Add(*(_divide_by_eta0(term) for term in expr.args))
    if isinstance(expr, sympy.Mul):
        carrying = [factor for factor in expr.args if eta0 in factor.free_symbols]
        if len(carrying) == 1 and carrying[0] != eta0:
            rest = sympy.Mul(*(factor for factor in expr.args if factor is not carrying[0]))
            return rest * _divide_by_eta0(carrying[0])
    quotient = expr / eta0
    return sympy.simplify(quotient) if eta0 in quotient.free_symbols else quotient


def _unit_of(expr, option: str):
    eta0 = _symbols()["eta0_sym"]
    unit = _divide_by_eta0(expr)
    if eta0 in unit.free_symbols:
        raise InputError(option, f"must be eta0 times a function of t alone, got {expr} "
                                 f"(divided by eta0 it still holds eta0: {unit})")
    return unit


def _polynomial_exponent(unit) -> Fraction | None:
    """``a`` where ``unit`` is ``(t+2)^(-a)`` with rational ``a in (0, 1]``, else None."""
    import sympy

    t = _symbols()["t_sym"]
    w = sympy.Wild("w", exclude=[t])
    match = unit.match((t + 2) ** w)
    if not match or not match[w].is_Rational:
        return None
    a = Fraction(int(-match[w].p), int(match[w].q))
    return a if 0 < a <= 1 else None


@functools.lru_cache(maxsize=64)
def _compiled(text: str):
    """(expr, unit_expr, float64 evaluator of unit_expr) of a schedule's canonical text, once per process."""
    import numpy as np
    import sympy

    expr = _parse_expression(text, "schedule")
    unit = _unit_of(expr, "schedule")
    t = _symbols()["t_sym"]
    numpy_functions = {"Min": lambda *args: functools.reduce(np.minimum, args),
                       "Max": lambda *args: functools.reduce(np.maximum, args)}
    evaluator = sympy.lambdify(t, unit, modules=[numpy_functions, "numpy"])
    return expr, unit, evaluator


def _evaluate(evaluator, steps):
    import numpy as np

    with np.errstate(all="ignore"):
        values = np.asarray(evaluator(steps))
    if np.iscomplexobj(values):
        values = np.where(values.imag == 0, values.real, np.nan)
    return np.broadcast_to(values.astype(np.float64, copy=False), steps.shape).copy()


def _check_values(schedule: Schedule, option: str) -> None:
    """Refuse a schedule whose float64 ``f(t)`` is not finite and > 0 at some integer ``t >= 0`` checked: every
    ``t`` up to 1e6, then a log grid up to 1e12 (a bad stretch there is found; a single bad integer between
    two grid points, such as a pole, is not)."""
    import numpy as np

    evaluator = _compiled(schedule.text)[2]

    def offending(steps):
        values = _evaluate(evaluator, steps)
        return ~(np.isfinite(values) & (values > 0)), values

    dense = np.arange(0, DENSE_CHECK_STOP, dtype=np.float64)
    sparse = np.unique(np.round(np.logspace(np.log10(DENSE_CHECK_STOP - 1), np.log10(SPARSE_CHECK_MAX), 601)))
    bad, values = offending(dense)
    where = "every step t >= 0"
    if not bad.any():
        bad, values = offending(sparse)
        if not bad.any():
            return
        # between the last good point of the log grid and the first bad one, bisect to a step whose
        # predecessor is good (the first offending step where f crosses once in between)
        first = int(np.argmax(bad))
        good_t, bad_t = int(sparse[first - 1]), int(sparse[first])
        while bad_t - good_t > 1:
            middle = (good_t + bad_t) // 2
            if offending(np.array([middle], dtype=np.float64))[0][0]:
                bad_t = middle
            else:
                good_t = middle
        steps = np.array([bad_t], dtype=np.float64)
        bad, values = offending(steps)
        where = f"every step t >= 0 (checked at each t <= {DENSE_CHECK_STOP - 1} and on a log grid up to 1e12)"
    else:
        steps = dense
    index = int(np.argmax(bad))
    t, value = int(steps[index]), values[index]
    problem = "not finite" if not np.isfinite(value) else "not > 0"
    raise InputError(option, f"f(t) = {schedule.unit_expr} is {problem} at t = {t} (float64 value {value}); "
                             f"eta0*f(t) must be a finite positive learning rate at {where}")
