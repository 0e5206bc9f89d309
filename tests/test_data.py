"""Datasets (docs/theory.md sections 1 and 5): generators, presets, --data specs and file loading with validation."""

import numpy as np
import pytest

from rates.errors import InputError, NotSeparableError
from rates.numeric.data import (
    PRESETS,
    Dataset,
    data_bound,
    gaussian,
    load_file,
    orthogonal_random,
    orthogonal_skewed,
    parse_data,
)
from rates.numeric.margins import max_margin


def assert_one_line_data_error(info, *needles):
    assert info.value.option == "--data"
    text = str(info.value)
    assert "\n" not in text
    for needle in needles:
        assert needle in text, text


def test_gaussian_shapes_labels_and_reproducibility():
    ds = gaussian(4, 6, 7, sigma=0.2, seed=5)
    assert (ds.n, ds.d, ds.k) == (28, 6, 4)
    assert ds.H.dtype == np.float64 and ds.y.dtype == np.int64
    assert np.array_equal(ds.class_counts(), [7, 7, 7, 7])
    again = gaussian(4, 6, 7, sigma=0.2, seed=5)
    assert np.array_equal(ds.H, again.H) and np.array_equal(ds.y, again.y)  # bit for bit
    assert not np.array_equal(ds.H, gaussian(4, 6, 7, sigma=0.2, seed=6).H)
    assert ds.meta["seed"] == 5 and ds.meta["tries"] >= 1
    # the reported gamma is the certified max-norm max margin of the returned data
    assert ds.meta["gamma_max"] == pytest.approx(max_margin(ds, "max").gamma, rel=1e-12)


def test_gaussian_with_zero_spread_puts_every_point_on_its_centre():
    ds = gaussian(3, 4, 5, sigma=0.0, seed=1)
    centres = np.asarray(ds.meta["centres"])
    assert np.array_equal(ds.H, centres[ds.y])


def test_gaussian_resamples_until_separable_deterministically():
    """k = 3 in d = 2 with a wide spread: seed 0's first draws are inseparable and are redrawn."""
    kwargs = dict(k=3, d=2, per_class=5, sigma=0.5)
    ds = gaussian(seed=0, **kwargs)
    tries = ds.meta["tries"]
    assert tries > 1
    again = gaussian(seed=0, **kwargs)
    assert again.meta["tries"] == tries and np.array_equal(again.H, ds.H)
    # replay the documented recipe: the rejected draws really were inseparable, the accepted one is ds
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 5)
    for attempt in range(1, tries + 1):
        H = rng.standard_normal((3, 2))[y] + 0.5 * rng.standard_normal((15, 2))
        if attempt < tries:
            with pytest.raises(NotSeparableError):
                max_margin(Dataset(H, y, 3, "rejected"), "frobenius")
    assert np.array_equal(H, ds.H)
    assert max_margin(ds, "frobenius").gamma > 0


def test_gaussian_refuses_when_it_cannot_separate():
    # d = 1 and k = 3: W h = h w, so all positive points share one argmax -- never separable
    with pytest.raises(NotSeparableError) as info:
        gaussian(3, 1, 4, sigma=0.1, seed=0, max_tries=3)
    assert_one_line_data_error(info, "3 tries")


def test_orthogonal_skewed_matches_definition():
    ds = orthogonal_skewed([3, 1, 2], [1.0, 0.5, 2.0])  # one scale per class
    expected_H = np.array([[1, 0, 0], [1, 0, 0], [1, 0, 0], [0, 0.5, 0], [0, 0, 2], [0, 0, 2.0]])
    assert np.array_equal(ds.H, expected_H)
    assert np.array_equal(ds.y, [0, 0, 0, 1, 2, 2])
    assert ds.meta["hardest_scales"] == [1.0, 0.5, 2.0]
    per_sample = orthogonal_skewed([2, 2], [3.0, 1.0, 0.25, 4.0])
    assert np.array_equal(per_sample.H, [[3, 0], [1, 0], [0, 0.25], [0, 4]])
    assert per_sample.meta["hardest_scales"] == [1.0, 0.25]
    assert data_bound(per_sample) == 4.0  # max_i ||h_i||_1 = max_i s_i
    for counts, scales in (([3], 1.0), ([2, 0], 1.0), ([2, 2], [1.0, -1.0]), ([2, 2], [1.0, 2.0, 3.0])):
        with pytest.raises(InputError):
            orthogonal_skewed(counts, scales)


