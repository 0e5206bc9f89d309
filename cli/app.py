"""Entry point of the ``rates`` console script.

Every command module in :data:`COMMAND_MODULES` exposes ``register(app)``. Errors are reported here, once,
as one line on stderr with the exit code of docs/design.md ("Exit codes"): 2 for bad input (a click usage error
or a library :class:`~rates.errors.InputError`, naming the option), 3 for an internal error (one line plus
the file holding the full traceback; never 1, which means a verdict was ``violated``), 130 when interrupted,
also while the modules are still being imported.

Checks every command inherits (so a command added later gets them too): each integer option fits in 64 bits
and each real option is finite (:func:`check_representable`); each output option (``--out``,
``--plot``, ``--save-dir``, ...; see :func:`_output_options`) is validated by
:func:`rates.io.check_output_path` before the command does any work; and the lists in its help texts
(``{ALGORITHMS}``, ``{STUDIES}``, ...) are read from their registries when the help is shown
(:mod:`cli.help_lists`).
"""

from __future__ import annotations

import sys


def _interrupted(at_once: bool = False) -> None:
    """Exit 130 after Ctrl-C. ``at_once`` (the process's own command line, not a caller's ``main(argv)``): end
    the process now, skipping the interpreter's teardown (torch's alone takes 2-4 s on a busy machine), so that
    a stopped command is gone within a second or two. Nothing is lost: outputs are written atomically and the
    commands' own clean-up (a sweep's cluster, temporary files) has run as the interrupt unwound them."""
    print("rates: interrupted", file=sys.stderr)
    if at_once:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(130)
    sys.exit(130)


try:  # Ctrl-C while typer/click load must not print a 36-line traceback either
    import functools
    import importlib
    import importlib.util
    import inspect
    import os
    import tempfile
    import time
    import traceback
    import warnings
    from pathlib import Path
    from typing import Optional

    import click
    import typer

    from rates.errors import InputError, RatesError
except KeyboardInterrupt:  # pragma: no cover - timing-dependent
    _interrupted()

try:  # typer >= 0.20 vendors its own click; accept the exceptions of both
    from typer._click import exceptions as _typer_click_exceptions
except ImportError:  # pragma: no cover - older typer uses click itself
    _typer_click_exceptions = click.exceptions


def _classes(name: str) -> tuple[type, ...]:
    return tuple({getattr(mod, name) for mod in (click.exceptions, _typer_click_exceptions) if hasattr(mod, name)})


_USAGE_ERRORS = _classes("UsageError")
_ABORTS = _classes("Abort")
_NO_ARGS = _classes("NoArgsIsHelpError")

COMMAND_MODULES = ("predict", "table", "run", "fit", "report", "check", "homogeneous", "sweep", "tightness")

# Output options of any command: a file unless the option is a directory option or the command says so.
OUTPUT_FILE_OPTIONS = ("--out", "--output", "--plot", "--save")
OUTPUT_DIRECTORY_OPTIONS = ("--save-dir", "--out-dir", "--output-dir")

app = typer.Typer(
    name="rates",
    help="Predict, run, fit and check implicit-bias rates of steepest-descent optimisers.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(plugin: Optional[list[Path]] = typer.Option(
        None, "--plugin", metavar="PATH.py", help="load a plug-in file (PATH.py) that registers optimisers, "
        "theorem families or papers (rates.plugins); repeatable, and accepted after the command name too. Installed "
        "plug-ins "
        "(entry-point group rates.plugins) are always loaded"),
        family: Optional[list[str]] = typer.Option(
        None, "--family", metavar="NAME", help="let the plug-in family NAME answer for the built-in algorithms it "
        "covers, which otherwise only the built-in families answer; repeatable, and accepted after the command "
        "name too")) -> None:
    """Predict, run, fit and check implicit-bias rates of steepest-descent optimisers."""
    # before the command parses its options, so that their names are known; the loader is light (no numpy):
    # the plug-ins themselves import rates.plugins, the public API
    from rates.numeric.plugin_loading import choose_families, load_file, load_installed

    load_installed()
    for path in plugin or ():
        load_file(path)
    choose_families(())  # a choice lasts one command (tests run many in one process)
    if family:
        from rates.symbolic.theorems.coverage import COVERS, PLUGIN_COVERS

        for name in family:
            key = name.strip().lower()
            if key not in PLUGIN_COVERS:
                what = ("a built-in family, which answers by default" if key in COVERS else
                        "no family of a loaded plug-in")
                raise InputError("--family", f"{name!r} is {what}; plug-in families: "
                                             f"{', '.join(PLUGIN_COVERS) or 'none loaded'}")
        choose_families(family)


