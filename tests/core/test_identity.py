"""Dataset identity by content: stable across copies, formats, paths, order; changes with content."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from veil.identity import identity_of_file, identity_of_files, identity_of_table


@pytest.fixture
def frame():
    g = np.random.default_rng(0)
    n = 400
    return pd.DataFrame({
        "user": g.integers(0, 40, n).astype(str),
        "time": pd.date_range("2024-03-01", periods=n, freq="37min"),
        "lat": g.uniform(39, 40, n).round(6),
        "category": g.choice(["Café", "Bar, pub", 'Gym "A"'], n),
        "n": g.integers(0, 9, n),
        "ratio": g.uniform(0, 1, n),
    })


def _same(paths):
    ids = {p.name: identity_of_file(p).id for p in paths}
    assert len(set(ids.values())) == 1, ids
    return next(iter(ids.values()))


def test_one_identity_across_formats_writers_order_and_names(tmp_path, frame):
    frame.to_csv(tmp_path / "a.csv", index=False)
    frame.to_csv(tmp_path / "a.tsv", index=False, sep="\t")
    frame.to_parquet(tmp_path / "pandas.parquet")
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False),
                   tmp_path / "arrow.parquet")
    duckdb.sql(f"COPY (SELECT * FROM read_csv('{tmp_path / 'a.csv'}')) TO "
               f"'{tmp_path / 'duck.parquet'}' (FORMAT parquet)")
    # JSON as veil writes it (pandas' to_json would round floats to 10 digits: other data)
    duckdb.sql(f"COPY (SELECT * FROM read_csv('{tmp_path / 'a.csv'}')) TO "
               f"'{tmp_path / 'a.json'}' (FORMAT json, ARRAY true)")
    frame.sample(frac=1, random_state=3).to_csv(tmp_path / "shuffled.csv", index=False)
    renamed = frame.rename(columns={"user": "who", "lat": "y"})[
        ["ratio", "who", "category", "n", "y", "time"]]
    renamed.to_csv(tmp_path / "renamed.csv", index=False)
    ident = _same([tmp_path / f for f in ("a.csv", "a.tsv", "pandas.parquet", "arrow.parquet",
                                          "duck.parquet", "a.json", "shuffled.csv",
                                          "renamed.csv")])
    assert identity_of_table(frame).id == ident
    assert identity_of_files([tmp_path / "a.csv"]).id == ident
    # the rows split over two Parquet parts are the same dataset
    pq.write_table(pa.Table.from_pandas(frame.iloc[:150], preserve_index=False),
                   tmp_path / "p1.parquet")
    pq.write_table(pa.Table.from_pandas(frame.iloc[150:], preserve_index=False),
                   tmp_path / "p2.parquet")
    assert identity_of_files([tmp_path / "p1.parquet", tmp_path / "p2.parquet"]).id == ident


@pytest.mark.parametrize("edit", ["add a row", "drop a row", "change one value",
                                  "duplicate a row", "swap two values of a column"])
def test_any_change_of_content_is_another_dataset(tmp_path, frame, edit):
    base = identity_of_table(frame)
    f = frame.copy()
    if edit == "add a row":
        f = pd.concat([f, f.iloc[:1].assign(n=100)])
    elif edit == "drop a row":
        f = f.iloc[1:]
    elif edit == "change one value":
        f.loc[5, "n"] += 1
    elif edit == "duplicate a row":
        f = pd.concat([f, f.iloc[:1]])
    else:  # the multiset of each column is unchanged: same identity by design (same people)
        i, j = f.index[f["n"] != f["n"].iloc[0]][:1][0], f.index[0]
        f.loc[[i, j], "n"] = f.loc[[j, i], "n"].to_numpy()
        assert identity_of_table(f).id == base.id
        return
    assert identity_of_table(f).id != base.id


def test_normalized_values(tmp_path):
    (tmp_path / "a.csv").write_text("x,d,s\n1.50,2024-01-02T03:04:05,\n007,2024-01-03,b\n")
    pq.write_table(pa.table({
        "x": [1.5, 7.0],
        "d": pa.array([pd.Timestamp("2024-01-02 03:04:05"), pd.Timestamp("2024-01-03")]),
        "s": [None, "b"]}), tmp_path / "b.parquet")
    assert identity_of_file(tmp_path / "a.csv").id == identity_of_file(tmp_path / "b.parquet").id
    (tmp_path / "c.csv").write_text("x,d,s\n1.5,2024-01-02 03:04:05,\n7,2024-01-03,B\n")
    assert identity_of_file(tmp_path / "c.csv").id != identity_of_file(tmp_path / "a.csv").id


def test_column_prints_and_constant_columns(tmp_path):
    ident = identity_of_table({"city": ["Oslo"] * 5, "age": [1, 2, 3, 4, 5]})
    assert ident.column("city").constant and not ident.column("age").constant
    assert ident.prints() == [ident.column("age").fingerprint]
    other = identity_of_table({"years": [5, 4, 3, 2, 1], "zip": ["x", "y", "z", "w", "v"]})
    assert other.column("years").fingerprint == ident.column("age").fingerprint
    assert other.id != ident.id
    from veil.errors import ParameterError

    with pytest.raises(ParameterError, match="not one of"):
        ident.column("nope")


def test_the_identity_function_is_pinned(tmp_path):
    """A change of normalization or hashing (or of DuckDB's md5) would silently reset every
    ledger: it must change IDENTITY_VERSION, and this value with it."""
    (tmp_path / "a.csv").write_text("age,city\n30,Paris\n41.0,Oslo\n")
    assert identity_of_file(tmp_path / "a.csv").id == "85a84290d1da2bf5d0203b184cae9f8d"


def test_unreadable_input_is_a_data_error(tmp_path):
    from veil.errors import DataError

    (tmp_path / "x.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="x.parquet"):
        identity_of_file(tmp_path / "x.parquet")
    with pytest.raises(DataError, match="no such file"):
        identity_of_file(tmp_path / "missing.csv")


def test_identities_and_constant_flags_match_the_documented_formula(tmp_path, frame):
    """The streaming scan gives, for every column, the documented fingerprint: SHA-256 of
    the row count and the sum mod 2**64 of the low 64 bits of the MD5 of each normalized
    value, here recomputed in Python from the distinct values and their counts (the former
    grouped scan, which held every distinct value in memory: 3.2 GB for 2 x 10^7
    coordinates, out of a 1 GB limit at 10^8; benchmarks/identity_memory.py)."""
    import hashlib

    from veil.identity import IDENTITY_VERSION, _norm

    df = frame.copy()
    df["same"] = "x"
    df.loc[::5, "category"] = None
    f = tmp_path / "f.parquet"
    df.to_parquet(f)
    ident = identity_of_file(f)
    con = duckdb.connect()
    for c in df.columns:
        vals = con.sql(f"SELECT {_norm('v')} AS n, count(*) FROM (SELECT CAST(\"{c}\" AS "
                       f"VARCHAR) AS v FROM read_parquet('{f}')) GROUP BY n").fetchall()
        # DuckDB's md5_number_lower: the last 8 bytes of the digest, little-endian
        total = sum(int.from_bytes(hashlib.md5(v.encode()).digest()[8:], "little") * k
                    for v, k in vals) % 2**64
        want = hashlib.sha256(f"{IDENTITY_VERSION}|col|{len(df)}|{total}".encode()
                              ).hexdigest()[:32]
        assert ident.column(c).fingerprint == want, c
        assert ident.column(c).constant == (len(vals) <= 1), c
    empty = identity_of_table(pa.table({"a": pa.array([], pa.string())}))
    assert empty.rows == 0 and empty.column("a").constant


def test_the_identity_scan_fits_a_small_memory_limit(tmp_path, monkeypatch):
    """3 x 10^5 distinct coordinates under a 16 MB DuckDB limit: the streaming scan does not
    hold the distinct values (the former grouped scan ran out of memory at 10^8 rows and 1 GB,
    and here at 16 MB); same identity as with the default limit."""
    import veil.identity as vid

    f = tmp_path / "pts.parquet"
    duckdb.sql(f"COPY (SELECT (i % 1000)::VARCHAR AS user, random() AS lat, random() AS lon "
               f"FROM range(300000) t(i)) TO '{f}'")
    default = identity_of_file(f)
    monkeypatch.setattr(vid, "IDENTITY_MEMORY_LIMIT", "16MB")
    small = identity_of_file(f)
    assert small == default and small.rows == 300_000


def test_typed_columns_normalize_exactly_as_their_text():
    """The typed shortcut (DOUBLE, integers, TIMESTAMP) gives, value for value, the text the
    general path gives for ``CAST(value AS VARCHAR)``: random bit patterns of doubles (NaN
    payloads, subnormals, huge and tiny values), integers around +-2**53 and at the ends of
    every width, timestamps from before the common era to the infinities. Were it to differ,
    a Parquet file and its CSV copy would get different identities: a fresh budget."""
    from veil.identity import _norm, _typed_norm

    g = np.random.default_rng(0)
    bits = g.integers(0, 2**63, size=20_000, dtype=np.int64).view(np.float64)
    doubles = np.concatenate([
        bits, -bits, g.integers(-2**60, 2**60, size=2_000).astype(float),
        [0.0, -0.0, 0.1, 0.1 + 0.2, 1 / 3, 1.5, 2.0**53 - 1, 2.0**53, 2.0**53 + 2, -2.0**53,
         4503599627370496.5, 1e15 + 0.5, 9.2e18, 1e22, 1e300, -1e300, 5e-324,
         2.2250738585072014e-308, 1e-7, np.nan, np.inf, -np.inf]])
    ints = np.concatenate([g.integers(-2**63, 2**63 - 1, size=5_000, dtype=np.int64),
                           np.arange(-2**53 - 3, -2**53 + 4), np.arange(2**53 - 3, 2**53 + 4),
                           [0, 1, -1, 127, -128, 255, 2**31 - 1, -2**31, 2**63 - 1, -2**63]])
    con = duckdb.connect()
    con.register("d", pa.table({"x": doubles}))
    con.register("i", pa.table({"i": ints}))

    def differing(relation, dtype):
        return con.sql(f"SELECT count(*), count(*) FILTER (WHERE {_typed_norm('x', dtype)} "
                       f"IS DISTINCT FROM {_norm('CAST(x AS VARCHAR)')}) FROM {relation}"
                       ).fetchall()[0]

    n, bad = differing("(SELECT x FROM d UNION ALL SELECT NULL)", "DOUBLE")
    assert n == len(doubles) + 1 and bad == 0
    for dtype in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                  "UINTEGER", "UBIGINT"):
        n, bad = differing(f"(SELECT TRY_CAST(i AS {dtype}) AS x FROM i)", dtype)
        assert n == len(ints) and bad == 0, dtype
    for dtype in ("HUGEINT", "UHUGEINT"):  # beyond 64 bits as well
        n, bad = differing(f"(SELECT TRY_CAST(i AS {dtype}) * m AS x FROM i, "
                           f"(SELECT unnest([1, 3, 2**40]::{dtype}[]) AS m))", dtype)
        assert n == 3 * len(ints) and bad == 0, dtype
    n, bad = differing(
        "(SELECT make_timestamp(i // 1000) AS x FROM i UNION ALL SELECT unnest(["
        "'infinity', '-infinity', NULL, '0001-01-01', '-0044-03-15 12:00:00.5', "
        "'9999-12-31 23:59:59.999999', '2012-04-03 18:00:09']::TIMESTAMP[]))", "TIMESTAMP")
    assert n == len(ints) + 7 and bad == 0


def test_a_typed_file_and_its_text_copy_have_one_identity(tmp_path):
    """End to end: a Parquet file with typed columns (taking the shortcut) and the same rows
    as CSV (every cell text) give the same identity and the same column prints."""
    g = np.random.default_rng(1)
    n = 3_000
    t = pa.table({
        "lat": np.concatenate([g.uniform(-90, 90, n - 4), [0.0, -0.0, 2.0**53, np.nan]]),
        "k": pa.array(np.concatenate([g.integers(-2**62, 2**62, n - 3), [0, 2**53 + 1, -7]])),
        "small": pa.array(g.integers(0, 100, n).astype(np.int16)),
        "t": pa.array(pd.date_range("1969-12-31", periods=n, freq="7919s").values
                      .astype("datetime64[us]")),
    })
    pq.write_table(t, tmp_path / "a.parquet")
    duckdb.sql(f"COPY (SELECT * FROM read_parquet('{tmp_path / 'a.parquet'}')) "
               f"TO '{tmp_path / 'a.csv'}' (HEADER)")
    a, b = identity_of_file(tmp_path / "a.parquet"), identity_of_file(tmp_path / "a.csv")
    assert a.id == b.id and a.columns == b.columns
