"""The repository stands on its own: no tracked file cites a path outside it, and rates/ has no import cycle."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The rewrite script names what it rewrites; it is the one file allowed to.
ALLOWED = {"scripts/rewrite_citations.py"}
# Assembled from pieces so that this file does not match itself.
OUTSIDE = {
    "a sibling folder": re.compile(re.escape("../" + "shared")),
    "the old theory file": re.compile("THEORY" + r"\.md"),
    "the old design file": re.compile("DESIGN" + r"\.md"),
    "a paper text file": re.compile(r"\b\d{3}_[0-9a-f]{16}(\.txt)?\b"),
    "an absolute work path": re.compile("/" + "work/"),
}


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [name for name in out.decode().split("\0") if name]


def test_no_tracked_file_points_outside_the_repository():
    offenders = []
    for name in tracked_files():
        if name in ALLOWED or not (ROOT / name).is_file():
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for what, pattern in OUTSIDE.items():
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                offenders.append(f"{name}:{line}: {what} ({match.group()})")
    assert not offenders, "run scripts/rewrite_citations.py:\n" + "\n".join(offenders[:40])


def test_rewrite_script_is_idempotent_and_has_nothing_left_to_do():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "rewrite_citations.py"), "--check"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_rewrite_rules_on_known_citation_shapes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("rewrite_citations", ROOT / "scripts" / "rewrite_citations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stem = "003_" + "35ca27fd72435096"  # split, or this file would cite the text file it tests the rewrite of
    theory = "THEORY" + ".md"
    cases = {
        f"SIGNADAM ``{stem}.txt`` Thm 5.3": "SIGNADAM Thm 5.3",
        f"(SIGNADAM ``{stem}.txt``) Cor. 5.4": "(SIGNADAM) Cor. 5.4",
        f"SIGNADAM (``{stem}.txt``) Cor. 5.4": "SIGNADAM Cor. 5.4",
        f'"{stem}.txt (SIGNADAM)"': '"SIGNADAM"',
        f"eq. 3 ({stem}.txt)": "eq. 3 (arXiv:2502.04664)",
        f'"{stem}.txt Thm 5.3" in out': '"SIGNADAM Thm 5.3" in out',
        f"({theory} section 4)": "(docs/theory.md section 4)",
        f"SIGNADAM\n    ``{stem}.txt`` Lemma B.4": "SIGNADAM\n    Lemma B.4",
    }
    for before, after in cases.items():
        once = module.rewrite_text(before, "rates/x.py")
        assert once == after and module.rewrite_text(once, "rates/x.py") == once
    assert module.rewrite_text('raise InputError("--adam-beta1", "m")', "rates/x.py") == \
        'raise InputError("adam_beta1", "m")'
    assert module.rewrite_text('raise InputError("--adam-beta1", "m")', "cli/x.py") == \
        'raise InputError("--adam-beta1", "m")'  # the CLI keeps its flags


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: str = "rates") -> dict[str, set[str]]:
    """Every import of a module of ``package`` by one of its modules, at any depth (function bodies and
    ``TYPE_CHECKING`` blocks included: a lazy import hides a cycle, it does not remove it)."""
    package_root = package
    modules = {_module_name(p): p for p in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
                # importing rates.symbolic.theorems.registry first runs rates/symbolic/theorems/__init__.py: from
                # outside that
                # package, that is an import of the package too (from inside, the package is already loading)
                package = target.rpartition(".")[0]
                while package and package != package_root and not name.startswith(package + "."):
                    if package in modules and package != name:
                        graph[name].add(package)
                    package = package.rpartition(".")[0]
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in colour and (found := visit(nxt)):
                return found
        colour[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in colour and (found := visit(node)):
            return found
    return None


def test_import_graph_sees_lazy_imports_and_implicit_package_imports(tmp_path, monkeypatch):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("def f():\n    from pkg.sub.b import g\n")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("from pkg import a\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("from .c import h\n")
    (tmp_path / "pkg" / "sub" / "c.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    graph = import_graph("pkg")
    assert graph["pkg.a"] == {"pkg.sub.b", "pkg.sub"} and graph["pkg.sub.b"] == {"pkg.sub.c"}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub", "pkg.a"]


def test_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_rates_has_no_import_cycle():
    graph = import_graph("rates")
    # the graph sees them
    data, margins = "rates.numeric.data", "rates.numeric.margins"
    assert data in graph[margins] or margins in graph[data]
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def stage_of(module: str) -> int:
    """The pipeline stage of a module of ``rates`` (``rates.STAGES``); -1 for the foundation modules."""
    from rates import STAGES

    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in STAGES:
        return -1
    return STAGES.index(parts[1])


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports that go against the pipeline: from a stage to a later one, or from the foundation to a stage."""
    return sorted(f"{source} -> {target}" for source, targets in graph.items() for target in targets
                  if target != "rates" and stage_of(target) > stage_of(source))


def test_every_import_goes_down_the_pipeline():
    graph = import_graph("rates")
    assert "rates.numeric.engine" in graph["rates.studies.default_study"]  # the graph sees the stages' modules
    assert layer_violations(graph) == []


def test_layer_check_catches_an_import_up_the_pipeline():
    planted = {"rates.numeric.engine": {"rates.judge.compare"}, "rates.norms": {"rates.numeric.optim"},
               "rates.judge.compare": {"rates.numeric.trajectory", "rates.errors"}}
    assert layer_violations(planted) == ["rates.norms -> rates.numeric.optim",
                                         "rates.numeric.engine -> rates.judge.compare"]


def test_the_top_level_holds_at_most_ten_modules_besides_the_stages():
    from rates import STAGES

    modules = sorted(p.name for p in (ROOT / "rates").glob("*.py"))
    packages = sorted(p.name for p in (ROOT / "rates").iterdir() if (p / "__init__.py").exists())
    assert len(modules) <= 10, modules
    assert packages == sorted(STAGES)
