"""`veil batch` on the command line."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _veil(*args, env_extra=None, cwd=None):
    import os

    env = dict(os.environ, PYTHONPATH=SRC, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "veil", *args], capture_output=True, text=True,
                          env=env, cwd=cwd)


def test_batch_counts_end_to_end_and_refusals(tmp_path):
    g = np.random.default_rng(0)
    inp = tmp_path / "c.csv"
    pq.write_table(pa.table({"person": g.integers(0, 300, 3000), "cat": g.choice(["a", "b"], 3000)}),
                   tmp_path / "c.parquet")
    import duckdb

    duckdb.sql(f"COPY (SELECT * FROM '{tmp_path / 'c.parquet'}') TO '{inp}' (HEADER)")
    env = {"VEIL_LEDGER": str(tmp_path / "ledger.json")}
    r = _veil("batch", "counts", str(inp), "-o", str(tmp_path / "out"), "--categories", "a,b",
              "-e", "0.5", "--user-column", "person", "--category-column", "cat", "--quiet",
              env_extra=env)
    assert r.returncode == 0, r.stderr
    assert "300 users" in r.stdout
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["epsilon_per_user"] == 0.5 and man["status"] == "complete"
    r2 = _veil("batch", "counts", str(inp), "-o", str(tmp_path / "out2"), "--categories", "a,b",
               "-e", "0.5", "--user-column", "person", "--category-column", "cat", "--quiet",
               env_extra=env)
    assert r2.returncode == 2
    assert "--spend-again" in r2.stderr and len(r2.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out2").exists()
    r3 = _veil("batch", "counts", str(inp), "-o", str(tmp_path / "out3"), "--categories", "a,b",
               "-e", "0.5", "--quiet", env_extra=env)
    assert r3.returncode == 2 and "missing column" in r3.stderr
