"""The runnable examples in veil.geo's docstrings (excluding the temporal subpackage)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["veil.geo.geometry", "veil.geo.lprivacy", "veil.geo.geoind", "veil.geo.lp",
           "veil.geo.metrics"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    from veil.random import make_rng
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS,
                             extraglobs={"make_rng": make_rng, "np": __import__("numpy")})
    assert result.attempted > 0
    assert result.failed == 0
