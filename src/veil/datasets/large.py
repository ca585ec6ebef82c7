"""Synthetic large inputs for scale benchmarks, streamed to Parquet in chunks.

Memory stays bounded by ``chunk_users`` whatever ``n_users`` is. Deterministic
given ``seed`` (these are benchmark inputs, not private data).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..validation import check_int

__all__ = ["write_large_checkins", "write_large_trajectories", "LARGE_CATEGORIES"]

LARGE_CATEGORIES = [f"cat{i:03d}" for i in range(250)] + ["Hospital", "Church", "Mosque",
                                                           "Synagogue", "Medical Center"]


def write_large_checkins(path: str | Path, n_users: int, *, categories_per_user: int = 20,
                         checkins_per_user: int = 25, seed: int = 0,
                         chunk_users: int = 50_000) -> int:
    """Write ``(user, category, time)`` check-ins for ``n_users`` users; returns the row count.

    Each user visits about ``categories_per_user`` distinct categories drawn from a
    Zipf-like popularity, ``checkins_per_user`` times in total.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    n_users = check_int(n_users, "n_users", minimum=1)
    k = check_int(categories_per_user, "categories_per_user", minimum=1,
                  maximum=len(LARGE_CATEGORIES))
    m = check_int(checkins_per_user, "checkins_per_user", minimum=k)
    g = np.random.default_rng(seed)
    cats = np.asarray(LARGE_CATEGORIES)
    pop = 1.0 / np.arange(1, len(cats) + 1) ** 0.8
    pop /= pop.sum()
    rows = 0
    schema = pa.schema([("user", pa.int64()), ("category", pa.string()), ("time", pa.int64())])
    with pq.ParquetWriter(str(path), schema) as w:
        for lo in range(0, n_users, chunk_users):
            n = min(chunk_users, n_users - lo)
            # k distinct categories per user: Gumbel top-k on log popularity
            keys = np.log(pop)[None, :] + g.gumbel(size=(n, len(cats)))
            chosen = np.argpartition(-keys, k - 1, axis=1)[:, :k]
            # every chosen category once, the rest spread at random among them
            extra = g.integers(0, k, size=(n, m - k))
            idx = np.concatenate([chosen, np.take_along_axis(chosen, extra, axis=1)], axis=1)
            users = np.repeat(np.arange(lo, lo + n, dtype=np.int64), m)
            times = g.integers(0, 365 * 24 * 3600, size=n * m)
            w.write_table(pa.table({"user": users, "category": cats[idx.ravel()],
                                    "time": times}, schema=schema))
            rows += n * m
    return rows


def write_large_trajectories(path: str | Path, n_users: int, *, steps: int = 100,
                             bbox: tuple[float, float, float, float] = (
                                 116.273804, 39.831741, 116.467438, 39.988695),
                             seed: int = 0, chunk_users: int = 2_000) -> int:
    """Write ``(user, t, lat, lon)`` random-walk trajectories inside ``bbox`` (lon0, lat0, lon1, lat1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n_users = check_int(n_users, "n_users", minimum=1)
    steps = check_int(steps, "steps", minimum=1)
    lon0, lat0, lon1, lat1 = bbox
    g = np.random.default_rng(seed)
    rows = 0
    schema = pa.schema([("user", pa.int64()), ("t", pa.int64()), ("lat", pa.float64()),
                        ("lon", pa.float64())])
    with pq.ParquetWriter(str(path), schema) as w:
        for lo in range(0, n_users, chunk_users):
            n = min(chunk_users, n_users - lo)
            start = np.column_stack([g.uniform(lon0, lon1, n), g.uniform(lat0, lat1, n)])
            step = g.normal(0, 0.002, size=(n, steps, 2))
            step[:, 0, :] = 0
            path_ = start[:, None, :] + np.cumsum(step, axis=1)
            # reflect into the box
            for j, (a, b) in enumerate(((lon0, lon1), (lat0, lat1))):
                span = b - a
                x = np.mod(path_[..., j] - a, 2 * span)
                path_[..., j] = a + np.where(x > span, 2 * span - x, x)
            users = np.repeat(np.arange(lo, lo + n, dtype=np.int64), steps)
            t = np.tile(np.arange(steps, dtype=np.int64) * 60, n)
            w.write_table(pa.table({"user": users, "t": t, "lat": path_[..., 1].ravel(),
                                    "lon": path_[..., 0].ravel()}, schema=schema))
            rows += n * steps
    return rows
