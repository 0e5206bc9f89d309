"""A time budget for one symbolic question: its answer, its own exception, or :class:`OutOfTime`.

Setting: sympy's ``limit``, ``solveset`` and ``simplify`` have no time limit of their own and some ordinary
schedules (``|sin t|/(t+2) + 1/(t+2)^2``) keep them busy for minutes. A question asked through
:func:`answer_within` runs in a forked copy of this process; the parent waits at most ``seconds`` for the
pickled answer and then kills the copy (SIGKILL), so nothing it was doing -- a pure-Python loop or one long
big-integer operation alike -- outlives the budget, and no state of the parent is touched by a half-done
computation. The caller turns :class:`OutOfTime` into "undecided, because ... did not answer within N s".

Where ``os.fork`` does not exist (Windows) the question runs in this process without a limit.

Guarantee: the wall time of :func:`answer_within` is at most ``seconds`` plus the fork and the transfer of the
answer (milliseconds); an answer that comes back is the question's own answer, unchanged.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from typing import Any, Callable

QUESTION_SECONDS = 4.0  # default budget of one question (several are asked per schedule; the CLI answers in < 20 s)


class OutOfTime(Exception):
    """The question did not answer within its budget; ``seconds`` is the budget."""

    def __init__(self, what: str, seconds: float):
        super().__init__(f"{what} did not answer within {seconds:g} s")
        self.what = what
        self.seconds = seconds


def answer_within(seconds: float, question: Callable[..., Any], *args, what: str = "sympy", **kwargs) -> Any:
    """``question(*args, **kwargs)`` if it answers within ``seconds``; its exception is raised here as it was
    raised there; :class:`OutOfTime` otherwise (module docstring)."""
    if not hasattr(os, "fork") or seconds is None:
        return question(*args, **kwargs)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: answer, send, leave without running the parent's exit handlers
        os.close(read_end)
        status = 0
        try:
            try:
                payload = pickle.dumps((True, question(*args, **kwargs)))
            except BaseException as error:  # noqa: BLE001 - every exception goes back to the caller
                try:
                    payload = pickle.dumps((False, error))
                except Exception:  # noqa: BLE001 - an exception that does not pickle goes back as its text
                    payload = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}")))
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
        except BaseException:  # noqa: BLE001
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    chunks = []
    deadline = time.monotonic() + seconds
    finished = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if not ready:
                break
            chunk = os.read(read_end, 1 << 20)
            if not chunk:
                finished = True
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        if not finished:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - it ended just now
                pass
        os.waitpid(pid, 0)
    if not finished or not chunks:
        if finished:
            raise RuntimeError(f"{what}: the worker ended without an answer")
        raise OutOfTime(what, seconds)
    ok, value = pickle.loads(b"".join(chunks))
    if ok:
        return value
    raise value
