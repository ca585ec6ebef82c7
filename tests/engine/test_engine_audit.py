"""The engine's keyed per-bucket noise, audited on what it writes.

The noise of every bucket comes from HMAC(job key, bucket) through Philox (veil.engine.keys).
These tests read the published parts of real jobs: (A) the noise of `batch counts` follows the
exact discrete Laplace law (chi-square, alpha 1e-6); (B) the DP ratio audit between
neighbouring inputs (one check-in more for every user) bounds epsilon at most the claim; (D)
canaries must FAIL the same tests: a task with half the noise, and a key derivation that
ignores the bucket id (every bucket drawing the same stream).
"""

import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
import helpers  # noqa: E402,F401  (registers the canary task)

from veil.audit import conformance_chi2, dp_ratio_audit, events_points, events_threshold  # noqa: E402
from veil.engine import Job, run_job  # noqa: E402
from veil.io import sql  # noqa: E402

USERS = 60_000
EPS = 1.0


@pytest.fixture(autouse=True)
def _ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("VEIL_LEDGER", str(tmp_path / "ledger.json"))


def _input(tmp_path, name, a_count):
    """Every user has ``a_count`` check-ins in 'a' and one in 'b'."""
    users = np.arange(USERS)
    u = np.concatenate([np.repeat(users, a_count), users])
    c = np.array(["a"] * (USERS * a_count) + ["b"] * USERS, dtype=object)
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table({"user": u, "category": c}), path)
    return path


def _noisy_a(tmp_path, name, a_count, task="count-noise"):
    """The published noisy count of 'a' of every user, in user order (unseeded job)."""
    out = tmp_path / f"out-{name}"
    run_job(Job(_input(tmp_path, name, a_count), out, task, buckets=16, progress=False,
                params={"categories": ["a"], "epsilon": EPS}, spend_again=True))
    files = sorted(str(p) for p in out.glob("part-*.parquet"))
    got = duckdb.sql(f"SELECT user, noisy_count FROM read_parquet({sql.paths(files)}) "
                     "WHERE category = 'a' ORDER BY user").fetchnumpy()
    assert got["user"].size == USERS
    return got["noisy_count"] - a_count, out


def _pmf(scale):
    q = np.exp(-1.0 / scale)
    return lambda k: (1 - q) / (1 + q) * q ** np.abs(k)


def test_a_keyed_noise_follows_the_discrete_laplace_law_and_a_wrong_scale_is_caught(tmp_path):
    noise, _ = _noisy_a(tmp_path, "a", 0)
    support = range(-12, 13)
    assert conformance_chi2(noise, _pmf(1 / EPS), support).passed
    # power: the same test rejects the claimed law at a scale 0.7x or 1.3x off
    assert not conformance_chi2(noise, _pmf(0.7 / EPS), support).passed
    assert not conformance_chi2(noise, _pmf(1.3 / EPS), support).passed
    half, _ = _noisy_a(tmp_path, "half", 0, task="test-count-noise-half")
    assert not conformance_chi2(half, _pmf(1 / EPS), support).passed


EVENTS = events_points(range(-4, 6)) + events_threshold(lambda z: z, range(-3, 4), "z")


def _audit(tmp_path, task):
    za, _ = _noisy_a(tmp_path, f"{task}-0", 0, task)
    zb, _ = _noisy_a(tmp_path, f"{task}-1", 1, task)
    za, zb = za + 0, zb + 1  # the published values (true counts 0 and 1)
    return dp_ratio_audit(lambda n, g: za[:n], lambda n, g: zb[:n], EVENTS,
                          claimed_epsilon=EPS, n=USERS, alpha=1e-6)


def test_b_ratio_audit_of_the_published_counts_and_its_canary(tmp_path):
    res = _audit(tmp_path, "count-noise")
    assert res.passed, res.summary()
    canary = _audit(tmp_path, "test-count-noise-half")
    assert not canary.passed, canary.summary()


def _equal_fraction(noise_by_bucket):
    """Share of equal values at equal positions across bucket pairs (and the pair count)."""
    m = min(len(v) for v in noise_by_bucket)
    eq = n = 0
    for i in range(len(noise_by_bucket)):
        for j in range(i + 1, len(noise_by_bucket)):
            eq += int(np.count_nonzero(noise_by_bucket[i][:m] == noise_by_bucket[j][:m]))
            n += m
    return eq, n


def _by_bucket(out, a_count):
    res = []
    for p in sorted(out.glob("part-*.parquet")):
        t = pq.read_table(p).to_pandas()
        res.append(t.loc[t["category"] == "a", "noisy_count"].to_numpy() - a_count)
    return res


def test_d_bucket_streams_are_independent_and_a_collapsed_key_derivation_is_caught(
        tmp_path, monkeypatch):
    """Two buckets drawing the same stream would publish the same noise at the same
    positions. Equal values occur with probability sum_k p(k)^2 for independent draws;
    a binomial test at alpha 1e-6 accepts the engine and rejects the broken derivation."""
    p_equal = float(np.sum(_pmf(1 / EPS)(np.arange(-60, 61)) ** 2))
    _, out = _noisy_a(tmp_path, "ind", 0)
    eq, n = _equal_fraction(_by_bucket(out, 0))
    assert stats.binomtest(eq, n, p_equal, alternative="greater").pvalue >= 1e-6
    from veil.engine import runner

    real = runner.bucket_entropy
    monkeypatch.setattr(runner, "bucket_entropy", lambda key, b: real(key, 0))
    _, broken = _noisy_a(tmp_path, "collapsed", 0)
    eq, n = _equal_fraction(_by_bucket(broken, 0))
    assert stats.binomtest(eq, n, p_equal, alternative="greater").pvalue < 1e-6
