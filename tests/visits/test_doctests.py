"""The runnable examples in the veil.visits docstrings."""

import doctest
import importlib

import pytest

MODULES = ["veil.visits._kernels", "veil.visits.hide", "veil.visits.resemble",
           "veil.visits.taxonomy", "veil.visits.batch"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0, f"{name} has no examples"
    assert res.failed == 0
