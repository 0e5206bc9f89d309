"""Max margins of large problems, side measures under a time budget, memory refused before work, real data in.

The working-set (constraint generation) solves are checked against the whole programs on the same data, to the
two results' certified accuracies; the face test on a working set against the whole face LPs; refusals by
making the heavy allocation impossible (a monkeypatched generator or task builder that fails if reached), not
by timing; ``rates predict --data`` against a closed form (orthogonal data: gamma = 2 min hardest scale in the
max norm, MINIBATCH Def. 4.8 setting) and B computed here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_invoke import invoke

from rates import budget
from rates.errors import InputError
from rates.norms import parse_norm
from rates.numeric import margins, measures
from rates.numeric.data import gaussian, orthogonal_skewed, parse_data

DATASETS = {
    "default": lambda: parse_data("default"),
    "signadam": lambda: parse_data("signadam"),
    "minibatch": lambda: parse_data("minibatch"),
    "gaussian k=4 d=12 n=60": lambda: gaussian(4, 12, 15, 0.5, seed=7),
    "orthogonal": lambda: orthogonal_skewed([3, 2, 1, 2], [1.0, 1.7, 2.5, 0.5, 0.9, 2.0, 1.3, 4.0]),
}


def _solve(ds, norm: str):
    return margins._solve(np.asarray(ds.H, dtype=np.float64), np.asarray(ds.y), int(ds.k), parse_norm(norm, "norm"))


@pytest.mark.parametrize("norm", ["max", "sum", "frobenius"])
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_working_set_equals_the_whole_program_to_certified_accuracy(name, norm, monkeypatch):
    ds = DATASETS[name]()
    whole = _solve(ds, norm)
    assert "working_set" not in whole.checks  # the presets are solved whole, as before
    monkeypatch.setattr(margins, "WORKING_SET_ENTRIES", 0)  # every problem is "large" now
    monkeypatch.setattr(margins, "WORKING_SET_START", 6)  # and starts from a few rows, as a large one does
    monkeypatch.setattr(margins, "WORKING_SET_STEP", 3)
    reduced = _solve(ds, norm)
    used, _, total = reduced.checks["working_set"].split(": ")[1].split(" ")[:3]
    assert int(used) < int(total)  # certified before every row was added
    # certified by the working set's own points, without the whole program
    assert all("working set" in name for name in reduced.checks["lower_candidates"])
    assert reduced.accuracy <= margins.TARGET_ACCURACY
    tolerance = (whole.accuracy + reduced.accuracy + 1e-14) * whole.gamma
    assert abs(reduced.gamma - whole.gamma) <= tolerance
    # both brackets contain the true max margin: each lower bound stays below the other's upper bound
    assert reduced.gamma <= whole.upper * (1 + 1e-14) and whole.gamma <= reduced.upper * (1 + 1e-14)
    # the returned W achieves gamma on all rows (not only the working set's)
    assert margins.margin_of(reduced.W, ds, norm) == pytest.approx(reduced.gamma, rel=1e-12)


def _gaussian_raw(k: int, d: int, per_class: int, seed: int):
    """Gaussian class data drawn here (no separability solve on the way)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k), per_class)
    H = rng.standard_normal((k, d))[y] + 0.3 * rng.standard_normal((k * per_class, d))
    return H, y


@pytest.mark.parametrize("norm", ["max", "sum"])
def test_large_lp_on_one_highs_model_equals_the_whole_lp(norm, monkeypatch):
    # n (k-1) * k d = 5.6e5, solved by constraint generation on one HiGHS model as a problem above
    # WORKING_SET_ENTRIES is, then whole by scipy's HiGHS as a small one is
    k = 8
    H, y = _gaussian_raw(k, 50, 25, seed=3)
    monkeypatch.setattr(margins, "WORKING_SET_ENTRIES", 10**5)
    reduced = margins._solve(H, y, k, parse_norm(norm, "norm"))
    used, _, total = reduced.checks["working_set"].split(": ")[1].split(" ")[:3]
    assert int(used) < int(total)
    monkeypatch.setattr(margins, "WORKING_SET_ENTRIES", 10**12)
    whole = margins._solve(H, y, k, parse_norm(norm, "norm"))
    assert "working_set" not in whole.checks
    assert reduced.accuracy <= margins.TARGET_ACCURACY and whole.accuracy <= margins.TARGET_ACCURACY
    assert abs(reduced.gamma - whole.gamma) <= (reduced.accuracy + whole.accuracy + 1e-13) * whole.gamma
    # the certificates, recomputed with numpy alone: the margin of W on every row, ||Z(lambda)||_dual
    M = margins.constraint_matrix(H, y, k)
    W = reduced.W.reshape(-1)
    size = np.abs(W).max() if norm == "max" else np.abs(W).sum()
    assert (M @ W).min() / size == pytest.approx(reduced.gamma, rel=1e-12)
    Z = M.T @ (reduced.dual / reduced.dual.sum())
    assert (np.abs(Z).sum() if norm == "max" else np.abs(Z).max()) == pytest.approx(reduced.upper, rel=1e-12)