ROOT_OPTIONS = ("--plugin", "--family")


def hoist_plugin_options(argv: list[str]) -> list[str]:
    """Move every ``--plugin PATH`` and ``--family NAME`` (or ``--plugin=PATH``) to the front, so that the options
    are accepted after the command name as well (``rates sweep --plugin my.py grid.toml``) and are read by the
    root callback, which runs before the command parses its own options. Arguments after ``--`` are left alone."""
    hoisted, rest, i = [], [], 0
    while i < len(argv):
        item = argv[i]
        if item == "--":
            rest += argv[i:]
            break
        if item in ROOT_OPTIONS and i + 1 < len(argv):
            hoisted += argv[i:i + 2]
            i += 2
            continue
        if item.startswith(tuple(f"{option}=" for option in ROOT_OPTIONS)):
            hoisted.append(item)
        else:
            rest.append(item)
        i += 1
    return hoisted + rest


def _output_options(callback) -> dict[str, tuple[str, bool]]:
    """``{python name: (option, is_directory)}`` for every output option of a command callback.

    An option is a directory when it is one of :data:`OUTPUT_DIRECTORY_OPTIONS`, when the command lists it
    in its ``output_directories`` attribute, or when its help text calls it a directory.
    """
    declared = set(getattr(callback, "output_directories", ()))
    found = {}
    for name, param in inspect.signature(callback).parameters.items():
        decls = [d for d in (getattr(param.default, "param_decls", None) or ()) if isinstance(d, str)]
        option = next((d for d in decls if d in OUTPUT_FILE_OPTIONS + OUTPUT_DIRECTORY_OPTIONS), None)
        if option is None:
            continue
        help_text = (getattr(param.default, "help", None) or "").lower()
        is_dir = option in OUTPUT_DIRECTORY_OPTIONS or option in declared or "directory" in help_text
        found[name] = (option, is_dir)
    return found


# the widest integer the code represents: numpy's and torch's int64 (seeds, step counters, checkpoint times)
INT64_MAX = 2**63 - 1


def _numeric_options(callback) -> dict[str, tuple[str, type]]:
    """``{python name: (option, int or float)}`` for every integer or real option of a command callback."""
    import typing

    hints = typing.get_type_hints(callback)
    found = {}
    for name, param in inspect.signature(callback).parameters.items():
        kinds = [kind for kind in (typing.get_args(hints.get(name)) or (hints.get(name),)) if kind is not type(None)]
        decls = [d for d in (getattr(param.default, "param_decls", None) or ()) if isinstance(d, str)]
        if len(kinds) == 1 and kinds[0] in (int, float) and decls:
            found[name] = (next((d for d in decls if d.startswith("--")), decls[0]), kinds[0])
    return found


def check_representable(value, option: str, kind: type) -> None:
    """Refuse (exit 2, one line naming ``option``) an integer outside int64 or a real that is not finite: what
    the option's own check cannot say because numpy or torch would fail on it first (or loop for ever)."""
    import math

    if kind is int and not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise InputError(option, f"must be an integer from -2^63 to 2^63 - 1 = {INT64_MAX} (64 bits), got {value}")
    if kind is float and not math.isfinite(value):
        raise InputError(option, f"must be a finite number (below 1.8e308 in size), got {value}")


def _checked(callback):
    """Wrap a command so its numbers are representable and its output paths valid before it runs (its
    signature is kept for typer)."""
    from rates.io import check_output_path

    outputs = _output_options(callback)
    numbers = _numeric_options(callback)
    if not outputs and not numbers:
        return callback

    @functools.wraps(callback)
    def command(*args, **kwargs):
        for name, (option, kind) in numbers.items():
            if kwargs.get(name) is not None:
                check_representable(kwargs[name], option, kind)
        for name, (option, is_dir) in outputs.items():
            value = kwargs.get(name)
            for item in (value if isinstance(value, (list, tuple)) else [value]):
                if item is not None:
                    check_output_path(item, option, directory=is_dir)
        return callback(*args, **kwargs)

    return command


