"""Named studies for ``rates report STUDY --out DIR``: runs, fits, tables and figures per source paper.

One package per paper (:mod:`~rates.studies.minibatch`, :mod:`~rates.studies.signadam`,
:mod:`~rates.studies.flavors`), each with one module per role: the protocols as data, the runs it needs, its
decision rules (beside their negative controls in tests/), the measures, the rows' text, figures and the study.
The machinery they share sits here once: one configuration judged (:mod:`~rates.studies.fitting`), verdict tables
(:mod:`~rates.studies.verdict_table`), the default study and the run-fit-write path
(:mod:`~rates.studies.default_study`), descent starts and horizons (:mod:`~rates.studies.horizon`), the certificate
hook (:mod:`~rates.studies.certificates`), the runner (:mod:`~rates.studies.runner`, which announces the duration
:mod:`rates.numeric.duration` estimates) and figure style (:mod:`~rates.studies.figures`). May import every stage
before it (symbolic, numeric, judge, output); never :mod:`rates.sweep`.

A study runs its configurations, fits them and writes its artefacts (trajectories, verdict tables in
LaTeX and Markdown, figures) into ``out_dir``. Each entry maps a name to ``"module:function"`` with
signature ``function(out_dir: pathlib.Path, options: StudyOptions) -> list[pathlib.Path]`` (the files
written); the import is lazy so that ``rates --help`` stays fast.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from rates.errors import InputError


@dataclass(frozen=True)
class StudyOptions:
    seeds: Optional[int] = None  # number of seeds of a study without data draws (flavors); None: its default
    data_seeds: Optional[list[int]] = None  # draws of the study's generated data (--data-seeds); None: its default
    shuffle_seeds: Optional[list[int]] = None  # reshuffling streams (--seeds); None: one
    device: str = "auto"
    quick: bool = False  # a reduced size for tests and smoke runs
    progress: bool = True
    figures: bool = True  # False: claims, tables and trajectories only (tests of the claims logic)
    scheduler: Optional[str] = None  # None: the study's default executor; "serial", "local" or a Dask address


STUDIES: dict[str, str] = {
    "default": "rates.studies.default_study:run_default_study",
    "flavors": "rates.studies.flavors:run_flavors_study",
    "minibatch": "rates.studies.minibatch:run_minibatch_study",
    "signadam": "rates.studies.signadam:run_signadam_study",
}


def get_study(name: str) -> Callable[[Path, StudyOptions], list[Path]]:
    if name not in STUDIES:
        raise InputError("STUDY", f"unknown study {name!r}; known: {', '.join(sorted(STUDIES))}")
    module_name, _, function_name = STUDIES[name].partition(":")
    return getattr(importlib.import_module(module_name), function_name)