def test_orthogonal_random_counts_and_scale_ranges():
    ds = orthogonal_random(4, 40, seed=3)
    counts = ds.class_counts()
    assert counts.sum() == 40 and counts.min() >= 1
    scales = ds.H.max(axis=1)
    for c in range(4):
        assert np.all((scales[ds.y == c] >= 0.5 + c) & (scales[ds.y == c] <= 1.0 + c))
    assert np.array_equal(orthogonal_random(4, 40, seed=3).H, ds.H)


def test_data_bound_is_max_l1_row_norm():
    H = np.array([[1.0, -2.0], [0.5, 0.5], [-3.0, 0.0]])
    assert data_bound(Dataset(H, np.array([0, 1, 1]), 2, "t")) == 3.0


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_build_separable_data_and_document_their_source(name):
    ds = parse_data(name)
    assert ds.meta["preset"] == name
    assert ds.meta["preset_source"].split()[0] in ("SIGNADAM", "MINIBATCH")
    assert ds.meta["preset_stated"] and ds.meta["preset_chosen"]
    assert max_margin(ds, "max").gamma > 0
    assert np.array_equal(parse_data(name).H, ds.H)


def test_default_preset_is_small_with_a_healthy_margin():
    ds = parse_data("default")
    assert ds.k == 3 and ds.n <= 40 and ds.d <= 6
    gamma = max_margin(ds, "max").gamma
    assert gamma / data_bound(ds) > 0.05  # not tiny relative to the data scale
    assert not np.array_equal(parse_data("default", seed=1).H, ds.H)


def test_orthogonal_preset_is_imbalanced_with_hardness_against_frequency():
    ds = parse_data("orthogonal-imbalanced")
    counts = ds.class_counts()
    hardest = ds.meta["hardest_scales"]
    assert counts.max() > counts.min()
    # the most frequent class is not the hardest one, so frequency and hardness bias disagree (docs/theory.md 5)
    assert int(np.argmax(counts)) != int(np.argmin(hardest))


def test_parse_gaussian_and_orthogonal_specs():
    ds = parse_data("gaussian:k=3,d=4,per_class=6,sigma=0.25")
    reference = gaussian(3, 4, 6, 0.25, seed=0)
    assert np.array_equal(ds.H, reference.H)
    assert np.array_equal(parse_data("gaussian:k=3,d=4,per_class=6,sigma=0.25", seed=9).H,
                          gaussian(3, 4, 6, 0.25, seed=9).H)
    assert np.array_equal(parse_data("gaussian:k=3,d=4,per_class=6,sigma=0.25,seed=2", seed=9).H,
                          gaussian(3, 4, 6, 0.25, seed=2).H)  # the spec's own seed wins
    ortho = parse_data("orthogonal:counts=4/1/1,scales=1/0.5/2")
    assert np.array_equal(ortho.class_counts(), [4, 1, 1])
    assert ortho.meta["hardest_scales"] == [1.0, 0.5, 2.0]


@pytest.mark.parametrize("spec,needle", [
    ("nosuchpreset", "unknown data"),
    ("gaussian:k=3,d=4", "missing per_class"),
    ("gaussian:k=3,d=4,per_class=x", "per_class must be an integer"),
    ("gaussian:k=3,d=4,per_class=5,colour=red", "unknown keys"),
    ("gaussian:k=1,d=4,per_class=5", "k must be an integer >= 2"),
    ("gaussian:k=3,d=4,per_class=5,sigma=-1", "sigma"),
    ("orthogonal:scales=1/2", "missing counts"),
    ("orthogonal:counts=2/a", "numbers separated"),
    ("missing_file.npz", "does not exist"),
    ("sklearn:mnist", "allowed: sklearn:digits"),
    ("sklearn:digits+whiten", "unknown transform +whiten"),
    ("libsvm:/nonexistent/file.svm", "does not exist"),
])
def test_bad_specs_are_one_line_input_errors(spec, needle):
    with pytest.raises(InputError) as info:
        parse_data(spec)
    assert_one_line_data_error(info, needle)


