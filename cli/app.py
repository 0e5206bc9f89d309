"""Entry point of the ``rates`` console script.

Every command module in :data:`COMMAND_MODULES` exposes ``register(app)``. Errors are reported here, once:
bad input (a click usage error or a library :class:`~rates.errors.InputError`) becomes one line on stderr
naming the option, and exit code 2 (DESIGN.md, "Exit codes").
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click
import typer

from rates.errors import InputError, RatesError

try:  # typer >= 0.20 vendors its own click; accept the exceptions of both
    from typer._click import exceptions as _typer_click_exceptions
except ImportError:  # pragma: no cover - older typer uses click itself
    _typer_click_exceptions = click.exceptions


def _classes(name: str) -> tuple[type, ...]:
    return tuple({getattr(mod, name) for mod in (click.exceptions, _typer_click_exceptions) if hasattr(mod, name)})


_USAGE_ERRORS = _classes("UsageError")
_ABORTS = _classes("Abort")
_NO_ARGS = _classes("NoArgsIsHelpError")

COMMAND_MODULES = ("predict", "table", "run", "fit", "report", "check", "homogeneous", "tightness", "sweep")

app = typer.Typer(
    name="rates",
    help="Predict, run, fit and check implicit-bias rates of steepest-descent optimisers.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root() -> None:
    """Predict, run, fit and check implicit-bias rates of steepest-descent optimisers."""


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        module_name = f"cli.{name}"
        if importlib.util.find_spec(module_name) is None:
            continue
        importlib.import_module(module_name).register(app)


_register_commands()


def _fail(message: str, code: int) -> None:
    # One line: users grep logs and CI output for it; newlines inside click messages are folded.
    print(f"rates: error: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; exit 0 on success, 1 when a check or verdict fails, 2 on bad input."""
    try:
        code = app(args=argv, standalone_mode=False)
    except _NO_ARGS as err:
        print(err.format_message())
        sys.exit(0)
    except _USAGE_ERRORS as err:
        _fail(err.format_message(), 2)
    except InputError as err:
        _fail(str(err), 2)
    except _ABORTS:
        _fail("aborted", 130)
    except RatesError as err:
        _fail(str(err), 1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
