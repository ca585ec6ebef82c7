"""The Examples in the veil.tables docstrings run and give the documented output."""

import doctest
import importlib

import pytest

MODULES = ["constraints", "reasoning", "validate", "anonymity", "baselines", "diverse", "data",
           "textio", "exact", "hierarchy", "models", "metrics", "generalize", "risk"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(f"veil.tables.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
