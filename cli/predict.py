"""``rates predict``: which theorem family covers a configuration (the hypothesis gate), and the rate, regime,
best ``a`` and thresholds it predicts."""

from __future__ import annotations

import json
import typing
from fractions import Fraction
from typing import Optional

import typer

from rates.errors import InputError

if typing.TYPE_CHECKING:
    from rates.symbolic.theorems.registry import GateResult


def _positive(value: Optional[float], option: str) -> Optional[float]:
    if value is not None and not value > 0:
        raise InputError(option, f"must be > 0, got {value}")
    return value


def render_text(prediction) -> str:
    """A small readable block; every theory number names its source and its given/rebuilt status."""
    source = prediction_source(prediction)
    lines = [
        f"algorithm   {prediction.algorithm} (norm {prediction.norm}, family {prediction.family})",
        f"a           {prediction.a}   regime {prediction.regime}",
        f"rate        O({prediction.rate.text})   r = {prediction.rate.exponent}, "
        f"log power k = {prediction.rate.log_power}"
        "   [derived from the template's numerator terms]",
        f"latex       O({prediction.rate.latex})",
        f"best a      {prediction.best_a}",
        f"gap to      {prediction.gap_to}",
    ]
    for name in ("t0", "t1"):
        info = prediction.thresholds[name]
        extra = threshold_value_text(info)
        if "upper_bound" in info:
            extra += f"  [closed-form upper bound {info['upper_bound']}]"
        lines.append(f"{name:<11} {info['symbolic']}{extra}   [rebuilt]")
    for symbol, meaning in prediction.template.constants.items():
        lines.append(f"constant    {symbol}: {meaning}")
    lines.append(f"assumes     {'; '.join(prediction.assumptions)}")
    lines.append(f"source      {source}")
    if prediction.source.reference is not None:
        lines.append(f"reference   {prediction.source.reference.citation()}")
    lines += plugin_lines(prediction)
    return "\n".join(lines)


def plugin_entries(prediction) -> list[dict[str, str]]:
    """Which plug-ins gave this answer (its optimiser, family, paper); empty for the built-ins' answers."""
    from rates.symbolic.theorems.provenance import provenance

    return provenance(prediction.algorithm, prediction.family, prediction.source.seed)


def plugin_lines(prediction) -> list[str]:
    from rates.symbolic.theorems.provenance import provenance_lines

    return provenance_lines(plugin_entries(prediction))


def with_plugins(payload: dict, prediction) -> dict:
    """``payload`` with a ``plugins`` key when plug-ins gave the answer (built-in answers keep their keys)."""
    entries = plugin_entries(prediction)
    return {**payload, "plugins": entries} if entries else payload


def prediction_source(prediction) -> str:
    """``MINIBATCH Thm 4.1/D.4, Cor. 4.2/D.5 at b = n, beta = 0 [given]``: the theorem a rate comes from, as
    ``predict`` and ``tightness`` both cite it."""
    return f"{prediction.source.seed} {prediction.source.theorem} [{prediction.status}]"