def test_unknown_preset_message_lists_the_allowed_forms():
    with pytest.raises(InputError) as info:
        parse_data("cifar")
    assert_one_line_data_error(info, "default", "gaussian:k=", "orthogonal:counts=", ".npz", ".csv")


def test_load_npz_and_csv_round_trip(tmp_path):
    H = np.array([[1.0, 0.0], [0.9, 0.2], [0.0, 1.0], [-1.0, -1.0]])
    labels = np.array([5, 5, 7, 9])  # arbitrary integer labels map to 0..k-1 in sorted order
    np.savez(tmp_path / "a.npz", X=H, y=labels)
    ds = load_file(tmp_path / "a.npz")
    assert np.array_equal(ds.H, H) and np.array_equal(ds.y, [0, 0, 1, 2]) and ds.k == 3
    assert ds.meta["labels"] == [5, 7, 9] and ds.name == "a.npz"
    (tmp_path / "b.csv").write_text("f1,f2,label\n" + "\n".join(f"{a},{b},{c}" for (a, b), c in zip(H, labels)))
    from_csv = parse_data(str(tmp_path / "b.csv"))
    assert np.array_equal(from_csv.H, H) and np.array_equal(from_csv.y, ds.y)
    (tmp_path / "c.csv").write_text("\n".join(f"{a},{b},{c}" for (a, b), c in zip(H, labels)) + "\n")
    assert np.array_equal(load_file(tmp_path / "c.csv").H, H)  # no header


@pytest.mark.parametrize("writer,needle", [
    (lambda p: np.savez(p / "f.npz", Z=np.ones((3, 2)), y=[0, 1, 1]), "needs arrays"),
    (lambda p: np.savez(p / "f.npz", H=np.array([[0.0, np.nan], [1, 1]]), y=[0, 1]), "NaN"),
    (lambda p: np.savez(p / "f.npz", H=np.ones((3, 2)), y=[0, 1]), "one label per row"),
    (lambda p: np.savez(p / "f.npz", H=np.ones((3, 2)), y=[0.5, 1, 1]), "integers"),
    (lambda p: np.savez(p / "f.npz", H=np.ones((3, 2)), y=[1, 1, 1]), "at least 2 classes"),
    (lambda p: np.savez(p / "f.npz", H=np.ones(3), y=[0, 1, 1]), "2-D"),
    (lambda p: (p / "f.npz").write_bytes(b"not a zip"), "not a readable"),
    (lambda p: (p / "f.csv").write_text("1,2,0\n3,1\n"), "same number"),
    (lambda p: (p / "f.csv").write_text("a,b,y\n1,2,0\n3,x,1\n"), "not numeric"),
    (lambda p: (p / "f.csv").write_text("1,2,0\n"), "at least 2 data rows"),
])
def test_bad_files_are_one_line_input_errors(tmp_path, writer, needle):
    writer(tmp_path)
    path = next(tmp_path.iterdir())
    with pytest.raises(InputError) as info:
        parse_data(str(path))
    assert_one_line_data_error(info, needle)


def test_non_separable_file_is_refused_by_the_margin_solver(tmp_path):
    np.savez(tmp_path / "xor.npz", H=np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]]),
             y=[0, 0, 1, 1])
    ds = parse_data(str(tmp_path / "xor.npz"))  # loading is fine ...
    with pytest.raises(NotSeparableError) as info:  # ... but no linear classifier through 0 separates it
        max_margin(ds, "frobenius")
    assert_one_line_data_error(info, "not linearly separable")


def test_dataset_validation():
    with pytest.raises(InputError):
        Dataset(np.ones((3, 2)), np.array([0, 2, 2]), 3, "gap")  # class 1 missing
    with pytest.raises(InputError):
        Dataset(np.ones((3, 2)), np.array([0, 1]), 2, "short")
    with pytest.raises(InputError):
        Dataset(np.full((2, 2), np.inf), np.array([0, 1]), 2, "inf")


def test_negative_seed_is_refused_naming_the_option():
    with pytest.raises(InputError) as err:
        parse_data("default", seed=-1)
    assert err.value.option == "--seed"


def test_fit_with_negative_seed_exits_2_with_one_line(capsys):
    from cli.app import main

    with pytest.raises(SystemExit) as exit_info:
        main(["fit", "--algo", "signgd", "--a", "1/2", "--steps", "100", "--seed", "-1"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--seed" in err
