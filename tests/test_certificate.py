"""SIGNADAM Thm 5.3 instantiated on a run (rates.numeric.certificate, rates.symbolic.theorems.proof_chain).

The stepper's onsets and bound are recomputed here by an independent numpy loop (the proofs' cross-entropy
helpers and their own local curvature); the negative controls -- a wrong constant, a perturbed direction, a
mismatched algorithm, a curvature constant too small -- must break the certificate.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from cli_invoke import invoke

from proofs.certificate import local_kappa
from proofs.crossentropy import loss, proxy, sample_gradients
from rates.numeric.certificate import certify
from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, simulate
from rates.numeric.trajectory import Trajectory, save
from rates.symbolic.theorems.proof_chain import chain_bound

STEPS = 3000


@pytest.fixture(scope="module")
def default_run():
    """The engine's SignGD run on the default preset, a = 1/2, with its iterates at the checkpoints."""
    return simulate([RunSpec("signgd", "1/2")], parse_data("default", 0), STEPS, checkpoints=40, device="cpu").runs[0]


@pytest.fixture(scope="module")
def default_certificate(default_run):
    return certify(default_run)


def last_failures(records, gamma, n, pairing_lemma=True):
    """The last failing step of each fact over ``records`` (one per step, then the horizon's L and G); the pairing
    only where it is a lemma (``pairing_lemma``), against ``gamma`` times the step's norm (``size``, default 1)."""
    T = len(records) - 1
    last = {"descent": -1, "half-margin": -1, "low-loss": -1} | ({"pairing": -1} if pairing_lemma else {})
    for s in range(T + 1):
        r = records[s]
        if r["L"] > math.log(2) / n:
            last["low-loss"] = s
        if s < T:
            after = records[s + 1]["L"]
            if pairing_lemma and r["pairing"] < gamma * r.get("size", 1.0):
                last["pairing"] = s
            if after > r["L"] - r["eta"] * (r["pairing"] - r["kappa"] * r["eta"]) * r["G"] + 1e-14 * r["L"]:
                last["descent"] = s
            if after > r["L"] - 0.5 * gamma * r["eta"] * r["G"] + 1e-14 * r["L"]:
                last["half-margin"] = s
    return last


def _independent_chain(H, y, gamma, etas):
    """SignGD from W_0 = 0 in plain numpy; every fact of the chain per step; onsets and B at the horizon."""
    n, k, d = len(y), int(y.max()) + 1, H.shape[1]
    W = np.zeros((k, d))
    records = []
    for eta in etas:
        L, G = loss(W, H, y), proxy(W, H, y)
        gradient = sample_gradients(W, H, y).mean(axis=0)
        D = np.sign(gradient)
        records.append(dict(L=L, G=G, pairing=float((gradient * D).sum()) / G, kappa=local_kappa(W, H, y, D, eta),
                            eta=eta))
        W = W - eta * D
    records.append(dict(L=loss(W, H, y), G=proxy(W, H, y)))
    T = len(etas)
    last = last_failures(records, gamma, n)
    s0 = max(v + 1 for v in last.values())
    ratio, envelope, curvature = 0.0, 1.0, 0.0
    for r in records[s0:T]:
        ratio += r["eta"] * envelope
        envelope *= 1 - gamma * r["eta"] / 4
        curvature += r["kappa"] * r["eta"] ** 2
    bound = chain_bound(gamma, n, float(np.sum(etas[:s0])), math.log(records[s0]["L"]), np.array([ratio]),
                        np.array([curvature]), np.array([float(np.sum(etas))]))[0]
    z = H @ W.T
    margins = z[np.arange(n), y][:, None] - z
    margins[np.arange(n), y] = np.inf
    return s0, last["low-loss"] + 1, bound, gamma - margins.min() / np.abs(W).max()


def test_onsets_and_bound_match_an_independent_numpy_chain(default_run):
    steps = 600
    dataset = parse_data("default", 0)
    gamma = default_run.gamma["value"]
    etas = np.array([(t + 2.0) ** -0.5 for t in range(steps)])
    s0, s1, bound, gap = _independent_chain(dataset.H, dataset.y, gamma, etas)
    short = simulate([RunSpec("signgd", "1/2")], dataset, steps, checkpoints=20, device="cpu").runs[0]
    cert = certify(short)
    assert (cert.s0, cert.s1) == (s0, s1)
    assert cert.bound[-1] == pytest.approx(bound, rel=1e-9)
    assert cert.gap[-1] == pytest.approx(gap, rel=1e-9)


