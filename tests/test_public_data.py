"""Public data by name (scikit-learn's bundled sets), LIBSVM and ARFF files on disk, and the column transforms."""

import numpy as np
import pytest
from sklearn import datasets
from sklearn.svm import LinearSVC

from rates.errors import InputError, NotSeparableError
from rates.numeric.data import parse_data, transform_effect
from rates.numeric.margins import max_margin
from tests.cli_invoke import invoke


def test_bundled_sets_are_sklearns_arrays():
    for name, loader in (("digits", datasets.load_digits), ("wine", datasets.load_wine),
                         ("breast_cancer", datasets.load_breast_cancer)):
        bunch = loader()
        ds = parse_data(f"sklearn:{name}")
        assert np.array_equal(ds.H, bunch.data) and np.array_equal(ds.y, bunch.target)
        assert ds.k == len(np.unique(bunch.target)) and ds.name == f"sklearn:{name}"
    digits = parse_data("sklearn:digits")
    assert (digits.n, digits.d, digits.k) == (1797, 64, 10)
    assert float(np.abs(digits.H).sum(axis=1).max()) == 433.0  # integer pixels 0..16


def test_iris_is_refused_as_not_separable_with_its_number():
    iris = parse_data("sklearn:iris")
    with pytest.raises(NotSeparableError) as info:
        max_margin(iris, "max")
    text = str(info.value)
    assert text.startswith("--data:") and "\n" not in text
    wrong = int(text.split("leaves ")[1].split(" of 150")[0])
    assert 1 <= wrong < 150
    # a second solver agrees that no linear classifier without bias fits all points: a nearly hard-margin SVM
    svm = LinearSVC(C=1e4, fit_intercept=False, max_iter=200_000, tol=1e-8).fit(iris.H, iris.y)
    assert svm.score(iris.H, iris.y) < 1.0


def test_run_on_iris_exits_2_naming_data(tmp_path):
    out = tmp_path / "t.json"
    code, stdout, stderr = invoke(["run", "--algo", "signgd", "--a", "1/2", "--steps", "5", "--data", "sklearn:iris",
                                   "--out", str(out)])
    assert code == 2 and not out.exists()
    line = stderr.strip().splitlines()[-1]
    assert line.startswith("rates: --data: data are not linearly separable") or "--data: data are not" in line


def test_standardize_and_scale_transform_the_columns():
    wine = parse_data("sklearn:wine")
    standard = parse_data("sklearn:wine+standardize")
    assert np.allclose(standard.H.mean(axis=0), 0.0, atol=1e-12) and np.allclose(standard.H.std(axis=0), 1.0)
    scaled = parse_data("sklearn:wine+scale")
    assert np.allclose(scaled.H, wine.H / wine.H.std(axis=0))
    assert scaled.meta["transform"]["B_before"] == float(np.abs(wine.H).sum(axis=1).max())
    assert scaled.meta["transform"]["B_after"] == pytest.approx(float(np.abs(scaled.H).sum(axis=1).max()), rel=1e-15)
    # a positive diagonal map of the features keeps separability; the max-norm margin changes with it
    assert max_margin(scaled, "max").gamma > 0
    line = transform_effect("sklearn:wine+scale")
    assert f"{max_margin(wine, 'max').gamma:.6g} -> {max_margin(scaled, 'max').gamma:.6g}" in line
    assert transform_effect("sklearn:wine") is None


def test_standardized_breast_cancer_is_not_separable_without_bias():
    """Centring the columns moves the data relative to the origin, which a classifier without bias feels: raw and
    scaled breast_cancer are separable, centred it is not (measured; 1 point is left on the wrong side)."""
    assert max_margin(parse_data("sklearn:breast_cancer+scale"), "max").gamma > 0
    with pytest.raises(NotSeparableError, match="leaves 1 of 569 points"):
        max_margin(parse_data("sklearn:breast_cancer+standardize"), "max")


def test_libsvm_and_arff_files(tmp_path):
    wine = datasets.load_wine()
    path = tmp_path / "wine.svm"
    datasets.dump_svmlight_file(wine.data, wine.target + 1, str(path))  # LIBSVM labels are often 1..k
    for spec in (str(path), f"libsvm:{path}"):
        ds = parse_data(spec)
        assert np.allclose(ds.H, wine.data, rtol=1e-15) and np.array_equal(ds.y, wine.target)
        assert ds.meta["labels"] == [1, 2, 3]
    arff = tmp_path / "tiny.arff"
    arff.write_text("@relation tiny\n@attribute a numeric\n@attribute b numeric\n@attribute class {neg,pos}\n"
                    "@data\n1,0,pos\n2,1,pos\n-1,0,neg\n-3,2,neg\n")
    ds = parse_data(str(arff))
    assert np.array_equal(ds.H, [[1, 0], [2, 1], [-1, 0], [-3, 2]]) and np.array_equal(ds.y, [1, 1, 0, 0])


def test_unreadable_arff_and_libsvm_files(tmp_path):
    bad = tmp_path / "bad.arff"
    bad.write_text("@relation x\n@attribute a string\n@attribute class {a,b}\n@data\n'q',a\n")
    with pytest.raises(InputError):
        parse_data(str(bad))
    broken = tmp_path / "broken.svm"
    broken.write_text("1 1:0.5 2:x\n")
    with pytest.raises(InputError, match="not a readable LIBSVM file"):
        parse_data(str(broken))
