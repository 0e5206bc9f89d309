"""A time budget for one symbolic question: its answer, its own exception, or :class:`OutOfTime`.

Setting: sympy's ``limit``, ``solveset`` and ``simplify`` have no time limit of their own and some ordinary
schedules (``|sin t|/(t+2) + 1/(t+2)^2``) keep them busy for minutes. A question asked through
:func:`answer_within` runs in a forked copy of this process; the parent waits at most ``seconds`` for the
pickled answer and then kills the copy (SIGKILL), so nothing it was doing -- a pure-Python loop or one long
big-integer operation alike -- outlives the budget, and no state of the parent is touched by a half-done
computation. The caller turns :class:`OutOfTime` into "undecided, because ... did not answer within N s".

The budget is the copy's own CPU time (read from ``/proc/PID/stat`` where the system has it), not the wall clock:
an answer must not depend on how busy the machine is, or the same schedule would be decided on an idle machine
and "undecided" on a loaded one. A wall-clock cap of :data:`WALL_FACTOR` times the budget (at least
:data:`WALL_FLOOR` s) still ends a copy that waits instead of computing. Without ``/proc`` the budget is wall time.

Where ``os.fork`` does not exist (Windows) the question runs in this process without a limit.

Guarantee: the CPU time the question is given is at most ``seconds`` (plus one polling interval, 50 ms), its
wall time at most the cap; an answer that comes back is the question's own answer, unchanged.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from typing import Any, Callable

QUESTION_SECONDS = 4.0  # default budget of one question (several are asked per schedule; the CLI answers in < 20 s)
WALL_FACTOR = 20.0  # wall-clock cap of a question, in budgets: a 2-core machine at load 20 still answers
WALL_FLOOR = 30.0
POLL_SECONDS = 0.05
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def spent() -> float:
    """CPU seconds used so far by this process and by the questions it has finished (reaped copies count in
    ``os.times``): the clock of a deadline shared by several questions, for the same reason as the budget's."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) process ``pid`` has used so far, from ``/proc``; None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime and stime: fields 14 and 15 of proc(5)


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
    by_cpu = cpu_seconds(pid) is not None
    start = time.monotonic()
    cap = max(WALL_FACTOR * seconds, WALL_FLOOR) if by_cpu else seconds
    finished = False
    try:
        while True:
            waited = time.monotonic() - start
            used = cpu_seconds(pid) if by_cpu else waited
            if waited >= cap or (used is not None and used >= seconds):
                break
            ready, _, _ = select.select([read_end], [], [], min(POLL_SECONDS if by_cpu else seconds - waited,
                                                                cap - waited))
            if not ready:
                continue
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
