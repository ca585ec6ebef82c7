"""A batch job killed after its output was published but before the ledger's commit.

`--resume` found the output complete and verified and returned early, without committing the
reservation: the ledger kept it RESERVED for ever (`budget release` refuses while the output
exists, and `batch discard` found no work folder), so the only ways out were `--force` or
deleting a published output."""

from __future__ import annotations

import signal
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from helpers import checkins, jobrun  # noqa: E402


def _states(ledger: Path) -> list[str]:
    con = sqlite3.connect(ledger)
    try:
        return [r[0] for r in con.execute("SELECT state FROM entries")]
    finally:
        con.close()


def test_resume_commits_the_reservation_of_a_published_output(tmp_path):
    inp = checkins(tmp_path / "in.parquet", n=3_000, users=500)
    out = tmp_path / "out"
    ledger = tmp_path / "ledger.sqlite"
    spec = {"input": str(inp), "output": str(out), "task": "test-slow-noise",
            "params": {"sleep": 0.0}, "user_column": "uid", "seed": 2, "buckets": 8,
            "resume": True, "spend_again": True}
    env = {"VEIL_LEDGER": str(ledger)}
    r = jobrun(spec, {**env, "VEIL_TEST_FAULT": "cleanup"})
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert (out / "_manifest.json").exists()
    assert _states(ledger) == ["reserved"]
    r = jobrun(spec, env)
    assert r.returncode == 0, r.stderr
    assert _states(ledger) == ["committed"]
    r = jobrun(spec, env)   # idempotent
    assert r.returncode == 0 and _states(ledger) == ["committed"]
