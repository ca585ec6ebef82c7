"""Every example in the docstrings of veil.histograms runs (doctest)."""

import doctest
import importlib
import pkgutil

import pytest

import veil.histograms as pkg

MODULES = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0, f"{res.failed} of {res.attempted} examples failed in {name}"
