"""Errors raised by the library.

Library code raises a :class:`RatesError` subclass carrying the offending value; the CLI turns
:class:`InputError` into a one-line message and exit code 2 (DESIGN.md, "Errors at the edge").
"""

from __future__ import annotations


class RatesError(Exception):
    """Base class of every error the library raises on purpose."""


class InputError(RatesError):
    """A user-supplied value is outside what the tool accepts.

    ``option`` names the CLI option (``--a``) or the library argument it maps to, so that the message
    can say which knob to turn; ``message`` states the allowed range and the value that was given.
    """

    def __init__(self, option: str, message: str):
        self.option = option
        self.message = message
        super().__init__(f"{option}: {message}")


class NotSeparableError(InputError):
    """The data admit no classifier with positive margin (THEORY.md section 1, Ass. 3.1)."""


class SolverError(RatesError):
    """A numerical solver failed or could not certify its answer to the requested accuracy."""
