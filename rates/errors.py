"""Errors raised by the library.

Library code raises a :class:`RatesError` subclass carrying the offending value. An :class:`InputError` names
the *parameter* it is about (``norm``, ``a``, ``batch``); the CLI reports it against the command-line flag that
sets that parameter (docs/design.md, "Errors at the edge"), one line, exit code 2.

Parameters map to flags by one convention, ``batch_size`` -> ``--batch-size``; a command whose flag is spelled
otherwise registers the exception with :func:`register_flag` (``register_flag("data_bound", "--B")``).
For code written before this split, a parameter given as a flag (``"--norm"``) is read back as ``norm``.

>>> err = InputError("adam_beta1", "must be in [0, 1), got 1.5")
>>> err.parameter, err.option, str(err)
('adam_beta1', '--adam-beta1', '--adam-beta1: must be in [0, 1), got 1.5')
>>> InputError("--norm", "unknown").parameter, InputError("--B", "must be > 0").option
('norm', '--B')
"""

from __future__ import annotations

FLAGS: dict[str, str] = {}  # parameter -> flag, where the flag is not "--" + parameter with "_" -> "-"


def register_flag(parameter: str, flag: str) -> None:
    """Report errors about ``parameter`` against ``flag`` (the CLI calls this where a flag is spelled otherwise)."""
    FLAGS[parameter] = flag


def flag_for(parameter: str) -> str:
    """The command-line flag of a library parameter; a name that is not a lower-case identifier (a positional
    argument such as ``NAME``, a matrix ``W``) is reported as it is.

    >>> flag_for("n_train"), flag_for("NAME")
    ('--n-train', 'NAME')
    """
    if parameter in FLAGS:
        return FLAGS[parameter]
    if parameter.isidentifier() and parameter == parameter.lower():
        return "--" + parameter.replace("_", "-")
    return parameter


class RatesError(Exception):
    """Base class of every error the library raises on purpose."""


class InputError(RatesError):
    """A user-supplied value is outside what the tool accepts.

    ``parameter`` names the library argument (``a``, ``norm``); ``option`` is the CLI flag it maps to
    (:func:`flag_for`), so that the message can say which knob to turn; ``message`` states the allowed range
    and the value that was given.
    """

    def __init__(self, parameter: str, message: str):
        given_as_flag = parameter.startswith("--")
        self.parameter = parameter[2:].replace("-", "_") if given_as_flag else parameter
        self.message = message
        self._flag = parameter if given_as_flag else None  # a flag given by the CLI itself is kept as spelt
        super().__init__(parameter, message)

    @property
    def option(self) -> str:
        return self._flag or flag_for(self.parameter)

    def __str__(self) -> str:
        return f"{self.option}: {self.message}"


class NotSeparableError(InputError):
    """The data admit no classifier with positive margin (docs/theory.md section 1, Ass. 3.1)."""


class SolverError(RatesError):
    """A numerical solver failed or could not certify its answer to the requested accuracy."""


class PluginError(InputError):
    """A plug-in's own code failed or answered outside its contract (raised, called ``sys.exit``, returned
    ``None`` where a template was due): reported against the plug-in -- its file, or its distribution and entry
    point -- never against an option the user typed. Exit 2, like bad input: the fix is in the plug-in.

    >>> str(PluginError("file /tmp/mine.py", "family 'mine': covers(config) raised RuntimeError: boom"))
    "plug-in file /tmp/mine.py: family 'mine': covers(config) raised RuntimeError: boom"
    """

    def __init__(self, origin: str, message: str):
        super().__init__("plugin", message)
        self.origin = origin

    @property
    def option(self) -> str:
        return f"plug-in {self.origin}"
