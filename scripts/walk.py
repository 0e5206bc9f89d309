"""Follow one piece of data through the package: the modules ("rooms") that judging a configuration's runs enters.

``python scripts/walk.py TRAJECTORY.json ...`` groups the runs of the files as ``rates fit`` does and traces
:func:`rates.studies.fitting.fit_group` on each group with ``sys.setprofile``. The trace follows the innermost
frame of the ``rates`` package: a *stay* is a maximal stretch of consecutive events in one module, a *climb* a
step from a module to one earlier in the pipeline (symbolic -> numeric -> judge -> output -> studies -> sweep;
the root modules such as ``rates.norms`` count as earliest), a *return* a step into a module already left once.
Imports are not the walk: every module of the package is imported before the trace starts, and the methods
``dataclasses`` generates (``__eq__``, ``__hash__``) are left out. It also counts the parsers that must not run
while judging, because the configuration was parsed once where it entered: ``Schedule.parse``,
``rates.numeric.data.parse_data`` and ``resolve_algorithm``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

STAGES = ("rates.symbolic", "rates.numeric", "rates.judge", "rates.output", "rates.studies", "rates.sweep")
PARSERS = {("rates.schedule", "parse"): "Schedule.parse", ("rates.numeric.data", "parse_data"): "parse_data",
           ("rates.numeric.algorithms", "resolve_algorithm"): "resolve_algorithm"}


def stage(module: str) -> int:
    """The module's place in the pipeline (0: a root module of the package)."""
    return next((i + 1 for i, name in enumerate(STAGES) if module == name or module.startswith(name + ".")), 0)


@dataclass
class Walk:
    stays: list[str] = field(default_factory=list)
    parsed: Counter = field(default_factory=Counter)

    @property
    def rooms(self) -> set[str]:
        return set(self.stays)

    @property
    def climbs(self) -> int:
        return sum(stage(b) < stage(a) for a, b in zip(self.stays, self.stays[1:]))

    @property
    def returns(self) -> int:
        left: set[str] = set()
        count = 0
        for a, b in zip(self.stays, self.stays[1:]):
            left.add(a)
            count += b in left
        return count

    def text(self) -> str:
        parsed = ", ".join(f"{name} {self.parsed[name]}" for name in PARSERS.values())
        return (f"rooms {len(self.rooms)}, stays {len(self.stays)}, climbs {self.climbs}, returns {self.returns}; "
                f"parsed while judging: {parsed}")


def import_package() -> None:
    import rates

    for info in pkgutil.walk_packages(rates.__path__, "rates."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def _rates_frame(frame: Any) -> Any:
    while frame is not None and (not str(frame.f_globals.get("__name__", "")).startswith("rates")
                                 or frame.f_code.co_name == "<module>" or frame.f_code.co_filename == "<string>"):
        frame = frame.f_back
    return frame


def walk(call: Callable[[], Any]) -> Walk:
    """Trace ``call()`` (after :func:`import_package`): the stays and the parser calls."""
    import_package()
    out = Walk()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        if event == "call":
            key = (frame.f_globals.get("__name__", ""), frame.f_code.co_name)
            if key in PARSERS:
                out.parsed[PARSERS[key]] += 1
        inner = _rates_frame(frame if event == "call" else frame.f_back)
        if inner is not None:
            module = inner.f_globals["__name__"]
            if not out.stays or out.stays[-1] != module:
                out.stays.append(module)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return out


def walk_fit_groups(runs: Sequence[Any]) -> Walk:
    from rates.studies.fitting import fit_group, group_runs

    groups = group_runs(runs)
    return walk(lambda: [fit_group(group) for group in groups])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="trajectory files (rates run --out)")
    args = parser.parse_args(argv)
    from rates.numeric.trajectory import load

    runs = [run for path in args.files for run in load(path).runs]
    result = walk_fit_groups(runs)
    print(result.text())
    print("rooms:", ", ".join(sorted(result.rooms)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
