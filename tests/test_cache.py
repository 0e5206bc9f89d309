"""rates.cache: where entries go, exact round trips, keys that change with the code, and failures that only
cost time. The users of the cache (max margins, ``rates predict``) are tested in test_margins.py and
test_predict_cli.py."""

import math
import os
import struct
import sys

import pytest

from rates import cache


def test_directory_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.directory() == tmp_path / "mine"
    monkeypatch.setenv("RATES_CACHE_DIR", "OFF")
    assert cache.directory() is None
    assert cache.store("kind", "k" * 64, 1.0) is False and cache.load("kind", "k" * 64) is None
    assert cache.key_for("x", packages=("rates",), libraries=("numpy",)) is None
    monkeypatch.delenv("RATES_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.directory() == tmp_path / "xdg" / "rates"


def test_floats_come_back_bit_for_bit():
    values = [0.1, -0.0, 5e-324, 1.7976931348623157e308, math.pi, 1 / 3, -math.inf, 2.0**-1074 * 3]
    key = cache.make_key("floats", values)
    assert cache.store("test", key, {"values": values, "nested": [[values[4]]]})
    back = cache.load("test", key)
    assert [struct.pack("<d", v) for v in back["values"]] == [struct.pack("<d", v) for v in values]
    assert back["nested"] == [[math.pi]]
    assert cache.store("test", key, math.nan) and math.isnan(cache.load("test", key))


def test_keys_differ_with_every_part():
    base = cache.make_key("a", 1, (2.0, "x"))
    assert base == cache.make_key("a", 1, (2.0, "x"))
    others = {cache.make_key("b", 1, (2.0, "x")), cache.make_key("a", 2, (2.0, "x")),
              cache.make_key("a", 1, (2.5, "x")), cache.make_key("a", 1, (2.0, "y")), cache.make_key("a", 1)}
    assert base not in others and len(others) == 5


def test_source_fingerprint_changes_with_any_file_of_the_package(tmp_path, monkeypatch):
    package = tmp_path / "fingerprinted_pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "solver.py").write_text("TOL = 1e-9\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def fingerprint():
        cache.source_fingerprint.cache_clear()
        return cache.source_fingerprint("fingerprinted_pkg")

    seen = [fingerprint()]
    assert fingerprint() == seen[0]  # stable
    (package / "sub" / "solver.py").write_text("TOL = 1e-8\n")  # one character of a nested module
    seen.append(fingerprint())
    (package / "extra.py").write_text("")  # a new (empty) module
    seen.append(fingerprint())
    (package / "extra.py").rename(package / "other.py")  # same bytes, another name
    seen.append(fingerprint())
    assert len(set(seen)) == 4
    cache.source_fingerprint.cache_clear()
    with pytest.raises(ValueError):
        cache.source_fingerprint("math")  # a module, not a package


def test_library_versions_name_each_library():
    text = cache.library_versions("numpy", "surely-not-installed-xyz")
    import numpy

    assert f"numpy=={numpy.__version__}" in text and "surely-not-installed-xyz==missing" in text
    assert text.startswith(f"python=={sys.version_info[0]}.{sys.version_info[1]}.")


def test_unreadable_or_foreign_entries_are_misses(own_rates_cache):
    key = cache.make_key("entry")
    assert cache.store("test", key, [1, 2])
    path = own_rates_cache / "test" / f"{key}.json"
    assert cache.load("test", key) == [1, 2]
    path.write_text('{"key": "' + key + '", "value": [1, 2')  # truncated
    assert cache.load("test", key) is None
    path.write_text('{"key": "someone else", "value": 3}')  # a file under the wrong name
    assert cache.load("test", key) is None
    assert cache.store("test", key, 4) and cache.load("test", key) == 4  # overwritten
    assert cache.clear("test") == 1 and cache.load("test", key) is None


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root writes anywhere")
def test_a_cache_that_cannot_be_written_is_skipped(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    monkeypatch.setenv("RATES_CACHE_DIR", str(locked / "rates"))
    try:
        assert cache.store("test", cache.make_key("x"), 1.0) is False
        assert cache.load("test", cache.make_key("x")) is None
    finally:
        locked.chmod(0o700)


def test_a_cache_path_that_is_a_file_is_skipped(tmp_path, monkeypatch):
    """Works as root too: a regular file where the cache folder should be."""
    (tmp_path / "blocker").write_text("not a folder")
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path / "blocker"))
    assert cache.store("test", cache.make_key("x"), 1.0) is False
    assert cache.load("test", cache.make_key("x")) is None
    assert cache.clear("test") == 0


def test_values_that_are_not_json_are_not_stored(own_rates_cache):
    key = cache.make_key("object")
    assert cache.store("test", key, object()) is False
    assert cache.load("test", key) is None
    assert not list((own_rates_cache / "test").glob("*"))  # no temporary file left behind


def test_each_folder_keeps_its_most_recently_used_entries(own_rates_cache, monkeypatch):
    monkeypatch.setattr(cache, "MAX_ENTRIES", 3)
    keys = [cache.make_key("entry", i) for i in range(5)]
    folder = own_rates_cache / "test"
    for age, key in enumerate(keys[:3]):
        assert cache.store("test", key, age)
        os.utime(folder / f"{key}.json", ns=(10**18 + age, 10**18 + age))  # stored in order, 1 ns apart
    assert cache.load("test", keys[0]) == 0  # read: now the most recently used
    cache.store("test", keys[3], 3)
    cache.store("test", keys[4], 4)
    assert sorted(path.stem for path in folder.glob("*.json")) == sorted([keys[0], keys[3], keys[4]])


def test_a_package_without_source_is_never_cached(tmp_path, monkeypatch):
    (tmp_path / "bytecode_only_pkg").mkdir()
    (tmp_path / "bytecode_only_pkg" / "module.pyc").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path))
    cache.source_fingerprint.cache_clear()
    with pytest.raises(ValueError):
        cache.source_fingerprint("bytecode_only_pkg")
    assert cache.key_for("x", packages=("bytecode_only_pkg",), libraries=()) is None
    assert cache.key_for("x", packages=("rates",), libraries=("numpy",)) is not None


def test_no_home_directory_means_no_cache(monkeypatch):
    monkeypatch.delenv("RATES_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def homeless(cls=None):
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(cache.Path, "home", classmethod(homeless))
    assert cache.directory() is None
    assert cache.store("test", cache.make_key("x"), 1) is False