def english_list(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def hypotheses_hold(names: list[str]) -> str:
    """``the hypothesis separable holds`` / ``the hypotheses separable and b = n hold``."""
    if len(names) == 1:
        return f"the hypothesis {names[0]} holds"
    return f"the hypotheses {english_list(names)} hold"


def render_gate(result: GateResult) -> str:
    """Which family covers the configuration and each of its hypotheses with the numbers that decide it."""
    from rates.symbolic.theorems.registry import COVERED

    if result.family is None:
        return f"theorem     none: {result.reason}"
    family = result.family
    from_plugin = f" (plug-in {family.origin})" if family.origin else ""
    lines = [f"theorem     {family.name} family{from_plugin}: {family.statement}   "
             f"[{family.source.seed} {family.source.theorem}]"]
    lines += [f"hypothesis  {finding.status:<7} {hyp.name}: {finding.detail}   [{hyp.source}]"
              for hyp, finding in result.checks]
    if result.outcome == COVERED:
        unknown = [hyp.name for hyp, finding in result.checks if finding.status == "unknown"]
        lines.append("applies     yes" + (f", if {hypotheses_hold(unknown)} (give the data's constants to check)"
                                          if unknown else ""))
    else:
        lines.append(f"applies     no: {result.outcome} - {result.reason}")
    return "\n".join(lines)


def predict(
    algo: str = typer.Option(..., "--algo", help="{ALGORITHMS}"),
    norm: Optional[str] = typer.Option(None, "--norm", help="{NORMS}"),
    a: Optional[str] = typer.Option(None, "--a", help="schedule exponent a in (0, 1]: eta_t = eta_0 (t+2)^(-a); 1/2, "
                                                      "0.5, 2/3"),
    schedule: Optional[str] = typer.Option(None, "--schedule", help="learning rate as an expression in t and eta0, "
                                           "e.g. 'eta0/((t+2)*log(t+2))' (instead of --a)"),
    n: Optional[int] = typer.Option(None, "--n", help="number of samples"),
    batch: Optional[int] = typer.Option(None, "--batch", help="batch size b (divides n)"),
    momentum: Optional[float] = typer.Option(None, "--momentum", help="momentum beta in [0, 1)"),
    vr: bool = typer.Option(False, "--vr", help="variance reduction (SVRG-style)"),
    gamma: Optional[float] = typer.Option(None, "--gamma", help="max margin gamma > 0 (for numeric thresholds)"),
    data_bound: Optional[float] = typer.Option(None, "--B", help="data bound B >= max_i ||h_i||_1"),
    eta0: float = typer.Option(1.0, "--eta0", help="eta_0 > 0"),
    classes: Optional[int] = typer.Option(None, "--k", help="number of classes k >= 2"),
    c_adam: Optional[float] = typer.Option(None, "--c-adam", help="Adam moment-mismatch constant (not rebuilt)"),
    adam_beta1: float = typer.Option(0.9, "--adam-beta1", help="Adam beta1 in [0, 1)"),
    adam_beta2: float = typer.Option(0.999, "--adam-beta2", help="Adam beta2 in [0, 1)"),
    adam_eps: float = typer.Option(0.0, "--adam-eps", help="Adam eps >= 0 (SIGNADAM Thm 6.3 needs 0)"),
    data: Optional[str] = typer.Option(None, "--data", help="data (preset, gaussian:..., orthogonal:..., "
                                       "sklearn:NAME, a .npz/.csv/.arff file or libsvm:FILE, optionally +standardize "
                                       "or +scale): gamma, B, k and n are read from it; with --batch 1 the "
                                       "limit direction M/||M|| of orthogonal data"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Which theorem covers the configuration (its hypotheses, checked with the constants given), and the
    margin-gap rate O(t^-r (log t)^k), its regime of a, the best a and t0/t1 it predicts."""
    options = dict(algo=algo, norm=norm, a=a, schedule=schedule, n=n, batch=batch, momentum=momentum, vr=vr,
                   gamma=gamma,
                   data_bound=data_bound, eta0=eta0, classes=classes, c_adam=c_adam, adam_beta1=adam_beta1,
                   adam_beta2=adam_beta2, adam_eps=adam_eps, data=data, as_json=as_json)
    typer.echo(answer(**options))


ANSWERS = "predict"  # the rates.cache folder of derived answers
# what the derivation calls besides the code of rates/ and cli/ (whose source is in the key)
_DERIVING_LIBRARIES = ("sympy", "mpmath", "numpy")


def answer_key(options: dict) -> str | None:
    """The cache key of an answer: the options and the source and libraries that derive it; ``None`` with
    ``--data``, whose file's content the key would not see."""
    from rates import cache
    from rates.numeric.plugin_loading import chosen_families, fingerprint

    plugins = fingerprint()  # a plug-in's family or paper changes the answer: its code is in the key
    if options.get("data") is not None or plugins is None:
        return None
    chosen = tuple(sorted(chosen_families()))  # --family: which plug-in families may answer for built-ins
    parts = (sorted(options.items()),) + ((plugins,) if plugins else ()) + ((chosen,) if chosen else ())
    return cache.key_for(ANSWERS, *parts, packages=("rates", "cli"), libraries=_DERIVING_LIBRARIES)


def answer(**options) -> str:
    """What ``rates predict`` prints: derived by sympy the first time, then read back from :mod:`rates.cache`
    (keyed by :func:`answer_key`), so a repeated question starts no sympy (~0.5 s of import alone). Only
    answers are saved: bad input is refused afresh every time."""
    from rates import cache

    key = answer_key(options)
    saved = cache.load(ANSWERS, key) if key is not None else None
    if isinstance(saved, str):
        return saved
    text = derive(**options)
    if key is not None:
        cache.store(ANSWERS, key, text)
    return text


def derive(algo: str, norm: Optional[str], a: Optional[str], schedule: Optional[str], n: Optional[int],
           batch: Optional[int],
           momentum: Optional[float], vr: bool, gamma: Optional[float], data_bound: Optional[float], eta0: float,
           classes: Optional[int], c_adam: Optional[float], adam_beta1: float, adam_beta2: float, adam_eps: float,
           data: Optional[str], as_json: bool) -> str:
    """The answer to ``rates predict`` with these options, derived now (see :func:`predict` for the options)."""
    from rates.numeric.algorithms import resolve_algorithm
    from rates.numeric.run_parameters import check
    from rates.schedule import schedule_from_options

    # --a (or --schedule), --algo and its options are checked before the theorems' imports (seconds): bad input
    # is refused at once (a --schedule expression needs sympy to be read, --a does not)
    learning_rate = schedule_from_options(a, schedule)
    if data is None:  # with --data, n comes from the data (resolved below)
        config = resolve_algorithm(algo, norm=norm, n=n, batch=batch, momentum=momentum, vr=vr)  # --norm, --n
    from cli import per_sample
    from rates.symbolic.schedules import parse_exponent
    from rates.symbolic.theorems import predict as predict_rate
    from rates.symbolic.theorems.hypotheses import Facts
    from rates.symbolic.theorems.registry import gate

    if not learning_rate.is_polynomial:
        return derive_schedule(learning_rate, algo=algo, norm=norm, n=n, batch=batch, momentum=momentum, vr=vr,
                               gamma=gamma, data_bound=data_bound, eta0=eta0, classes=classes, c_adam=c_adam,
                               adam_beta1=adam_beta1, adam_beta2=adam_beta2, adam_eps=adam_eps, as_json=as_json)
    exponent = parse_exponent(str(learning_rate.a), "--a")
    if per_sample.handles_prediction(algo, batch, momentum, vr):  # MINIBATCH Thm 4.9: a direction, not a rate
        return per_sample.predict(algo, str(exponent), data, as_json)
    measured = None
    if data is not None:
        measured = _constants_of(data, algo, norm, n, batch, momentum, vr, gamma, data_bound, classes)
        n, gamma, data_bound, classes = measured["n"], measured["gamma"], measured["B"], measured["k"]
        config = resolve_algorithm(algo, norm=norm, n=n, batch=batch, momentum=momentum, vr=vr)  # the data's n
    if classes is not None and classes < 2:
        raise InputError("--k", f"must be an integer >= 2, got {classes}")
    for name, value in (("adam_beta1", adam_beta1), ("adam_beta2", adam_beta2), ("adam_eps", adam_eps)):
        check(name, value)  # the ranges rates run accepts
    constants = {"gamma": _positive(gamma, "--gamma"), "B": _positive(data_bound, "--B"),
                 "eta_0": _positive(eta0, "--eta0"), "k": classes, "c_adam": _positive(c_adam, "--c-adam")}
    adam = {"adam_eps": adam_eps, "adam_beta1": adam_beta1, "adam_beta2": adam_beta2} if config.adam else {}
    result = gate(Facts(config, a=Fraction(exponent.p, exponent.q), eta0=eta0, gamma=gamma, B=data_bound, n=n,
                        k=classes, **adam))
    if result.family is None or result.family.template is None:
        # a limit-direction theorem (per-sample, b = 1) or none at all: no rate to print, and none is implied
        payload = {"algorithm": config.name, "norm": config.norm, "a": str(exponent), "rate": None,
                   "gate": result.to_json(), "schedule": learning_rate.to_json()}
        return (json.dumps(payload, indent=1) if as_json else
                f"algorithm   {config.name} (norm {config.norm}, b = {config.batch})\n"
                f"rate        none: no theorem of the seeds gives a margin-gap rate for this configuration\n"
                + render_gate(result))
    given = {key: value for key, value in constants.items() if value is not None and key != "eta_0"}
    prediction = predict_rate(config, exponent, {**given, "eta_0": eta0} if given else None)
    if as_json:
        payload = prediction.to_json()
        payload["rate"] = {**payload["rate"], "loglog_power": 0}
        return json.dumps(with_plugins({**payload, "gate": result.to_json(), "schedule": learning_rate.to_json(),
                                        **({"data_constants": measured} if measured else {})}, prediction),
                          indent=1, default=str)
    return render_text(prediction) + "\n" + render_gate(result) + (_render_measured(measured) if measured else "")


def _constants_of(data: str, algo: str, norm: Optional[str], n: Optional[int], batch: Optional[int],
                  momentum: Optional[float], vr: bool, gamma: Optional[float], data_bound: Optional[float],
                  classes: Optional[int]) -> dict:
    """gamma, B, k and n read from ``--data`` (derived: gamma by the certified max-margin solver in the
    algorithm's norm, B = max_i ||h_i||_1 as SIGNADAM Ass. 3.1 bounds the data, k and n counted)."""
    from rates.numeric.algorithms import resolve_algorithm
    from rates.numeric.data import parse_data, transform_effect
    from rates.numeric.margins import max_margin
    from rates.symbolic.theorems.hypotheses import data_facts

    given = [flag for flag, value in (("--gamma", gamma), ("--B", data_bound), ("--k", classes)) if value is not None]
    if given:
        raise InputError("--data", f"reads gamma, B and k from the data; drop {', '.join(given)} or drop --data")
    dataset = parse_data(data)
    if n is not None and n != dataset.n:
        raise InputError("--n", f"the data have n = {dataset.n} samples, got --n {n}; drop --n with --data")
    config = resolve_algorithm(algo, norm=norm, n=dataset.n, batch=batch, momentum=momentum, vr=vr)
    result = max_margin(dataset, config.norm)
    facts = data_facts(dataset)
    measured = {"data": dataset.name, "n": int(facts["n"]), "k": int(facts["k"]), "d": int(facts["d"]),
                "B": facts["B"], "gamma": float(result.gamma), "gamma_norm": result.norm,
                "gamma_solver": result.solver, "gamma_accuracy": float(result.accuracy),
                "source": "derived from --data"}
    effect = transform_effect(data)
    if effect is not None:
        measured["transform"] = effect
    return measured


def _render_measured(measured: dict) -> str:
    return (f"\ndata        {measured['data']}: n = {measured['n']}, k = {measured['k']}, d = {measured['d']}, "
            f"B = max_i ||h_i||_1 = {measured['B']:.10g}, gamma ({measured['gamma_norm']} norm) = "
            f"{measured['gamma']:.10g} [derived from --data; {measured['gamma_solver']}, certified accuracy "
            f"{measured['gamma_accuracy']:.1e}]" + (f"\ntransform   {measured['transform']}" if "transform" in measured
                                                    else ""))


def threshold_value_text(info: dict) -> str:
    """What follows a threshold's symbolic form: its value, or why it has none (an assumption fails, constants
    are missing, a note)."""
    if info.get("numeric") is not None:
        return f"  = {info['numeric']}"
    if "assumption_fails" in info:
        return f"  (assumption fails: {info['assumption_fails']})"
    if "missing" in info:
        return f"  (numeric needs {', '.join(info['missing'])})"
    if "note" in info:
        return f"  ({info['note']})"
    return ""


def render_schedule_hypotheses(hypotheses, needed) -> list[str]:
    """One line per schedule hypothesis: holds / fails (why) / undecided (why), and whether the family needs it."""
    lines = []
    for finding in hypotheses.findings:
        use = "" if finding.name in needed else "  (not used by this family)"
        lines.append(f"schedule    {finding.status:<9} {finding.name}: {finding.detail}   [{finding.source}]{use}")
    return lines


def render_schedule_text(prediction) -> str:
    """``rates predict --schedule`` for a non-polynomial schedule: hypotheses, power-sum classes, the rate."""
    from rates.symbolic.theorems.general import required_hypotheses

    rate = prediction.rate
    lines = [f"algorithm   {prediction.algorithm} (norm {prediction.norm}, family {prediction.family})",
             f"schedule    {prediction.schedule.text}"]
    lines += render_schedule_hypotheses(prediction.hypotheses, required_hypotheses(prediction.template_config))
    for total in prediction.sums:
        if total.label == "constant":
            continue
        check = f"; {total.check}" if total.check else ""
        lines.append(f"power sum   {total.label} ~ {total.growth.text}   [integral test{check}]")
    lines += [
        f"rate        O({rate.text})   r = {rate.exponent}, log power k = {rate.log_power}, log log power m = "
        f"{rate.loglog_power}   [derived: dominant numerator term {prediction.dominant} over S_1 in the template of "
        f"{prediction.source.seed} {prediction.source.theorem} [{prediction.template_status}]]",
        f"latex       O({rate.latex})",
        f"gap to      {prediction.gap_to}",
    ]
    for name in ("t0", "t1"):
        info = prediction.thresholds[name]
        extra = threshold_value_text(info)
        lines.append(f"{name:<11} {info['symbolic']}{extra}   [rebuilt]")
    lines += [f"note        {note}" for note in prediction.notes]
    lines.append(f"assumes     {'; '.join(prediction.assumptions)}")
    lines.append(f"source      {prediction.source.seed} {prediction.source.theorem} [{prediction.template_status}]; "
                 "rate for this schedule [derived]")
    lines += plugin_lines(prediction)
    return "\n".join(lines)


def derive_schedule(learning_rate, algo, norm, n, batch, momentum, vr, gamma, data_bound, eta0, classes, c_adam,
                    adam_beta1, adam_beta2, adam_eps, as_json) -> str:
    """``rates predict --schedule EXPR`` for a schedule outside the polynomial family (docs/theory.md, general
    schedules): the gate with the schedule hypotheses, then the derived rate or ``no-theorem`` naming the failing
    hypothesis."""
    from rates.numeric.algorithms import resolve_algorithm
    from rates.numeric.run_parameters import check
    from rates.symbolic.theorems import template_for
    from rates.symbolic.theorems.general import NoRate, predict_schedule, required_hypotheses
    from rates.symbolic.theorems.hypotheses import Facts
    from rates.symbolic.theorems.registry import gate

    config = resolve_algorithm(algo, norm=norm, n=n, batch=batch, momentum=momentum, vr=vr)
    if classes is not None and classes < 2:
        raise InputError("--k", f"must be an integer >= 2, got {classes}")
    for name, value in (("adam_beta1", adam_beta1), ("adam_beta2", adam_beta2), ("adam_eps", adam_eps)):
        check(name, value)
    constants = {"gamma": _positive(gamma, "--gamma"), "B": _positive(data_bound, "--B"),
                 "eta_0": _positive(eta0, "--eta0"), "k": classes, "c_adam": _positive(c_adam, "--c-adam")}
    adam = {"adam_eps": adam_eps, "adam_beta1": adam_beta1, "adam_beta2": adam_beta2} if config.adam else {}
    result = gate(Facts(config, a=None, eta0=eta0, gamma=gamma, B=data_bound, n=n, k=classes, schedule=learning_rate,
                        **adam))
    given = {key: value for key, value in constants.items() if value is not None and key != "eta_0"}
    if given:
        given.setdefault("n", config.n)
        given.setdefault("b", config.batch if config.batch is not None else (None if config.stochastic else config.n))
        given.setdefault("beta", config.momentum)
    prediction = None
    reason = None
    if result.family is not None and result.family.template is not None and result.outcome != "no-theorem":
        from rates.symbolic.theorems.provenance import call

        constants = {**given, "eta_0": eta0} if given else None
        try:
            if result.family.origin:  # a plug-in's template: what fails deriving from it is the plug-in's
                prediction = call(result.family.origin, f"family {result.family.name!r}: deriving the rate for "
                                  f"this schedule from its template", predict_schedule, config, template_for(config),
                                  learning_rate, constants, answers=(NoRate,))
            else:
                prediction = predict_schedule(config, template_for(config), learning_rate, constants)
        except NoRate as err:
            reason = str(err)
    if prediction is None:
        from rates.symbolic.schedule_hypotheses import decide

        hypotheses = decide(learning_rate.expr)
        reason = reason or result.reason
        if as_json:
            return json.dumps({"algorithm": config.name, "norm": config.norm, "a": None, "rate": None,
                               "no_rate": reason, "schedule_hypotheses": hypotheses.to_json(),
                               "gate": result.to_json(), "schedule": learning_rate.to_json()}, indent=1, default=str)
        lines = [f"algorithm   {config.name} (norm {config.norm})", f"schedule    {learning_rate.text}"]
        lines += render_schedule_hypotheses(hypotheses, required_hypotheses(config))
        lines.append(f"rate        none: {reason}")
        return "\n".join(lines) + "\n" + render_gate(result)
    prediction.template_config = config
    if as_json:
        return json.dumps(with_plugins({**prediction.to_json(), "gate": result.to_json()}, prediction), indent=1,
                          default=str)
    return render_schedule_text(prediction) + "\n" + render_gate(result)


def register(app: typer.Typer) -> None:
    app.command("predict")(predict)
