"""Ctrl-C at the worst moments: while the command is still importing, and while the pool's
processes start. Both used to end in a Python traceback (and the first in death by SIGINT,
exit -2, instead of 130): the slow fault suite's "random SIGINT" scenario caught them."""

import os
import signal
import subprocess
import sys
import threading
import types

import pytest

from helpers import SRC, TESTS

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_console_entry_turns_an_interrupt_during_import_into_130(monkeypatch, capsys):
    import veil._console as console

    fake = types.ModuleType("veil.cli")

    def _interrupt(name):
        raise KeyboardInterrupt

    fake.__getattr__ = _interrupt
    monkeypatch.setitem(sys.modules, "veil.cli", fake)
    with pytest.raises(SystemExit) as exc:
        console.main(["--version"])
    assert exc.value.code == 130
    assert capsys.readouterr().err == "veil: interrupted\n"


def test_a_real_sigint_while_the_command_imports_numpy():
    # The signal is sent by an import hook the moment numpy starts loading, i.e. in the middle
    # of `from veil.cli import main`; the command must end as after any other Ctrl-C.
    hook = """
import os, signal, sys
class Hook:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
"""
    env = dict(os.environ, PYTHONPATH=SRC)
    code = hook + """
from veil._console import main
sys.meta_path.insert(0, Hook())
main(["--version"])
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 130, (r.returncode, r.stderr)
    assert r.stderr == "veil: interrupted\n"
    # power: the same signal at the same point, through the old entry point (veil.cli:main)
    old = hook + """
sys.meta_path.insert(0, Hook())
from veil.cli import main
"""
    r = subprocess.run([sys.executable, "-c", old], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == -signal.SIGINT and "KeyboardInterrupt" in r.stderr


def test_pool_processes_ignore_sigint_from_birth():
    # A fresh interpreter, so that this test starts the forkserver itself.
    code = """
from multiprocessing import get_context
import signal
from veil.engine.pool import start_forkserver
from helpers import report_sigint
ctx = get_context("forkserver")
start_forkserver()
a, b = ctx.Pipe()
p = ctx.Process(target=report_sigint, args=(b,))
p.start()
print(a.recv(), signal.getsignal(signal.SIGINT) is signal.default_int_handler,
      signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))
p.join()
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, TESTS])),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    child, parent_handler, parent_blocked = r.stdout.split()
    assert child == "ignored"  # before any of the worker's own code ran
    assert parent_handler == "True" and parent_blocked == "False"  # the parent is as before


def test_a_sigint_while_the_forkserver_starts_reaches_the_parent_after(monkeypatch):
    from multiprocessing import forkserver

    from veil.engine.pool import start_forkserver

    def _spawn():
        # Directed at this (the main) thread, where it lands while SIGINT is ignored and
        # blocked. A process-directed kill would be flaky under pytest-xdist: the kernel may
        # give it to one of the worker's other threads, which does not block it, and there an
        # ignored signal is dropped (see start_forkserver's docstring).
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    monkeypatch.setattr(forkserver, "ensure_running", _spawn)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # other tests may change it
    try:
        with pytest.raises(KeyboardInterrupt):
            start_forkserver()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.default_int_handler)


def test_import_veil_is_light_and_its_names_are_all_there():
    code = ("import sys, veil; heavy = sorted(m for m in ('numpy', 'duckdb', 'typer', 'scipy') "
            "if m in sys.modules); print(heavy); "
            "print(all(getattr(veil, n) is not None for n in veil.__all__)); "
            "print(veil.release.Release is veil.Release, sorted(set(veil.__all__) - set(dir(veil))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=SRC), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["[]", "True", "True []"]
