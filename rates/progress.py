"""Progress bars with an ETA on stderr (rich), shown only where a person is watching.

A bar appears when the command was not given ``--no-progress`` and stderr is a terminal: piped or
redirected output (CI logs, ``2> log``) stays free of control characters.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator


def wanted(flag: bool = True) -> bool:
    """Whether to draw a bar: the user did not say ``--no-progress`` and stderr is a terminal."""
    return bool(flag) and sys.stderr.isatty()


@contextlib.contextmanager
def progress_bar(total: int, label: str, enabled: bool) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; a rich bar with elapsed time and ETA when ``enabled``, a no-op otherwise."""
    if not enabled or total <= 0:
        yield lambda count=1: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
               TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda count=1: bar.advance(task, count)
