"""The runnable examples in the accounting modules' docstrings (ledger, identity, bounding,
release, validation, the histogram entry points, the CLI helpers)."""

from __future__ import annotations

import doctest

import pytest

import veil.audit.files
import veil.bounding
import veil.histograms.api
import veil.identity
import veil.ledger
import veil.release
import veil.validation


@pytest.mark.parametrize("module", [veil.audit.files, veil.bounding, veil.histograms.api, veil.identity,
                                    veil.ledger, veil.release, veil.validation],
                         ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
