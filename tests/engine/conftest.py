"""Engine tests: every job declares a large total for its input (see helpers.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _large_totals(monkeypatch):
    import veil.engine.runner as runner

    import helpers

    monkeypatch.setattr(runner, "reserve_ledger", runner.reserve_ledger)  # undone after
    helpers.declare_large_totals()
