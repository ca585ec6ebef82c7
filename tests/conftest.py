"""Test-wide isolation: every test gets its own veil state folder (the privacy ledger), and
the test run its own temporary folder.

Without the first, the DP commands run by the tests would charge the developer's real ledger
(``~/.local/share/veil``) and refuse each other's releases across tests. Without the second,
the docstring examples (which call ``tempfile.mkdtemp()`` so that they read simply) left about
30 folders in the system temporary folder per test run; they now go under pytest's own base
folder, of which pytest keeps the last three runs.
"""

import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_tempdir(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("tempfile"))
    old_dir, old_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = folder
    os.environ["TMPDIR"] = folder  # the veil commands the tests run as child processes
    yield
    tempfile.tempdir = old_dir
    if old_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = old_env


@pytest.fixture(autouse=True)
def _private_veil_home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("VEIL_HOME", str(tmp_path_factory.mktemp("veil-home")))
    monkeypatch.delenv("VEIL_LEDGER", raising=False)


@pytest.fixture
def repeat_releases(monkeypatch):
    """Opt-in: tests that release the same data several times for another purpose (same
    seed, CLI against library, neighbouring files) are not stopped by the ledger.

    Every reservation first declares a total of 1e12 for its dataset when none is declared
    and is made with ``spend_again``; the ledger code itself runs (the ledger's own rules
    are tested in tests/cli/test_accounting.py and tests/core without this fixture).
    """
    allow_repeat_releases(monkeypatch)


def allow_repeat_releases(mp) -> None:
    """The patch behind :func:`repeat_releases`, for a ``pytest.MonkeyPatch`` of any scope."""
    import contextlib

    from veil.errors import BudgetExceededError, ParameterError
    from veil.ledger import Ledger

    original = Ledger.reserve

    def reserve(self, ident, **kw):
        with contextlib.suppress(ParameterError, BudgetExceededError):
            self.set_total(ident, total=1e12, total_per_metre=1e12,
                           label=kw.get("label", "dataset"))
        kw["spend_again"] = True
        return original(self, ident, **kw)

    mp.setattr(Ledger, "reserve", reserve)


@pytest.fixture(scope="module")
def repeat_releases_module():
    """:func:`repeat_releases` for module-scoped fixtures (runs of one module's setup)."""
    with pytest.MonkeyPatch.context() as mp:
        allow_repeat_releases(mp)
        yield
