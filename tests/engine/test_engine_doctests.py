"""The runnable examples in veil.engine's docstrings."""

import doctest
import importlib

import pytest

MODULES = ["veil.engine.fsutil", "veil.engine.lock", "veil.engine.keys", "veil.engine.runner",
           "veil.engine.status"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.setenv("VEIL_LEDGER", str(tmp_path / "ledger.json"))
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