def _keep_file_spelling(callback) -> None:
    """Give each file output option typed as a path a parser that sees the string as typed: the conversion
    to :class:`~pathlib.Path` drops a trailing separator, and ``--out x/`` would write the file ``x``
    (:func:`rates.io.refuse_directory_spelling`)."""
    import typing
    from pathlib import Path

    from rates.io import refuse_directory_spelling

    hints = typing.get_type_hints(callback)
    parameters = inspect.signature(callback).parameters
    for name, (option, is_dir) in _output_options(callback).items():
        kinds = typing.get_args(hints.get(name)) or (hints.get(name),)
        info = parameters[name].default
        if is_dir or Path not in kinds or getattr(info, "parser", None) is not None:
            continue

        def parse(value, option=option):
            if isinstance(value, Path):
                return value
            refuse_directory_spelling(value, option)
            return Path(value)

        info.parser = parse


def _register_commands() -> None:
    from typer.core import TyperCommand

    from cli.help_lists import ListedHelpCommand

    for name in COMMAND_MODULES:
        module_name = f"cli.{name}"
        if importlib.util.find_spec(module_name) is None:
            continue
        importlib.import_module(module_name).register(app)
    for info in app.registered_commands:
        _keep_file_spelling(info.callback)
        info.callback = _checked(info.callback)
        if info.cls is None or info.cls is TyperCommand:  # lists in help texts come from their registries
            info.cls = ListedHelpCommand


try:
    _register_commands()
except KeyboardInterrupt:  # pragma: no cover - timing-dependent
    _interrupted()


def _fail(message: str, code: int) -> None:
    # One line: users grep logs and CI output for it; newlines inside click messages are folded.
    print(f"rates: error: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(code)


def _write_traceback() -> str:
    """Save the current exception's traceback where the user can send it; return the file's path."""
    text = f"rates {' '.join(sys.argv[1:])}\n{time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n\n{traceback.format_exc()}"
    try:
        fd, path = tempfile.mkstemp(prefix="rates-traceback-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path
    except OSError:
        return "(could not be written: set TMPDIR to a writable directory)"


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; exit 0 on success, 1 when a check or verdict fails, 2 on bad input, 3 on an internal
    error, 130 when interrupted."""
    # NumPy's floating-point warnings ("overflow encountered in multiply") are not for users: a run that
    # overflows is reported as diverged, in one line, by the code that sees it
    warnings.filterwarnings("ignore", category=RuntimeWarning,
                            message="(overflow|invalid value|divide by zero|underflow) encountered")
    own_command_line = argv is None  # not a caller's main(argv): Ctrl-C may end the process at once
    argv = hoist_plugin_options(list(sys.argv[1:] if own_command_line else argv))
    try:
        code = app(args=argv, standalone_mode=False)
    except _NO_ARGS as err:
        print(err.format_message())
        sys.exit(0)
    except _USAGE_ERRORS as err:
        _fail(err.format_message(), 2)
    except InputError as err:
        _fail(str(err), 2)
    except (_ABORTS + (KeyboardInterrupt,)):
        _interrupted(at_once=own_command_line)
    except RatesError as err:  # a solver that could not certify its answer: not a verdict, so not exit 1
        _fail(str(err), 3)
    except MemoryError:
        _fail("internal error: out of memory (ask for fewer seeds, steps or a smaller data set); "
              f"traceback in {_write_traceback()}", 3)
    except BrokenPipeError:  # `rates table | head`: the reader left; nothing more to say
        sys.stderr.close()
        os._exit(0)
    except Exception as err:  # noqa: BLE001 - the one place every unexpected error is turned into exit 3
        _fail(f"internal error: {type(err).__name__}: {err}; full traceback in {_write_traceback()}", 3)
    if code == 130:  # typer turns a KeyboardInterrupt inside a command into Exit(130), silently
        _interrupted(at_once=own_command_line)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
