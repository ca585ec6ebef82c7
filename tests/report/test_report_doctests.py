"""The runnable examples in the report's docstrings (sentence builders, intervals, rankings)."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

MODULES = ["veil.report.stats", "veil.report.core", *(f"veil.report.sections.{m}" for m in
                                  ("samplers", "histograms", "visits", "geo", "temporal",
                                   "tables"))]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, extraglobs={"np": np})
    assert result.attempted > 0
    assert result.failed == 0
