"""The docstring examples of veil.geo.temporal run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["grid", "markov", "hmm", "knorm", "metrics", "release", "batch"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(f"veil.geo.temporal.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0 and res.attempted > 0
