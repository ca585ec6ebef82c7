"""Contribution bounding: at most m records per user, sampled uniformly, inside DuckDB."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from veil.bounding import bound_contributions, bounded_sql
from veil.identity import shared_connection
from veil.io import sql
from veil.random import make_rng

ALPHA = 1e-6  # unseeded tests: a correct sampler fails with probability at most ALPHA


def _users_table(n_users: int, rows_per_user: int) -> pa.Table:
    return pa.table({"user": np.repeat(np.arange(n_users).astype(str), rows_per_user),
                     "v": np.tile(np.arange(rows_per_user), n_users)})


def _pair_counts(kept: pa.Table, rows_per_user: int, m: int) -> np.ndarray:
    """How often each m-subset of a user's rows was kept, over all users."""
    by_user: dict[str, list[int]] = {}
    for u, v in zip(kept.column("user").to_pylist(), kept.column("v").to_pylist()):
        by_user.setdefault(u, []).append(v)
    index = {c: i for i, c in enumerate(itertools.combinations(range(rows_per_user), m))}
    counts = np.zeros(len(index))
    for vs in by_user.values():
        counts[index[tuple(sorted(vs))]] += 1
    return counts


def _chi2_uniform(counts: np.ndarray) -> float:
    return float(stats.chisquare(counts).pvalue)


def test_kept_subsets_are_uniform_and_a_biased_rule_is_rejected():
    """Each of the 15 pairs of a user's 6 rows is kept with probability 1/15 (chi-square,
    alpha 1e-6, 6000 users each drawn with its own hash); power check: the same test
    rejects DuckDB's multi-argument hash(key, columns) order (measured far from uniform) and
    keeping the first m rows."""
    t = _users_table(6000, 6)
    kept = bound_contributions(t, user="user", max_records=2)
    counts = _pair_counts(kept, 6, 2)
    assert counts.sum() == 6000 and _chi2_uniform(counts) >= ALPHA, counts
    key = int(make_rng().integers(0, 2**62))
    with shared_connection() as con:
        con.register("t", t)
        try:
            weak = con.sql(
                "SELECT * EXCLUDE (r) FROM (SELECT *, row_number() OVER (PARTITION BY user "
                f"ORDER BY hash({key}::UBIGINT, user, v)) AS r FROM t) WHERE r <= 2"
            ).to_arrow_table()
        finally:
            con.unregister("t")
    assert _chi2_uniform(_pair_counts(weak, 6, 2)) < ALPHA
    first = t.filter(pa.compute.less(t.column("v"), 2))
    assert _chi2_uniform(_pair_counts(first, 6, 2)) < ALPHA


def test_each_user_keeps_at_most_m_and_light_users_keep_everything():
    heavy = pa.table({"user": ["heavy"] * 10_000, "v": np.arange(10_000)})
    t = pa.concat_tables([_users_table(100, 2), heavy])
    kept = bound_contributions(t, user="user", max_records=5, rng=make_rng(seed=1))
    per_user = {}
    for u in kept.column("user").to_pylist():
        per_user[u] = per_user.get(u, 0) + 1
    assert per_user["heavy"] == 5
    assert all(v == 2 for u, v in per_user.items() if u != "heavy") and len(per_user) == 101
    assert set(kept.column_names) == {"user", "v"}


def test_a_users_sample_depends_only_on_their_own_rows():
    """Other users' rows and the file order never change which rows of a user are kept
    (what the sensitivity argument needs; a rule based on row positions would fail)."""
    g = np.random.default_rng(3)
    base = pa.table({"user": np.repeat(["a", "b", "c"], 40), "v": g.integers(0, 1000, 120)})
    extra = pa.table({"user": ["d"] * 500, "v": g.integers(0, 1000, 500)})
    shuffled = base.take(pa.array(g.permutation(base.num_rows)))
    mixed = pa.concat_tables([extra, shuffled])
    outs = []
    for table in (base, shuffled, mixed):
        kept = bound_contributions(table, user="user", max_records=7, rng=make_rng(seed=11))
        rows = sorted(zip(kept.column("user").to_pylist(), kept.column("v").to_pylist()))
        outs.append([r for r in rows if r[0] != "d"])
    assert outs[0] == outs[1] == outs[2] and len(outs[0]) == 21
    other = bound_contributions(base, user="user", max_records=7, rng=make_rng(seed=12))
    assert sorted(zip(other.column("user").to_pylist(), other.column("v").to_pylist())) != outs[0]


@pytest.mark.parametrize("name", ['user" IS NULL OR 1=1 OR "user', "it's", "é 名"])
def test_hostile_user_column_names(name):
    t = pa.table({name: ["x", "x", "y"], "v": [1, 2, 3]})
    kept = bound_contributions(t, user=name, max_records=1, rng=make_rng(seed=0))
    assert sorted(kept.column(name).to_pylist()) == ["x", "y"]
    q = bounded_sql("t", user=name, columns=["v"], max_records=1, key=5)
    assert sql.ident(name) in q


def test_bad_bounds_are_refused():
    from veil.errors import ParameterError

    with pytest.raises(ParameterError, match="max_records must be >= 1"):
        bounded_sql("t", user="u", columns=[], max_records=0, key=1)
    with pytest.raises(ParameterError, match="max_records must be an integer"):
        bounded_sql("t", user="u", columns=[], max_records=2.5, key=1)
