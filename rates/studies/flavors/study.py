"""``rates report flavors``: train every configuration, then write the figures, the claims table and the histories.
"""

from __future__ import annotations

import json
from pathlib import Path

from rates.io import write_text_atomic
from rates.numeric.homogeneous.train import History, pick_device
from rates.studies import StudyOptions
from rates.studies.figures import DPI, QUICK_DPI
from rates.studies.flavors.figures import figures
from rates.studies.flavors.protocols import DEFAULT_SEEDS
from rates.studies.flavors.rows import claims_table
from rates.studies.flavors.runs import expected_seconds, experiments, run_experiment


def run_flavors_study(out_dir: Path, options: StudyOptions) -> list[Path]:
    """Train every configuration of :func:`experiments`, write figures, the claims table and histories."""
    import sys
    import time

    out_dir = Path(out_dir)
    seeds = list(range(options.seeds or DEFAULT_SEEDS))
    device = pick_device(options.device)
    histories: dict[str, History] = {}
    plan = experiments(options.quick)
    if options.progress:
        seed_steps = len(seeds) * sum(e.steps for e in plan)
        probe_started = time.perf_counter()
        expected = sum(expected_seconds(exp, seeds, device) for exp in plan)
        print(f"rates report flavors: {len(plan)} configurations x {len(seeds)} seeds, {seed_steps:.3g} seed-steps; "
              f"expected ~{expected / 60:.1f} min (probed in {time.perf_counter() - probe_started:.0f} s)",
              file=sys.stderr, flush=True)
    for exp in plan:
        start = time.perf_counter()
        histories[exp.key] = run_experiment(exp, seeds, device)
        if options.progress:
            print(f"flavors: [{len(histories)}/{len(plan)}] {exp.key} ({len(seeds)} seeds, {exp.steps} steps) "
                  f"{time.perf_counter() - start:.1f}s",
                  file=sys.stderr)
    table = claims_table(histories, seeds, device, quick=options.quick)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = figures(histories, out_dir, len(seeds), QUICK_DPI if options.quick else DPI) if options.figures else []
    written += table.write(out_dir)
    written.append(write_text_atomic(out_dir / "table.md", table.table().to_markdown()))
    record = {key: h.to_dict() for key, h in histories.items()}
    written.append(write_text_atomic(out_dir / "histories.json", json.dumps(record) + "\n"))
    return written
