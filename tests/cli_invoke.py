"""Run the ``rates`` command line in-process, as the CLI tests do (a module of its own so they share one copy)."""

from __future__ import annotations

import contextlib
import io

import pytest

from cli.app import main


def invoke(argv: list[str]) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``rates argv``; a normal return counts as exit code 0."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_info:
        main(argv)
    code = exit_info.value.code
    return (0 if code is None else code), out.getvalue(), err.getvalue()
