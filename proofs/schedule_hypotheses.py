"""The schedule hypotheses of the linear-model theorems as claims about a given schedule (``rates check
schedule-hypotheses --schedule EXPR``).

Each claim says "``eta_t = EXPR`` meets hypothesis H" for H in MINIBATCH Assumption 3.3 (eventually
non-increasing, ``sum eta_t = inf``, ``eta_t -> 0``) [given] and Assumption 3.4 [rebuilt] (docs/theory.md,
section 4b). Its one method is symbolic: :mod:`rates.symbolic.schedule_hypotheses` decides it -- ``proven``
when the hypothesis holds, ``counterexample`` when it fails (the reason names what breaks it: a positive limit,
a convergent sum, integers where ``eta`` increases), ``undecided`` otherwise.
"""

from __future__ import annotations

from proofs.claims import MINIBATCH, VERDICT_COUNTEREXAMPLE, VERDICT_PROVEN, Claim, MethodResult

# the default schedules of ``rates check schedule-hypotheses`` (every hypothesis holds for each)
DEFAULT_SCHEDULES = ("eta0*(t+2)**(-1/2)", "eta0/((t+2)*log(t+2))", "eta0*log(t+2)/sqrt(t+2)",
                     "Min(eta0*(t+1)/100, eta0/sqrt(t+2))")
NAME = "schedule-hypotheses"
VERDICT_UNDECIDED = "undecided"


def _decision(schedule, hypothesis: str):
    def prove() -> MethodResult:
        from rates.symbolic.schedule_hypotheses import FAILS, HOLDS, decide

        finding = decide(schedule.expr).get(hypothesis)
        verdict = {HOLDS: VERDICT_PROVEN, FAILS: VERDICT_COUNTEREXAMPLE}.get(finding.status, VERDICT_UNDECIDED)
        instance = {"schedule": schedule.text}
        if finding.from_t is not None:
            instance["from_t"] = finding.from_t
        return MethodResult("symbolic", verdict, 1, float("nan"), instance, finding.detail)

    return prove


def schedule_claims(texts) -> list[Claim]:
    """One claim per schedule and hypothesis (the schedules parsed as ``--schedule`` parses them)."""
    from rates.schedule import Schedule
    from rates.symbolic.schedule_hypotheses import ASSUMPTION_34, STATEMENTS

    claims = []
    for text in texts or DEFAULT_SCHEDULES:
        schedule = Schedule.parse(text, "schedule")
        for hypothesis, statement in STATEMENTS.items():
            rebuilt = hypothesis == ASSUMPTION_34
            claims.append(Claim(
                name=f"{NAME}[{schedule.text}]: {hypothesis}",
                source=f"{MINIBATCH} " + ("Assumption 3.4, Lemma C.15 (Zhang et al. 2024 Ass. 4.3)" if rebuilt
                                          else "Assumption 3.3"),
                statement=f"eta_t = {schedule.text}: {statement}",
                latex=r"\eta_t = " + schedule.text,
                status="rebuilt" if rebuilt else "given",
                domain="integer t >= 0; limits by sympy, interval arithmetic on [0, 1e12] where stated",
                symbolic_proof=_decision(schedule, hypothesis)))
    return claims