@pytest.mark.parametrize("norm,p", [("max", float("inf")), ("sum", 1.0)])
def test_large_orthogonal_lp_has_the_closed_form_margin(norm, p):
    # orthogonal data: the l_inf margin is 2 min_c m_c, the l_1 one 1 / sum_c 1/m_c, m_c the hardest scale of
    # class c (derived in tests/test_margins.py::orthogonal_lp_margin); n (k-1) * k^2 = 3.04e6 > WORKING_SET_ENTRIES
    k, per_class = 20, 20
    scales = np.random.default_rng(5).uniform(0.5, 3.0, size=k * per_class)
    ds = orthogonal_skewed([per_class] * k, scales)
    hardest = np.array(ds.meta["hardest_scales"])
    expected = 2 * hardest.min() if np.isinf(p) else 1 / (1 / hardest).sum()
    result = _solve(ds, norm)
    assert "working_set" in result.checks
    assert result.gamma == pytest.approx(expected, rel=1e-9)
    assert result.upper == pytest.approx(expected, rel=1e-9)


def test_highs_prints_nothing_on_stdout():
    # HiGHS writes a banner on file descriptor 1 when a process makes its first model; stdout carries JSON
    import os
    import subprocess
    import sys

    code = "from rates.numeric.margins import _new_highs; _new_highs(); _new_highs(); print('only this')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy(),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "only this\n"


@pytest.mark.slow
def test_max_norm_margin_at_mnist_size_is_certified():
    # k = 10, d = 784, n = 2000 (about 20 s of CPU): certified to the target, both bounds recomputed with numpy
    H, y = _gaussian_raw(10, 784, 200, seed=0)
    result = margins._solve(H, y, 10, parse_norm("max", "norm"))
    assert result.accuracy <= margins.TARGET_ACCURACY
    M = margins.constraint_matrix(H, y, 10)
    assert (M @ result.W.reshape(-1)).min() / np.abs(result.W).max() == pytest.approx(result.gamma, rel=1e-12)
    assert np.abs(M.T @ (result.dual / result.dual.sum())).sum() == pytest.approx(result.upper, rel=1e-12)


def test_frobenius_least_distance_program_is_the_svm_solution():
    ds = gaussian(3, 6, 8, 0.4, seed=2)
    scale = float(np.abs(ds.H).max())
    problem = margins._Problem(margins.constraint_matrix(ds.H / scale, ds.y, ds.k), ds.k, ds.d,
                               parse_norm("frobenius", "norm"))
    W, u = margins._frobenius_ldp(problem, {})
    whole = _solve(ds, "frobenius")
    # min ||w|| s.t. M w >= 1 has margin 1/||w||; on the scaled data, times the scale
    assert scale / np.linalg.norm(W) == pytest.approx(whole.gamma, rel=1e-10)
    assert np.min(problem.M @ W.reshape(-1)) == pytest.approx(1.0, rel=1e-10) and np.all(u >= 0)


@pytest.mark.parametrize("counts,scales,unique", [([2, 2], 1.0, True), ([2, 2], [1.0, 3.0], False)])
def test_face_test_on_a_working_set_answers_as_the_whole_face(counts, scales, unique, monkeypatch):
    ds = orthogonal_skewed(counts, scales)
    A = margins.constraint_matrix(ds.H, ds.y, ds.k)
    W = margins.max_margin(ds, "max").W
    assert measures._face_is_a_point(A, 2.0) is unique
    monkeypatch.setattr(margins, "WORKING_SET_ENTRIES", 0)
    assert measures._face_is_a_point(A, 2.0, W) is unique


