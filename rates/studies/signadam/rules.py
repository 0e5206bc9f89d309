"""The decision rules of ``rates report signadam``: pure functions from measured numbers to a verdict part,
each run on constructed cases where its claim is false (and true) in tests/test_signadam_negative_controls.py."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
from scipy.stats import t as student_t

from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED, claim_verdict_from_fit, decide
from rates.studies.draws import CONFIRMS, REFUTES, UNDECIDED, decide_draws, summary
from rates.studies.signadam.protocols import DISPLAY, DRAW_OUTCOME, EPS_AGREE, EPS_FROM, LOSS_RISE_TOL, ORDER_TOL


def rate_part(name: str, label: str, reason: str, undecided: str = "") -> tuple[str, str]:
    """A rate row's part for one run: the comparator's label through :func:`claim_verdict_from_fit`, except that a
    confirmation or a refutation on a window not known to lie past the descent start (``undecided``: why, from
    :func:`rates.studies.horizon.undecided_before_descent`) is ``no verdict``."""
    verdict, why = claim_verdict_from_fit(label, reason)
    if verdict in (REPRODUCED, NOT_REPRODUCED) and undecided:
        verdict, why = NO_VERDICT, f"{label}, but {undecided}"
    return verdict, f"{name} {why}" if why else ""


def k_growth(relgaps: dict[int, list[float]], earlier: Optional[dict[int, list[float]]] = None,
             earlier_t: Optional[float] = None) -> tuple[str, str, str]:
    """Rem. 6.5 from the relative gaps ``(gamma - gamma(W_T))/gamma`` at one t per k (one per data draw, n
    fixed): ``(verdict, reason, measured)``. With ``earlier`` (the same gaps a decade before, at ``earlier_t``)
    a verdict must also be the verdict there: a growth still moving across the linear one is not settled.

    The alternative ruled out is a constant growing linearly in k, which raises the gap's level by
    ``k_max/k_min`` from the smallest to the largest k. The growth of the geometric-mean gap comes with a 95%
    t-interval from the draws' spread (log scale, pooled variance): reproduced when its top is below the linear
    growth, not reproduced when its bottom is at or above it, no verdict when the linear growth lies inside the
    interval (a decision within the seeds' noise) or when one draw per k gives no interval.
    """
    ks = sorted(relgaps)
    logs = {k: np.log(np.asarray(relgaps[k], float)) for k in ks}
    gm = {k: float(np.exp(logs[k].mean())) for k in ks}
    growth = {k: gm[k] / gm[ks[0]] for k in ks}
    low, high = ks[0], ks[-1]
    linear = high / low
    measured = "; ".join(f"k={k}: {gm[k]:.3g} [{min(relgaps[k]):.3g}, {max(relgaps[k]):.3g}] (x{growth[k]:.2f})"
                         for k in ks)
    n_low, n_high = len(logs[low]), len(logs[high])
    if min(n_low, n_high) < 2:
        return NO_VERDICT, (f"one draw per k gives no seed-noise interval for the growth x{growth[high]:.2f} "
                            f"(linear: x{linear:.2f}); more draws per k decide"), measured
    pooled = (((n_low - 1) * logs[low].var(ddof=1) + (n_high - 1) * logs[high].var(ddof=1))
              / (n_low + n_high - 2))
    half = float(student_t.ppf(0.975, n_low + n_high - 2) * math.sqrt(pooled * (1 / n_low + 1 / n_high)))
    g = math.log(growth[high])
    lo_end, hi_end = math.exp(g - half), math.exp(g + half)
    measured += f"; growth k={low} -> {high}: x{growth[high]:.2f}, 95% interval [x{lo_end:.2f}, x{hi_end:.2f}]"
    if hi_end < linear:
        verdict, reason = REPRODUCED, ""
    elif lo_end >= linear:
        verdict, reason = NOT_REPRODUCED, (
            f"the gap at k = {high} is x{growth[high]:.2f} the gap at k = {low}, interval [x{lo_end:.2f}, "
            f"x{hi_end:.2f}] at or above the linear growth x{linear:.2f}: a constant growing with k")
    else:
        return NO_VERDICT, (f"the linear growth x{linear:.2f} lies inside the interval [x{lo_end:.2f}, "
                            f"x{hi_end:.2f}] of the measured growth x{growth[high]:.2f}: within the seeds' noise; "
                            "more draws per k decide"), measured
    if earlier is not None:
        before, _, before_measured = k_growth(earlier)
        measured += f"; a decade earlier (t = {earlier_t:g}): {before_measured.rsplit('; ', 1)[-1]}"
        if before != verdict:
            return NO_VERDICT, (f"not settled: the growth decides '{verdict}' at the end but '{before}' a decade "
                                f"earlier ({before_measured.rsplit('; ', 1)[-1]})"), measured
    return verdict, reason, measured


def loss_monotone(t: np.ndarray, log_loss: np.ndarray, descent_start: Optional[float]) -> tuple[str, str, float]:
    """Lemma 5.2 / Thm 5.3 descent on one run's checkpoints: ``(verdict, reason, t of the last rise)``.

    A rise is an increase of log L above :data:`LOSS_RISE_TOL` (rounding). Reproduced when log L does not rise
    over the last two decades; otherwise not reproduced when the last rise comes at or after the descent start
    ``t_d`` (past it the descent lemma guarantees a decrease at every step), no verdict when it comes before
    ``t_d`` or ``t_d`` is unknown.
    """
    t, log_loss = np.asarray(t, float), np.asarray(log_loss, float)
    rises = np.flatnonzero(np.diff(log_loss) > LOSS_RISE_TOL)
    since = float(t[rises[-1] + 1]) if rises.size else float(t[0])
    if since <= t[-1] / 100:
        return REPRODUCED, "", since
    if descent_start is not None and since >= descent_start:
        return NOT_REPRODUCED, (f"the loss rose at t = {since:.3g}, after the descent start t_d = "
                                f"{descent_start:.3g}"), since
    where = (f"before the descent start t_d = {descent_start:.3g}" if descent_start is not None
             else "and the descent start is unknown")
    return NO_VERDICT, (f"the loss rose at t = {since:.3g}, within the last two decades, {where}; the descent "
                        "lemma claims nothing there"), since


def ordering(t: np.ndarray, ahead: dict[str, list[np.ndarray]], behind: dict[str, list[np.ndarray]],
             name: str, reference: str = "NGD", tol: float = ORDER_TOL) -> tuple[str, str, str]:
    """``name`` ahead of ``reference`` on most draws: larger in the ``ahead`` quantity, smaller in ``behind``.

    ``ahead[x][i]`` / ``behind[x][i]`` are draw ``i``'s curves at the checkpoints ``t``. Per draw the comparison
    is read at every checkpoint of ``[T/2, T]``: 'holds' when
    ``name`` leads by more than ``tol`` in both quantities at each of them, 'reversed' when it trails by more than
    ``tol`` in either at each of them, else 'unsettled' (a tie within ``tol`` or an order that changes inside
    the window); the draws decide by the sign test (:func:`_verdict_of_draws`). Returns ``(verdict, reason,
    measured)``.
    """
    t = np.asarray(t, float)
    late = t >= t[-1] / 2
    states, texts = [], []
    for i in range(len(ahead[name])):
        lead_a = np.asarray(ahead[name][i], float)[late] - np.asarray(ahead[reference][i], float)[late]
        lead_b = np.asarray(behind[reference][i], float)[late] - np.asarray(behind[name][i], float)[late]
        if np.all(lead_a > tol) and np.all(lead_b > tol):
            states.append("holds")
        elif np.all((lead_a < -tol) | (lead_b < -tol)):
            states.append("reversed")
        else:
            states.append("unsettled")
        texts.append(f"draw {i}: leads by {lead_a[-1]:+.4f} / {lead_b[-1]:+.4f} at t = {t[-1]:g} "
                     f"(least over [{t[late][0]:g}, {t[-1]:g}]: {lead_a.min():+.4f} / {lead_b.min():+.4f}): "
                     f"{states[-1]}")
    return (*_verdict_of_draws(states, texts, f"{name} trails {reference}",
                               f"{name} vs {reference}: " + ", ".join(states) + f" over the draws (a lead within "
                               f"{tol:g}, an order that changes inside the window or draws that disagree)"),
            _measured_of_draws(f"{name} vs {reference}", states, texts))


def _verdict_of_draws(states: list[str], texts: list[str], refuted: str, unsettled: str) -> tuple[str, str]:
    """The draws' states ('holds' confirms, 'reversed' refutes, 'unsettled' leaves the draw undecided) decide by
    the sign test of :func:`rates.studies.draws.decide_draws`; ``refuted`` / ``unsettled`` lead the reasons, which
    end with the draws' ``texts``."""
    return decide_draws([DRAW_OUTCOME[state] for state in states], texts, refuted=refuted, open_=unsettled)


def _measured_of_draws(head: str, states: list[str], texts: list[str]) -> str:
    """``head``, the draws' counts with the sign test (several draws), then each draw's text."""
    counts = summary([DRAW_OUTCOME[state] for state in states])
    return f"{head}: " + (f"{counts}; " if counts else "") + "; ".join(texts)


def own_ordering(t: np.ndarray, favoured: dict[str, list[np.ndarray]], other: dict[str, list[np.ndarray]],
                 name: str, tol: float = ORDER_TOL) -> tuple[str, str, str]:
    """Sec. 7 (1) read as each algorithm's own two margins: ``name``'s relative margin in its favoured norm
    (``favoured[name][i]``, draw ``i``) above its relative margin in the other norm, at every checkpoint of
    ``[T/2, T]``. 'holds' when it leads by more than ``tol`` at each of them, 'reversed' when it trails by more than
    ``tol`` at each of them, else 'unsettled'; the draws decide by the sign test (:func:`_verdict_of_draws`).
    Returns ``(verdict, reason, measured)``."""
    t = np.asarray(t, float)
    late = t >= t[-1] / 2
    states, texts = [], []
    for i in range(len(favoured[name])):
        lead = np.asarray(favoured[name][i], float)[late] - np.asarray(other[name][i], float)[late]
        states.append("holds" if np.all(lead > tol) else "reversed" if np.all(lead < -tol) else "unsettled")
        texts.append(f"draw {i}: {float(np.asarray(favoured[name][i])[-1]):.4f} vs "
                     f"{float(np.asarray(other[name][i])[-1]):.4f} at t = {t[-1]:g} (least lead over "
                     f"[{t[late][0]:g}, {t[-1]:g}]: {lead.min():+.4f}): {states[-1]}")
    return (*_verdict_of_draws(states, texts, f"{name}'s own margin is smaller in the norm it favours",
                               f"{name}: " + ", ".join(states) + " over the draws"),
            _measured_of_draws(name, states, texts))


def eps_agreement(t: np.ndarray, base: list[np.ndarray], curves: dict[str, list[np.ndarray]],
                  start: float = EPS_FROM, tol: float = EPS_AGREE) -> tuple[str, str, dict]:
    """Sec. 7 (3): every eps > 0 curve within ``tol`` of the eps = 0 one over ``[start, T]``, draw by draw.

    ``base[i]`` and ``curves[eps][i]`` are draw ``i``'s relative max-norm margins at ``t``. A draw confirms when its
    largest difference is at most ``tol / 2``, refutes when some eps differs by more than ``2 tol`` at the horizon
    ``T`` (the curves have separated, not crossed briefly), and is undecided otherwise (a deciding difference within
    a factor 2 of ``tol``); the draws decide by the sign test (:func:`rates.studies.draws.decide_draws`). Returns
    ``(verdict, reason, numbers)``.
    """
    t = np.asarray(t, float)
    inside = t >= start
    if not inside.any():
        return NO_VERDICT, f"the runs end at t = {t[-1]:g} before t = {start:g}", {}
    worst, final = [], []
    for i, b in enumerate(base):
        diffs = {name: np.abs(np.asarray(c[i], float) - np.asarray(b, float)) for name, c in curves.items()}
        worst.append(max(float(d[inside].max()) for d in diffs.values()))
        final.append(max(float(d[-1]) for d in diffs.values()))
    numbers = {"largest": worst, "at_horizon": final}
    outcomes = [CONFIRMS if w <= tol / 2 else REFUTES if f > 2 * tol else UNDECIDED for w, f in zip(worst, final)]
    texts = [f"draw {i}: largest {w:.3g}, at t = {t[-1]:g} {f:.3g}" for i, (w, f) in enumerate(zip(worst, final))]
    verdict, reason = decide_draws(outcomes, texts, refuted=f"the eps > 0 curves separate from eps = 0 by t = "
                                   f"{t[-1]:g}", open_=f"differences within a factor 2 of {tol:g} or draws that "
                                   "disagree")
    return verdict, reason, numbers


def best_rate_check(derived: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """Rem. 6.5's best rates against rates.symbolic's derivation: ``derived[algo] = (best a, rate exponent)``."""
    stated = {"signgd": ("1/2", "1/2"), "adam": ("2/3", "1/3")}
    wrong = [f"{DISPLAY[algo]}: derived a = {derived[algo][0]}, exponent {derived[algo][1]}, stated a = {a}, "
             f"exponent {e}" for algo, (a, e) in stated.items() if derived[algo] != (a, e)]
    return decide(not wrong, "; ".join(wrong))


def dimension_check(nsd_symbols: set[str], adam_symbols: set[str], d_dependent: set[str]) -> tuple[str, str]:
    """The rebuilt thresholds carry SIGNADAM's statement: SignGD's t0 needs no constant that depends on d,
    Adam's needs one (``d_dependent``: the template constants stated to grow with d)."""
    problems = []
    if nsd_symbols & d_dependent:
        problems.append(f"SignGD's t0 involves {sorted(nsd_symbols & d_dependent)}, which depend on d")
    if not adam_symbols & d_dependent:
        problems.append(f"Adam's t0 involves no d-dependent constant (symbols {sorted(adam_symbols)})")
    return decide(not problems, "; ".join(problems))


def constant_reading(verdict: str, reason: str, labels: dict[int, str]) -> tuple[str, str]:
    """Rem. 6.5 is about the bound's constant; the gap's level at a fixed t measures it only where the bound is tight
    (``labels``: the comparator's label per k). At t the gap is at most C(k) r(t), so a gap growing like k shows
    a constant that grows at least as fast (a refutation stands whatever the fit); a level that does not grow says
    nothing of a loose bound's constant, and Thm 6.3's constant c_adam is not rebuilt to compute it."""
    if verdict != REPRODUCED or all(label == "tight" for label in labels.values()):
        return verdict, reason
    loose = ", ".join(f"k = {k}: {label}" for k, label in labels.items() if label != "tight")
    return NO_VERDICT, (f"the gap's level does not grow like k, but the bound is not tight on these runs ({loose}), "
                        "so the level is not the bound's constant, and Thm 6.3's constant (c_adam) cannot be rebuilt "
                        "from the paper to compute it; tight fits at every k, or c_adam, would decide")
