"""The runnable examples in veil.maps' docstrings."""

import doctest
import importlib

import pytest

MODULES = ["veil.maps.grid", "veil.maps._blocks", "veil.maps.mechanisms", "veil.maps.privtree",
           "veil.maps.hdmm", "veil.maps.api", "veil.maps.auto", "veil.maps.points",
           "veil.maps.pipeline", "veil.maps.query", "veil.maps.output", "veil.maps.evaluation"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    import numpy as np

    module = importlib.import_module(name)
    res = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                          extraglobs={"np": np})
    assert res.attempted > 0 and res.failed == 0
