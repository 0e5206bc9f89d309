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


PHASE_NOTICE_S = 2.0  # a step with nothing else to show gets a spinner once it has taken this long


class _Phase:
    """What :func:`phase` yields: ``shown`` is set once the spinner is on the screen."""

    def __init__(self) -> None:
        import threading

        self.shown = threading.Event()


@contextlib.contextmanager
def phase(description: str, enabled: bool | None = None, after: float = PHASE_NOTICE_S,
          console=None) -> Iterator[_Phase]:
    """A spinner with the elapsed time on stderr for one long step without steps to count (a max-margin
    solve of wide data takes minutes): drawn only if the step is still running ``after`` seconds in, so
    quick steps print nothing; ``enabled`` defaults to :func:`wanted` (a terminal is watching)."""
    handle = _Phase()
    if not (wanted() if enabled is None else enabled):
        yield handle
        return
    import threading

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn(description), TimeElapsedColumn(),
                   console=console or Console(stderr=True), transient=True)
    lock, state = threading.Lock(), {"done": False}

    def show() -> None:
        with lock:
            if not state["done"]:
                bar.start()
                bar.add_task(description, total=None)
                handle.shown.set()

    timer = threading.Timer(after, show)
    timer.daemon = True
    timer.start()
    try:
        yield handle
    finally:
        with lock:
            state["done"] = True
            timer.cancel()
            if handle.shown.is_set():
                bar.stop()