def test_default_preset_signgd_is_certified_from_step_238(default_certificate, default_run):
    cert = default_certificate
    # the onset the issue measured on this run ("the facts hold from step ~238"), L <= log 2 / n far earlier
    assert (cert.s0, cert.s1) == (238, 5)
    assert cert.certified and not cert.broken and cert.engine_agrees
    assert cert.engine_weights_difference == 0.0  # SignGD's iterates are sums of +-eta: bit for bit
    after = cert.t > cert.s0
    assert np.all(cert.gap[after] <= cert.bound[after])
    np.testing.assert_allclose(cert.bound[after], cert.kernel_bound[after], rtol=1e-12)  # proof_chain == kernel
    # the engine's own recorded gaps lie below B as well
    for t, gap in zip(default_run.t, default_run.gap):
        if t > cert.s0:
            assert gap <= cert.bound_at(t)
    # the worst case 2 B^2 e^{2 B eta} eta exceeds gamma/2 on every step after s0 up to this horizon (t_d ~ 3.3e4)
    assert cert.vacuous_worst_case_steps == STEPS - cert.s0


def certify_changed(run, change):
    """:func:`certify` with a negative control's change (``gamma_factor`` scales the run's own gamma)."""
    change = dict(change)
    factor = change.pop("gamma_factor", None)
    if factor is not None:
        change["gamma"] = run.gamma["value"] * factor
    return certify(run, **change)


@pytest.mark.parametrize("change, broken_fact", [
    ({"gamma_factor": 1.1}, "pairing"),  # a max margin too large: the pairing lemma fails
    ({"gamma_factor": 0.95}, "max-margin"),  # too small: the run's margin exceeds it
    ({"curvature_scale": 0.9}, "descent"),  # a curvature constant 10% too small
    ({"perturbation": 0.01}, "pairing"),  # 1% of a random sign matrix mixed into the direction
    ({"norm": "lp:3"}, "pairing"),  # another algorithm's direction on SignGD's run and margin
])
def test_negative_controls_break_the_certificate(default_run, change, broken_fact):
    cert = certify_changed(default_run, change)
    assert cert.broken
    assert cert.failures[broken_fact]["count"] > 0
    assert cert.verdict_text().startswith("BROKEN")


def test_a_mismatched_algorithm_is_caught_by_the_engine_comparison(default_run):
    ngd = simulate([RunSpec("ngd", "1/2")], parse_data("default", 0), 2000, checkpoints=20, device="cpu").runs[0]
    ngd.config = dataclasses.replace(ngd.config, algo="signgd", norm="max")  # an engine that claims SignGD but runs NGD
    ngd.gamma = default_run.gamma
    cert = certify(ngd)
    assert cert.engine_agrees is False and cert.broken
    assert "DIFFER" in cert.verdict_text() or "differ" in cert.verdict_text()


@pytest.mark.parametrize("algo, norm, source", [
    ("ngd", None, "SIGNADAM Thm 5.3"),
    ("nsd", "lp:3", "SIGNADAM Thm 5.3"),
    ("spectral-gd", None, "MINIBATCH Thm 4.1"),
])
def test_other_full_batch_nsd_runs_are_certified(algo, norm, source):
    run = simulate([RunSpec(algo, "1/2", norm=norm)], parse_data("default", 0), 2000, checkpoints=20,
                   device="cpu").runs[0]
    cert = certify(run)
    assert source in cert.source
    assert cert.certified and not cert.broken, cert.verdict_text()
    assert cert.s0 < 100  # the entry-wise l_p and Schatten directions descend from the first steps on


