"""The compiled kernels' cache is keyed by the source's content: a second environment (the same file at another
path, another modification time) loads what the first one compiled; a changed file compiles afresh."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = textwrap.dedent("""
    from numba import njit


    @njit(cache=True)
    def triple(x):
        return 3 * x
""")
PROBE = textwrap.dedent("""
    import os
    import sys

    sys.path.insert(0, sys.argv[1])
    from rates.numeric.fused.compiled_cache import install

    install(os.path.join(sys.argv[1], "probe"))
    from probe.kernels import triple

    assert triple(2) == 6
    print(sum(triple.stats.cache_hits.values()), sum(triple.stats.cache_misses.values()))
""")


def _environment(base: Path, source: str, mtime: float) -> Path:
    package = base / "probe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "kernels.py").write_text(source)
    os.utime(package / "kernels.py", (mtime, mtime))
    return base


def _hits_and_misses(site: Path, cache: Path) -> tuple[int, int]:
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    env.update(RATES_NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", PROBE, str(site)], env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    hits, misses = out.stdout.split()
    return int(hits), int(misses)


def test_a_second_environment_loads_the_first_ones_kernels(tmp_path):
    cache = tmp_path / "numba-cache"
    first = _environment(tmp_path / "venv-a", SOURCE, 1_000_000_000)
    second = _environment(tmp_path / "venv-b", SOURCE, 1_500_000_000)  # same bytes, other path and time
    assert _hits_and_misses(first, cache) == (0, 1)  # compiled, and saved
    assert _hits_and_misses(second, cache) == (1, 0)  # loaded: not compiled again
    assert not list((first / "probe").rglob("*.nbi"))  # nothing next to the source: the user-wide folder holds it
    changed = _environment(tmp_path / "venv-c", SOURCE.replace("3 * x", "3 * x + 0"), 1_000_000_000)
    assert _hits_and_misses(changed, cache) == (0, 1)  # other bytes: compiled afresh, never a stale binary


def test_the_engine_kernels_use_the_user_wide_folder():
    from rates.numeric.fused import compiled_cache, kernels

    if os.environ.get("NUMBA_CACHE_DIR"):  # the user's own choice is kept
        return
    assert kernels.advance._cache._cache_path.startswith(str(compiled_cache.root()))
