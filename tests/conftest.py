"""Test-wide isolation: every test gets its own veil state folder (the privacy ledger).

Without it, the DP commands run by the tests would charge the developer's real ledger
(``~/.local/share/veil``) and refuse each other's releases across tests.
"""

import pytest


@pytest.fixture(autouse=True)
def _private_veil_home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("VEIL_HOME", str(tmp_path_factory.mktemp("veil-home")))
    monkeypatch.delenv("VEIL_LEDGER", raising=False)