def test_minibatch_at_full_batch_is_the_same_chain_and_smaller_batches_are_not_covered():
    dataset = parse_data("default", 0)
    full = simulate([RunSpec("signsgd", "1/2", batch=dataset.n)], dataset, 1000, checkpoints=10, device="cpu").runs[0]
    cert = certify(full)
    assert "MINIBATCH Thm 4.1" in cert.source and cert.certified and (cert.s0, cert.s1) == (238, 5)
    half = simulate([RunSpec("signsgd", "1/2", batch=dataset.n // 2)], dataset, 100, checkpoints=5,
                    device="cpu").runs[0]
    assert not certify(half).applies and "b = 15 < n = 30" in certify(half).why


def test_adam_certifies_the_chain_with_its_measured_pairing_never_c_adam():
    dataset = parse_data("default", 0)
    run = simulate([RunSpec("adam", "2/3")], dataset, 3000, checkpoints=20, device="cpu").runs[0]
    cert = certify(run)
    assert cert.applies and "never Thm 6.3's constant c_adam" in cert.source
    assert "pairing" not in cert.universal  # Adam's direction is not the steepest: its pairing is measured
    assert cert.engine_agrees and not cert.broken, cert.verdict_text()
    # Adam is not SignGD: its stepper differs from the sign stepper on the same run
    assert certify(run, norm="max").broken
    with_eps = simulate([RunSpec("adam", "1/2", adam_eps=1e-8)], dataset, 50, checkpoints=5, device="cpu").runs[0]
    assert not certify(with_eps).applies and "eps > 0" in certify(with_eps).why


def test_rates_fit_prints_onsets_t_d_and_the_certificate(default_run, tmp_path):
    path = tmp_path / "signgd.json"
    save(Trajectory([default_run], {"made_by": "test"}), path)
    code, out, err = invoke(["fit", "--from", str(path)])
    assert code == 0, err
    assert "s0 = 238" in out and "s1 = 5" in out
    assert "rebuilt t_d = 3.26e+04" in out  # docs/theory.md section 4: t_d = 3.3e4 on this preset at a = 1/2
    assert "certificate  : certified" in out
    code, out, _ = invoke(["fit", "--from", str(path), "--json"])
    record = json.loads(out)[0]["certificates"][0]
    assert record["s0"] == 238 and record["certified"] and record["broken"] is False
    code, out, _ = invoke(["fit", "--from", str(path), "--no-certificate"])
    assert code == 0 and "proof chain" not in out


def test_rates_fit_plots_the_bound(default_run, tmp_path):
    path = tmp_path / "signgd.json"
    save(Trajectory([default_run], {"made_by": "test"}), path)
    code, out, err = invoke(["fit", "--from", str(path), "--plot", str(tmp_path / "fit.png")])
    assert code == 0, err
    assert (tmp_path / "fit_certificate.png").stat().st_size > 0 and (tmp_path / "fit_certificate.pdf").exists()


@pytest.mark.slow
def test_a_one_percent_error_in_gamma_breaks_the_certificate_at_1e5_steps():
    """The gap reaches 0.0035 by 1e5 steps: a 1% error of gamma (0.009) is then larger than the gap."""
    run = simulate([RunSpec("signgd", "1/2")], parse_data("default", 0), 100_000, checkpoints=30, device="cpu").runs[0]
    cert = certify(run)
    assert cert.certified and not cert.broken
    assert cert.gap[-1] == pytest.approx(0.00346, rel=0.01) and 0.06 < cert.bound[-1] < 0.07
    for factor, fact in ((1.01, "pairing"), (0.99, "max-margin")):
        wrong = certify(run, gamma=run.gamma["value"] * factor)
        assert wrong.broken and wrong.failures[fact]["count"] > 0


def test_the_claims_hook_carries_onsets_t_d_and_the_certificate(default_run):
    from rates.studies.certificates import claim_values
    from rates.studies.fitting import fit_record_of

    values = claim_values(fit_record_of([default_run], 0.05, None))
    assert values["applies"] and "SIGNADAM Thm 5.3" in values["source"]
    (run,) = values["runs"]
    assert run["t_d"]["t"] == pytest.approx(3.26e4, rel=0.01)
    assert (run["s0"], run["s1"], run["certified"], run["broken"]) == (238, 5, True, False)
    assert run["gap_at_horizon"] < run["bound_at_horizon"]
    momentum = simulate([RunSpec("signum", "1/2", momentum=0.9)], parse_data("default", 0), 50, checkpoints=5,
                        device="cpu").runs[0]
    assert claim_values(fit_record_of([momentum], 0.05, None))["applies"] is False


def test_every_step_of_the_chain_is_a_claim_of_rates_check():
    from proofs.catalog import CLAIM_NAMES
    from rates.symbolic.theorems.proof_chain import CHAIN

    assert {claim for _, claim in CHAIN} <= set(CLAIM_NAMES)


def test_a_run_past_the_budget_is_not_checked_and_says_so(default_run):
    cert = certify(default_run, budget_s=1e-3)
    assert not cert.applies and "not checked" in cert.why and "budget" in cert.why
    assert "SIGNADAM Thm 5.3" in cert.source  # the reason is printed under the theorem it would have instantiated
