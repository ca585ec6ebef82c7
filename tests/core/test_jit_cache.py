"""numba kernels run when numba cannot write its compile cache (a full disk, a file-size limit).

numba saves each compiled kernel to disk right after compiling it, and a failed save raised
``OSError`` out of the kernel's call: ``veil visits resemble`` against a full disk stopped
with ``veil: error: [Errno 27] File too large``, naming no file, whenever its kernels were not
yet cached (a fresh clone, a new cache folder); the full-disk tests of ``tests/io`` failed
then. Each case runs in a fresh process with an empty ``NUMBA_CACHE_DIR`` (so every kernel is
compiled and saved) and a 600-byte file-size limit, and must print what the same script
prints without the limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

SCRIPT = r"""
import json, resource, signal, sys
import numpy as np
if sys.argv[1] == "limit":
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (600, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
g = np.random.default_rng(0)
out = {}
from veil.visits._kernels import greedy_moves, lagrangian_compiled, minplus_chain
C = g.uniform(0, 5, (6, 9))
layers, arg = minplus_chain(C, backend="numba")
out["chain"] = [layers.tolist(), arg.tolist()]
phi, G = g.uniform(0, 1, (5, 7)), g.uniform(0, 1, (5, 7))
status, bound, x, v, lam = lagrangian_compiled(phi, G, 6, 0.3, 1e-9, False, 30)
out["lagrangian"] = [status, bound, None if x is None else x.tolist(), v, lam]
x = greedy_moves(G, phi, np.array([2, 1, 1, 1, 1]), 6, np.full(5, 0.2), 1.0, False, 1e-9,
                 False, 1e-12, 50)
out["moves"] = None if x is None else np.asarray(x).tolist()
from veil.geo._kernels import NUMBA_MIN_SIZE, displace_turn
n = NUMBA_MIN_SIZE
pts = np.column_stack([g.uniform(-60, 60, n), g.uniform(-180, 180, n)])
out["turn"] = displace_turn(pts, g.uniform(0, 1, n), g.uniform(-5, 0, n), 0.01, 6371008.8,
                            use_numba=True)[:50].tolist()
from veil.histograms.partition import voptimal
edges, cost = voptimal(g.integers(0, 50, 300).astype(float), 7, engine="numba")
out["vopt"] = [np.asarray(edges).tolist(), cost]
print(json.dumps(out))
"""


def _run(mode: str, cache: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    env.pop("VEIL_NO_NUMBA", None)
    res = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_kernels_run_when_numba_cannot_save_them(tmp_path):
    limited = _run("limit", tmp_path / "cold")
    assert limited == _run("free", tmp_path / "warm")
    # the premise: these kernels are cached, so the limited run had saves to fail
    assert list((tmp_path / "warm").rglob("*.nbi"))