def test_face_test_on_one_highs_model_answers_as_the_whole_face(monkeypatch):
    H, y = _gaussian_raw(5, 40, 40, seed=11)
    data = type("Data", (), {"H": H, "y": y, "k": 5})()
    result = margins.max_margin(data, "max")
    A = margins.constraint_matrix(H, y, 5)
    whole = measures._face_is_a_point(A, result.gamma)
    monkeypatch.setattr(margins, "WORKING_SET_ENTRIES", 0)
    assert measures._face_is_a_point(A, result.gamma, result.W) is whole


@pytest.mark.parametrize("k,d,per_class,seed,whole", [(6, 20, 20, 1, True), (5, 40, 40, 11, False),
                                                       (4, 30, 20, 2, False), (3, 10, 30, 5, False)])
def test_complementarity_certifies_only_unique_solutions(k, d, per_class, seed, whole):
    # the whole face LPs (scipy, every row) are the independent answer; the rank test may only say "unique"
    # where they do, and does on the unique case here
    H, y = _gaussian_raw(k, d, per_class, seed)
    result = margins.max_margin(type("Data", (), {"H": H, "y": y, "k": k})(), "max")
    A = margins.constraint_matrix(H, y, k)
    assert measures._face_is_a_point(A, result.gamma) is whole
    assert measures._unique_by_complementarity(A, result.gamma, result.W, result.dual) is whole
    # a non-unique face (orthogonal data, the easier class's column free within a range) is never certified
    ds = orthogonal_skewed([2, 2], [1.0, 3.0])
    skewed = margins.max_margin(ds, "max")
    assert not measures._unique_by_complementarity(margins.constraint_matrix(ds.H, ds.y, ds.k), skewed.gamma,
                                                   skewed.W, skewed.dual)


def test_face_test_past_its_budget_is_undecided_and_says_why(monkeypatch):
    monkeypatch.setattr(measures, "FACE_BUDGET_SECONDS", 0.0)
    ds = orthogonal_skewed([3, 2], [1.0, 2.0, 0.7, 1.5, 0.9])  # data no other test asks the face of
    references, _ = measures.max_margin_references(ds, required=("max",))
    assert references["max"].unique is None
    assert "did not finish within 0 s" in references["max"].to_json()["unique_reason"]


# ----------------------------------------------------------------------------------- refused before work


