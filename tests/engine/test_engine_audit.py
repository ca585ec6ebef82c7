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


def _streams(tmp_path, name):
    """The first draws of every bucket's stream (test-stream-probe: one uniform per user)."""
    out = tmp_path / f"probe-{name}"
    run_job(Job(_input(tmp_path, name, 0), out, "test-stream-probe", buckets=16,
                progress=False, spend_again=True))
    draws = [pq.read_table(p).column("draw").to_numpy() for p in sorted(out.glob("part-*"))]
    m = min(len(d) for d in draws)
    return np.stack([d[:m] for d in draws])


def test_d_bucket_streams_are_independent_and_a_collapsed_key_derivation_is_caught(
        tmp_path, monkeypatch):
    """Every bucket draws from HMAC(key, bucket): two buckets never share a stream (equal
    float64 uniforms at equal positions have probability 2**-53 each), the columns of draws
    across buckets are uncorrelated (|r| below the alpha 1e-6 bound), and a broken derivation
    that ignores the bucket id (every bucket drawing the same stream) fails both checks."""
    def checks(draws):
        k, m = draws.shape
        equal = sum(int(np.count_nonzero(draws[i] == draws[j]))
                    for i in range(k) for j in range(i + 1, k))
        r = np.corrcoef(draws)[np.triu_indices(k, 1)]
        # Fisher z of each pair, Bonferroni over the pairs, two-sided alpha 1e-6
        z = np.abs(np.arctanh(np.clip(r, -0.999999, 0.999999))) * np.sqrt(m - 3)
        bound = stats.norm.isf(1e-6 / (2 * r.size))
        return equal, bool((z < bound).all())

    equal, uncorrelated = checks(_streams(tmp_path, "ind"))
    assert equal == 0 and uncorrelated
    from veil.engine import runner

    real = runner.bucket_entropy
    monkeypatch.setattr(runner, "bucket_entropy", lambda key, b: real(key, 0))
    equal, uncorrelated = checks(_streams(tmp_path, "collapsed"))
    assert equal > 0 and not uncorrelated
