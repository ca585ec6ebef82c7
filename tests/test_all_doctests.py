"""Every runnable example in veil's docstrings runs and prints what it says.

The per-package doctest modules list their modules by hand; ``veil.geo.risk`` and
``veil.budget`` were on no list, and their examples had drifted (``np.True_`` printed for
``True``; an error message that now prints the budget exactly, ``total 1``). This test walks
every module of the package, so a module with examples cannot be left out.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import veil
from veil.random import make_rng

MODULES = sorted(m.name for m in pkgutil.walk_packages(veil.__path__, "veil."))


def test_the_walk_finds_the_modules_with_examples():
    assert {"veil.geo.risk", "veil.budget", "veil.histograms.api", "veil.maps.auto"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    res = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False,
                          extraglobs={"make_rng": make_rng, "np": np})
    assert res.failed == 0, f"{res.failed} of {res.attempted} examples of {name} failed"