def _no_draws(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("data were drawn before the memory check")

    monkeypatch.setattr(np.random, "default_rng", refuse)


def test_generated_data_too_large_is_refused_before_any_draw(monkeypatch, tmp_path):
    _no_draws(monkeypatch)
    code, out, err = invoke(["run", "--algo", "signgd", "--a", "1/2", "--steps", "10", "--out",
                             str(tmp_path / "t.json"), "--data", "gaussian:k=3,d=5,per_class=100000000"])
    assert code == 2 and out == "" and not (tmp_path / "t.json").exists()
    assert err.count("\n") == 1 and "--data" in err and "GiB" in err and "available" in err
    with pytest.raises(InputError, match="GiB"):
        orthogonal_skewed([10**9, 10**9], 1.0)


def test_generated_data_estimate_follows_the_available_memory():
    budget.check_generated_data(3000, 3, 5, "gaussian", available=16 * 2**30)  # 3000 x 5: fits
    with pytest.raises(InputError) as refused:
        budget.check_generated_data(3000, 3, 5, "gaussian", available=2**20)
    assert "0.0 GiB available" in refused.value.message


def test_seed_ranges_are_refused_before_the_list_is_made(monkeypatch):
    from rates.numeric.run_parameters import parse_seeds

    monkeypatch.setattr(budget, "available_memory", lambda: 2**30)
    with pytest.raises(InputError) as refused:
        parse_seeds(0, "0..10000000", "--data-seeds")
    assert refused.value.option == "--data-seeds" and "GiB" in refused.value.message
    assert parse_seeds(0, "0..4") == [0, 1, 2, 3, 4]  # small ranges unchanged


def test_report_default_refuses_its_draws_before_building_tasks(monkeypatch, tmp_path):
    from rates.studies import default_study

    def refuse(*args, **kwargs):
        raise AssertionError("tasks were built before the memory check")

    monkeypatch.setattr(default_study, "study_tasks", refuse)
    monkeypatch.setattr(budget, "available_memory", lambda: 4 * 2**30)  # the floor of parse_seeds passes
    code, out, err = invoke(["report", "default", "--data-seeds", "0..100000", "--out", str(tmp_path / "r")])
    assert code == 2 and "--data-seeds" in err and "GiB" in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_tightness_budget_is_refused_before_any_run(monkeypatch):
    from rates.judge import tightness

    def refuse(*args, **kwargs):
        raise AssertionError("a candidate was run before the memory check")

    monkeypatch.setattr(tightness, "_score", refuse)
    code, _, err = invoke(["tightness", "--algo", "signgd", "--a", "1/2", "--budget", "100000000"])
    assert code == 2 and "--budget" in err and "GiB" in err


def test_sweep_grid_counts_are_refused_before_any_draw(monkeypatch):
    from rates.sweep.grid import expand

    monkeypatch.setattr(budget, "available_memory", lambda: 2**30)
    _no_draws(monkeypatch)
    with pytest.raises(InputError) as refused:
        expand({"algo": ["signgd"], "a": ["1/2"], "steps": [100], "checkpoints": [60], "data": ["default"],
                "seed": list(range(100000)), "device": ["cpu"]})
    assert refused.value.option == "GRID" and "configuration" in refused.value.message


# ----------------------------------------------------------------------------------------- real data in


def test_predict_reads_gamma_B_k_n_from_a_data_file(tmp_path):
    scales = [1.0, 1.7, 0.6, 2.5, 0.9]
    ds = orthogonal_skewed([2, 3], scales)
    path = tmp_path / "orth.npz"
    np.savez(path, H=ds.H, y=ds.y)
    code, out, err = invoke(["predict", "--algo", "signgd", "--a", "1/2", "--data", str(path), "--json"])
    assert code == 0, err
    facts = json.loads(out)["data_constants"]
    hardest = [min(scales[:2]), min(scales[2:])]  # each class's smallest scale (MINIBATCH Def. 4.8 setting)
    assert facts["gamma"] == pytest.approx(2 * min(hardest), rel=1e-9)  # max-norm closed form
    assert facts["B"] == pytest.approx(np.abs(ds.H).sum(axis=1).max(), rel=0, abs=0)
    assert (facts["k"], facts["n"], facts["gamma_norm"]) == (2, 5, "max")
    # the gate saw the measured gamma: its separability line quotes it
    assert f"{2 * min(hardest):.4g}" in json.dumps(json.loads(out)["gate"])


def test_predict_data_refuses_constants_given_twice(tmp_path):
    code, _, err = invoke(["predict", "--algo", "signgd", "--a", "1/2", "--data", "default", "--gamma", "1"])
    assert code == 2 and "--data" in err and "--gamma" in err
    code, _, err = invoke(["predict", "--algo", "signgd", "--a", "1/2", "--data", "default", "--n", "7"])
    assert code == 2 and "--n" in err and "n = 30" in err


# ----------------------------------------------------------------------------- weights kept, initialisation


def _run(tmp_path, name, *extra):
    path = tmp_path / name
    code, _, err = invoke(["run", "--algo", "signgd", "--a", "1/2", "--steps", "200", "--checkpoints", "12",
                           "--out", str(path), *extra])
    assert code == 0, err
    return path


def test_kept_weights_round_trip_and_are_the_measured_iterates(tmp_path):
    from rates.numeric.margins import margin_of
    from rates.numeric.trajectory import load

    final = load(_run(tmp_path, "final.json", "--keep-weights", "final")).runs[0]
    every = load(_run(tmp_path, "every.json", "--keep-weights", "checkpoints")).runs[0]
    assert final.weights.shape == (1, 3, 5) and every.weights.shape == (len(every.t), 3, 5)
    assert np.array_equal(final.final_W, every.final_W)
    ds = parse_data("default")
    # each kept W_t has the margin the trajectory recorded at its checkpoint (computed here from W alone)
    for index in (0, len(every.t) // 2, -1):
        assert margin_of(every.weights[index], ds, "max") == pytest.approx(every.margin[index], rel=1e-12)
    # saving what was loaded writes the same weights again
    from rates.numeric.trajectory import save

    save(load(tmp_path / "every.json"), tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text())["runs"][0]["weights"] == \
        json.loads((tmp_path / "every.json").read_text())["runs"][0]["weights"]
    plain = json.loads(_run(tmp_path, "plain.json").read_text())
    assert "weights" not in plain["runs"][0]  # not asked: not written


def test_init_scale_is_seeded_gaussian_and_zero_stays_the_default(tmp_path):
    from rates.numeric.engine import INIT_STREAM, RunSpec, simulate

    ds = parse_data("default")
    zero = simulate([RunSpec("signgd", "1/2")], ds, 50, checkpoints=4, device="cpu").runs[0]
    explicit = simulate([RunSpec("signgd", "1/2", init_scale=0.0)], ds, 50, checkpoints=4, device="cpu").runs[0]
    assert np.array_equal(zero.weights, explicit.weights) and zero.config.init_scale is None
    one = simulate([RunSpec("signgd", "1/2", init_scale=0.3, seed=4)], ds, 1, checkpoints=2, device="cpu").runs[0]
    again = simulate([RunSpec("signgd", "1/2", init_scale=0.3, seed=4)], ds, 1, checkpoints=2, device="cpu").runs[0]
    other = simulate([RunSpec("signgd", "1/2", init_scale=0.3, seed=5)], ds, 1, checkpoints=2, device="cpu").runs[0]
    assert np.array_equal(one.weights, again.weights) and not np.array_equal(one.weights, other.weights)
    # W_1 = W_0 - eta_0 (0+2)^(-1/2) * (SignGD step): W_0 from its own stream, then one step of the known size
    W0 = 0.3 * np.random.default_rng([INIT_STREAM, 4]).standard_normal((3, 5))
    step = one.weights[0] - W0
    assert np.allclose(np.abs(step), 2 ** -0.5, rtol=0, atol=1e-15)  # every entry moves by eta_0 (t+2)^-a
    assert one.config.init_scale == 0.3
    fused = simulate([RunSpec("ngd", "1/2", init_scale=0.3, seed=4)], ds, 30, checkpoints=3, device="cpu").runs[0]
    torch_ = simulate([RunSpec("ngd", "1/2", init_scale=0.3, seed=4)], ds, 30, checkpoints=3, device="cpu",
                      engine="torch").runs[0]
    assert np.allclose(fused.weights, torch_.weights, rtol=1e-12, atol=1e-14)


def test_init_scale_and_keep_weights_refuse_bad_values(tmp_path):
    for flag, value in (("--init-scale", "-1"), ("--init-scale", "nan"), ("--keep-weights", "all")):
        code, out, err = invoke(["run", "--algo", "signgd", "--a", "1/2", "--steps", "10", "--out",
                                 str(tmp_path / "x.json"), flag, value])
        assert code == 2 and flag in err and not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_frobenius_quadratic_program_on_a_working_set_equals_the_whole_program(name, monkeypatch):
    ds = DATASETS[name]()
    whole = _solve(ds, "frobenius")
    monkeypatch.setattr(margins, "SIMPLEX_DUAL_ENTRIES", 0)  # every problem is "large" now
    monkeypatch.setattr(margins, "FROBENIUS_QP_START", 2)  # and starts from two rows
    monkeypatch.setattr(margins, "FROBENIUS_QP_STEP", 2)
    reduced = _solve(ds, "frobenius")
    assert reduced.solver == "clarabel-qp-working-set" and reduced.accuracy <= margins.TARGET_ACCURACY
    assert abs(reduced.gamma - whole.gamma) <= (whole.accuracy + reduced.accuracy + 1e-14) * whole.gamma
    assert margins.margin_of(reduced.W, ds, "frobenius") == pytest.approx(reduced.gamma, rel=1e-12)


def test_frobenius_max_margin_of_digits_is_certified_by_the_quadratic_program():
    ds = parse_data("sklearn:digits")  # 16,173 rows x 640 unknowns
    result = _solve(ds, "frobenius")
    assert result.solver == "clarabel-qp-working-set" and result.accuracy <= margins.TARGET_ACCURACY
    # both bounds recomputed with numpy from the returned points: W's worst margin, and ||Z(lambda)||_F
    M = margins.constraint_matrix(ds.H, ds.y, ds.k)
    assert (M @ result.W.reshape(-1)).min() / np.linalg.norm(result.W) == pytest.approx(result.gamma, rel=1e-12)
    assert np.linalg.norm(M.T @ result.dual) == pytest.approx(result.upper, rel=1e-12)
    # the value the NNLS least-distance working set certified before this path existed (to 7.5e-13)
    assert result.gamma == pytest.approx(0.7363709965011711, rel=1e-11)
