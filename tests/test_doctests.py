"""The examples in the mathematical modules' docstrings are tests: each asserts a value (a partial sum against
its closed form, a rate against docs/theory.md section 4, a norm against its definition)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ("rates.symbolic.schedules", "rates.symbolic.asymptotics", "rates.norms", "rates.symbolic.theorems.base",
           "rates.symbolic.theorems.nsd",
           "rates.symbolic.papers", "rates.errors", "rates.schedule", "rates.symbolic.growth",
           "rates.symbolic.theorems.general", "rates.symbolic.theorems.descent_start", "rates.studies.horizon")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0 and result.attempted > 0


def test_at_least_ten_doctests():
    finder = doctest.DocTestFinder()
    tests = [test for name in MODULES for test in finder.find(importlib.import_module(name)) if test.examples]
    assert len(tests) >= 10, [test.name for test in tests]
