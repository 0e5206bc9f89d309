"""File output that a failed or refused command cannot corrupt.

Two guarantees (docs/design.md, "Exit codes"):

* :func:`check_output_path` validates an output path *before* any work starts: its directory must exist
  (only directories the user named are ever created), must accept a new file, and an existing target must
  be a regular file (a device, FIFO or socket is never replaced). The CLI applies it to every output option
  of every command (``cli/app.py``), so a new command inherits it.
* :func:`atomic_path` writes to a temporary file next to the target and renames it into place only when the
  writer succeeded, so a half-written file never appears under the user's name; it too refuses to rename
  over anything that is not a regular file (``os.replace`` would silently turn ``/dev/full`` into a file).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterator

from rates.errors import InputError

OUTPUT = "out"  # a library caller that does not say which option a path came from: every command names it --out


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _resolved(path: str | os.PathLike) -> Path:
    """The path a write lands on: a symlink's target (so the link survives), otherwise the path itself."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def _refuse_special(target: Path, option: str) -> None:
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as err:
        raise InputError(option, f"cannot use {str(target)!r}: {err.strerror}") from None
    if not stat.S_ISREG(mode):
        raise InputError(option, f"{str(target)!r} is {_kind(mode)}, not a regular file; refusing to replace it")


def _probe_directory(directory: Path, option: str, what: str) -> None:
    """Create and remove a file in ``directory``: the only reliable test of writability (root, /proc, NFS)."""
    if not directory.exists():
        raise InputError(option, f"directory {str(directory)!r} does not exist (only the directory you name "
                                 f"is created; create its parent first)" if what == "directory" else
                         f"directory {str(directory)!r} does not exist; create it first")
    if not directory.is_dir():
        raise InputError(option, f"{str(directory)!r} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".rates-probe.", dir=directory)
    except OSError as err:
        raise InputError(option, f"cannot write in {str(directory)!r}: {err.strerror}") from None
    os.close(fd)
    os.unlink(probe)


def refuse_directory_spelling(path: str | os.PathLike, option: str = OUTPUT) -> None:
    """Refuse a file path spelled as a directory (``x/``): ``Path("x/")`` drops the separator, so the file
    ``x`` would be written where the user named a directory. A command-line option typed as a path must
    call this on the raw string, before the conversion to :class:`~pathlib.Path`."""
    separators = tuple(sep for sep in (os.sep, os.altsep) if sep)
    text = os.fspath(path)
    if isinstance(text, str) and text.endswith(separators):
        raise InputError(option, f"{text!r} ends in a separator, so it names a directory; give a file name "
                                 f"(such as {text.rstrip(''.join(separators)) or '.'}{os.sep}out.json)")


def check_output_path(path: str | os.PathLike, option: str = OUTPUT, directory: bool = False) -> Path:
    """Refuse, before any work, an output path the command could not write (see the module docstring).

    ``directory=True``: ``path`` names an output directory; it may exist (then it must be a directory that
    accepts files) or not (then its parent must exist and accept it; the command creates it). Otherwise
    ``path`` names a file: its directory must exist and accept files, an existing target must be a
    regular file (a symlink is followed; its target is what gets replaced), and it may not end in a separator
    (``x/`` names a directory, never the file ``x``).
    """
    p = Path(path)
    if str(path) == "":
        raise InputError(option, "needs a path, got an empty string")
    if directory:
        if p.exists():
            if not p.is_dir():
                raise InputError(option, f"must be a directory (it is created if missing), got the file {str(p)!r}")
            _probe_directory(p, option, "directory")
        else:
            _probe_directory(p.parent if str(p.parent) else Path("."), option, "directory")
        return p
    refuse_directory_spelling(path, option)
    target = _resolved(p)
    if target.is_dir():
        raise InputError(option, f"{str(p)!r} is a directory; give a file name")
    _refuse_special(target, option)
    _probe_directory(target.parent if str(target.parent) else Path("."), option, "file")
    return p


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, option: str = OUTPUT) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it into place only if the block succeeds.

    Writers (json, matplotlib, LaTeX) write to the yielded path; on any exception the temporary file is
    removed and ``path`` is untouched. Missing parent directories are created: by the time a library writes,
    the CLI has checked the user's path (:func:`check_output_path`), so these are the tool's own sub-folders
    (``figures/``, ``trajectories/``) inside a directory the user named.
    """
    target = _resolved(path)
    _refuse_special(target, option)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix or ".tmp", dir=target.parent)
    except OSError as err:
        raise InputError(option, f"cannot write {str(path)!r}: {err.strerror}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        # mkstemp creates 0600 files; give the output the permissions a plain open() would (umask applied).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        _refuse_special(target, option)  # it may have appeared while the block ran
        os.replace(tmp, target)
    except OSError as err:
        raise InputError(option, f"cannot write {str(path)!r}: {err.strerror}") from None
    finally:
        if tmp.exists():
            tmp.unlink()


def write_text_atomic(path: str | os.PathLike, text: str, option: str = OUTPUT) -> Path:
    """Write ``text`` to ``path`` atomically and return the path."""
    with atomic_path(path, option) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def strict_json(value):
    """``value`` with every non-finite float replaced by ``None`` (JSON's null): ``json.dumps`` would write
    ``NaN`` / ``-Infinity``, which no JSON parser but Python's reads."""
    import math

    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value
