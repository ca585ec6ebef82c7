"""The runnable examples in veil.io's docstrings."""

from __future__ import annotations

import doctest

import pytest

import veil.io
import veil.io.read
import veil.io.write


@pytest.mark.parametrize("module", [veil.io, veil.io.read, veil.io.write],
                         ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
