"""Per-user batch: build every user's category histogram with DuckDB and sanitize each one.

The work is split into a pure per-user function (:func:`sanitize_one`, a dense
count vector in, a :class:`~veil.visits.VisitResult` out) and a driver
(:func:`sanitize_users`) that walks user-sorted numpy arrays (offsets into one
long ``(user, category, count)`` table), so a distributed engine can call the
same function on any bucket of users.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, InfeasibleError, InstanceTooLargeError, ParameterError
from ..io import sql
from ..io.read import private_spill, read_errors
from ..release import TabularMixin
from ..validation import check_choice
from .hide import hide
from .resemble import avoid, resemble
from .result import VisitResult

__all__ = ["UserHistograms", "load_checkins", "sanitize_one", "sanitize_users", "BatchResult",
           "write_table", "align_target"]


@dataclass
class UserHistograms:
    """Per-user histograms in long form, sorted by user.

    ``users[u]`` is the id of user ``u``; ``categories[c]`` a category name;
    rows ``offsets[u]:offsets[u+1]`` of ``cat`` / ``count`` hold user ``u``'s
    non-zero bins.
    """

    users: np.ndarray
    categories: list[str]
    offsets: np.ndarray
    cat: np.ndarray
    count: np.ndarray
    source: str | None = None

    @property
    def n_users(self) -> int:
        return int(self.users.size)

    def dense(self, u: int) -> np.ndarray:
        out = np.zeros(len(self.categories), dtype=np.int64)
        s, e = self.offsets[u], self.offsets[u + 1]
        out[self.cat[s:e]] = self.count[s:e]
        return out


def _reader(path: str, fmt: str | None, delimiter: str | None = None) -> str:
    ext = (fmt or Path(path).suffix.lstrip(".")).lower()
    lit = sql.path(path)
    if ext == "parquet":
        return sql.read_parquet(lit)
    if ext in ("json", "ndjson", "jsonl"):
        return sql.read_json([path])
    # all_varchar: a user or category is read as written ("1e3", "2.50" and "1000", "2.5"
    # were four users; typed as numbers they became two, published as "1000.0" and "2.5")
    if delimiter is not None:  # given: used as is (else DuckDB's sniffer finds it)
        return f"read_csv({lit}, delim={sql.literal(delimiter)}, header=true, all_varchar=true)"
    if ext in ("tsv", "txt"):
        return f"read_csv({lit}, delim='\t', header=true, all_varchar=true)"
    return f"read_csv({lit}, header=true, all_varchar=true)"


def _read_error(exc: Exception, p: Path, fmt: str | None, delimiter: str | None,
                in_memory: bool) -> Exception:
    """A DuckDB error reading the check-ins (read by :func:`_reader`) as veil's one-line
    error: DuckDB's own message quotes a row of the file."""
    from ..io.read import _EXTENSIONS, _duck_detail, duckdb_read_error

    if in_memory:
        return DataError(f"cannot read check-ins: {_duck_detail(str(exc))}", path=str(p))
    ext = (fmt or p.suffix.lstrip(".")).lower()
    kind = _EXTENSIONS.get("." + ext, "csv")  # as _reader reads it
    if delimiter is None and ext in ("tsv", "txt"):
        delimiter = "\t"
    return duckdb_read_error(exc, p, format=kind, delimiter=delimiter)


def load_checkins(path: Any, *, user_column: str = "user",
                  category_column: str = "category", categories: Sequence[str] | None = None,
                  fmt: str | None = None, delimiter: str | None = None) -> UserHistograms:
    """Count check-ins per (user, category) with DuckDB.

    Parameters
    ----------
    path : str, Path, pandas.DataFrame or pyarrow.Table
        CSV (header required), TSV, Parquet or JSON file with one check-in per
        row, or the same rows already in memory (a DataFrame or an Arrow table,
        read by DuckDB in place); other columns (e.g. a time) are ignored.
    user_column, category_column : str
        Column names.
    fmt : str, optional
        File format (csv, tsv, parquet, json); default from the extension.
    delimiter : str, optional
        CSV field delimiter; default: found by DuckDB's sniffer (a tab for .tsv).
    categories : sequence of str, optional
        The category domain (public, e.g. the taxonomy's names or a target's
        categories). Default: the categories present in the file; categories
        outside a given domain are an error.

    Returns
    -------
    UserHistograms

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "c.csv")
    >>> _ = open(p, "w").write("user,category\\nu1,Bar\\nu1,Bar\\nu2,Park\\n")
    >>> uh = load_checkins(p)
    >>> uh.users.tolist(), uh.categories, uh.dense(0).tolist()
    (['u1', 'u2'], ['Bar', 'Park'], [2, 0])
    >>> import pandas as pd
    >>> load_checkins(pd.DataFrame({"user": ["u1", "u1", "u2"],
    ...                             "category": ["Bar", "Bar", "Park"]})).dense(0).tolist()
    [2, 0]
    """
    import duckdb

    con = private_spill(duckdb.connect())
    in_memory = type(path).__name__ in ("DataFrame", "Table") and hasattr(path, "columns")
    if in_memory:
        import pyarrow as pa

        from ..io.write import to_arrow

        table = to_arrow(path) if type(path).__name__ == "DataFrame" else path
        if not isinstance(table, pa.Table):
            con.close()
            raise ParameterError(f"check-ins must be a file, a pandas DataFrame or a pyarrow "
                                 f"Table, got {type(path).__name__}")
        con.register("veil_checkins", table)
        p = Path("<DataFrame>" if type(path).__name__ == "DataFrame" else "<Arrow table>")
        src = sql.ident("veil_checkins")
    else:
        p = Path(path)
        if not p.exists():
            con.close()
            raise DataError("check-in file not found", path=str(p))
        src = _reader(str(p), fmt, delimiter)
    try:
        rel = con.sql(f"SELECT * FROM {src}")
        cols = rel.columns
    except read_errors() as exc:  # DuckDB's own message quotes a row of the file
        raise _read_error(exc, p, fmt, delimiter, in_memory) from None
    for col, opt in ((user_column, "user column"), (category_column, "category column")):
        if col not in cols:
            import difflib

            hint = difflib.get_close_matches(col, cols, n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise DataError(f"no {opt} {col!r}; columns are {cols}{extra}", path=str(p))
    u, c = (sql.ident(x) for x in (user_column, category_column))
    try:  # the full scan can fail where the sniffed sample did not (a truncated last row)
        nulls = con.sql(f"SELECT count(*) FILTER (WHERE {u} IS NULL), count(*) FILTER (WHERE "
                        f"{c} IS NULL OR trim(CAST({c} AS VARCHAR)) = '') FROM {src}"
                        ).fetchall()[0]
        if nulls[0] or nulls[1]:
            col = user_column if nulls[0] else category_column
            raise DataError(f"{max(nulls)} rows have an empty {col!r}", path=str(p), column=col)
        rows = con.sql(f"SELECT CAST({u} AS VARCHAR) AS u, CAST({c} AS VARCHAR) AS c, count(*) "
                       f"AS n FROM {src} GROUP BY 1, 2 ORDER BY 1, 2").fetchnumpy()
    except read_errors() as exc:
        raise _read_error(exc, p, fmt, delimiter, in_memory) from None
    finally:
        con.close()
    users_col = np.asarray(rows["u"], dtype=object)
    cats_col = np.asarray(rows["c"], dtype=object)
    counts = np.asarray(rows["n"], dtype=np.int64)
    if categories is None:
        domain = sorted(set(cats_col.tolist()))
    else:
        domain = [str(x) for x in categories]
        extra = sorted(set(cats_col.tolist()) - set(domain))
        if extra:
            raise DataError(f"{len(extra)} categories are outside the given domain, e.g. "
                            f"{extra[:3]}", path=str(p), column=category_column)
    pos = {nm: i for i, nm in enumerate(domain)}
    cat = np.fromiter((pos[x] for x in cats_col), dtype=np.int64, count=cats_col.size)
    # object, not numpy text: '<U' drops a trailing NUL ("u1" and "u1\0", two people, were
    # one histogram)
    users, starts = np.unique(users_col, return_index=True)
    offsets = np.append(starts, users_col.size).astype(np.int64)
    return UserHistograms(users=users, categories=domain, offsets=offsets, cat=cat, count=counts,
                          source=None if in_memory else str(p))


def align_target(target_labels: Sequence[str], target_values: Sequence[float],
                 categories: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Put a labeled target and a histogram domain on one domain.

    As in the paper, the domain is extended to the union of both category sets
    (new bins hold zero visits). A target with no weight on any category of
    the histogram is an error (a different domain: e.g. names from another
    taxonomy level; fix them with a roll-up first).

    Returns
    -------
    domain : list of str
        ``categories`` followed by the target's extra categories.
    target : ndarray
        Target weights on ``domain``.

    Examples
    --------
    >>> align_target(["Bar", "Zoo"], [1.0, 3.0], ["Bar", "Park"])
    (['Bar', 'Park', 'Zoo'], array([1., 0., 3.]))
    """
    domain = [str(c) for c in categories]
    pos = {nm: i for i, nm in enumerate(domain)}
    vals: dict[int, float] = {}
    shared = 0.0
    for lab, v in zip(target_labels, target_values):
        lab = str(lab)
        if lab not in pos:
            pos[lab] = len(domain)
            domain.append(lab)
        else:
            shared += float(v)
        vals[pos[lab]] = vals.get(pos[lab], 0.0) + float(v)
    if shared <= 0:
        raise ParameterError("the target puts no weight on any category of the histogram: "
                             f"different domains (target has e.g. {list(target_labels)[:3]}, "
                             f"histogram {list(categories)[:3]})")
    out = np.zeros(len(domain))
    for k, v in vals.items():
        out[k] = v
    return domain, out


def sanitize_one(counts: np.ndarray, *, problem: str, sensitive: np.ndarray | None = None,
                 target: np.ndarray | None = None, distance: str = "js",
                 privacy_distance: str = "js", quality_bound: float | None = None,
                 privacy_threshold: float | None = None, method: str = "auto",
                 forbid_unvisited: bool = False, labels: Sequence[str] | None = None,
                 **kw: Any) -> VisitResult:
    """Sanitize one user's dense histogram (a pure function of its arguments)."""
    if problem == "hide":
        return hide(counts, sensitive=sensitive, distance=distance,
                    method="auto" if method in ("auto", "exact", "heuristic") else method,
                    forbid_unvisited=forbid_unvisited, labels=labels, **kw)
    fn = resemble if problem == "resemble" else avoid
    if quality_bound is None:
        raise ParameterError(f"{problem} needs a quality bound (--quality-bound)")
    return fn(counts, target, quality_bound=quality_bound, privacy_threshold=privacy_threshold,
              quality_distance=distance, privacy_distance=privacy_distance, method=method,
              forbid_unvisited=forbid_unvisited, labels=labels, **kw)


@dataclass
class BatchResult(TabularMixin):
    """The published table and the custodian's private per-user report, as column dicts.

    ``table`` (publishable): columns ``user, category, sanitized`` with one row
    per category of the domain for every published user, in domain order, so its
    shape never depends on which bins were zeroed. Users who cannot be sanitized
    are left out of it (the uniform policy) and appear only in ``summary``.

    ``summary`` (PRIVATE: it holds each user's size, number of sensitive visits,
    quality loss and status): never publish it.
    """

    table: dict[str, np.ndarray]
    summary: dict[str, np.ndarray]
    runtime_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_arrow(self):
        """The publishable ``table`` (never the private ``summary``) as a pyarrow Table."""
        from ..io.write import to_arrow

        return to_arrow(self.table)

    def status_counts(self) -> dict[str, int]:
        vals, cnt = np.unique(self.summary["status"], return_counts=True)
        return {str(v): int(c) for v, c in zip(vals, cnt)}


_SUMMARY = ("user", "size", "sanitized_size", "sensitive_visits", "quality_loss",
            "privacy_distance", "algorithm", "exact", "gap", "status", "message")


def _full_domain_table(users: np.ndarray, cats: np.ndarray, rows: np.ndarray,
                       out: np.ndarray) -> dict[str, np.ndarray]:
    """Long table over the whole domain for the users ``rows`` (sanitized ``out[rows]``)."""
    nc = cats.size
    # object arrays of Python strings: numpy text would drop a trailing NUL
    return {"user": np.repeat(np.asarray(users, dtype=object)[rows], nc),
            "category": np.tile(np.asarray(cats, dtype=object), rows.size),
            "sanitized": out[rows].reshape(-1).astype(np.int64)}


def _hide_buckets(hists: UserHistograms, sensitive, bucket: int, distance: str = "js",
                  forbid_unvisited: bool = False, mitigation=None, rng=None,
                  **_: Any) -> BatchResult:
    from ..random import make_rng
    from .hide import hide_many

    t0 = time.perf_counter()
    rng = make_rng(rng) if mitigation is not None else None
    nu, nc = hists.n_users, len(hists.categories)
    cats = np.asarray(hists.categories, dtype=object)
    urow = np.repeat(np.arange(nu), np.diff(hists.offsets))
    parts = []
    sm = {k: [] for k in ("size", "sanitized_size", "sensitive_visits", "quality_loss", "status",
                          "message")}
    for s0 in range(0, nu, bucket):
        s1 = min(nu, s0 + bucket)
        a, b = hists.offsets[s0], hists.offsets[s1]
        H = np.zeros((s1 - s0, nc), dtype=np.int64)
        H[urow[a:b] - s0, hists.cat[a:b]] = hists.count[a:b]
        out, q, st = hide_many(H, sensitive=sensitive, distance=distance,
                               forbid_unvisited=forbid_unvisited, mitigation=mitigation, rng=rng)
        ok = st == ""
        parts.append(_full_domain_table(hists.users[s0:s1], cats, np.flatnonzero(ok), out))
        sm["size"].append(H.sum(axis=1))
        sm["sanitized_size"].append(np.where(ok, out.sum(axis=1), 0))
        sm["sensitive_visits"].append(H[:, sensitive].sum(axis=1))
        sm["quality_loss"].append(q)
        sm["status"].append(np.where(ok, "ok", "dropped"))
        sm["message"].append(st)
    table = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, dtype=str)
             for k in ("user", "category", "sanitized")}
    if not parts:
        table["sanitized"] = np.zeros(0, dtype=np.int64)
    summary = {"user": hists.users.astype(object)}
    for k, v in sm.items():
        summary[k] = np.concatenate(v) if v else np.zeros(0)
    summary["privacy_distance"] = np.full(nu, np.nan)
    summary["algorithm"] = np.where(summary["status"] == "ok", "convex-greedy", "")
    summary["exact"] = summary["status"] == "ok"
    summary["gap"] = np.where(summary["exact"], 0.0, np.nan)
    summary["message"] = summary["message"].astype(str)
    return BatchResult(table=table, summary={k: summary[k] for k in _SUMMARY},
                       runtime_s=time.perf_counter() - t0)


def sanitize_users(hists: UserHistograms, *, problem: str, sensitive: np.ndarray | None = None,
                   target: Any = None, progress=None, vectorized: bool = True,
                   bucket: int = 4096, **kw: Any) -> BatchResult:
    """Sanitize every user; users who cannot be sanitized are dropped, never failed.

    ``hide`` with ``method`` ``auto``/``convex`` runs vectorized over buckets of
    ``bucket`` users (:func:`veil.visits.hide.hide_many`, same answers as
    :func:`sanitize_one`); everything else calls :func:`sanitize_one` per user
    (``vectorized=False`` forces that path).

    Parameters
    ----------
    hists : UserHistograms
        Per-user histograms over the (public) domain ``hists.categories``.
    problem : {"hide", "resemble", "avoid"}
    sensitive : indices of the sensitive categories (hide)
    target : array of shape (bins,), array of shape (users, bins), or "self"
        The target of resemble/avoid: one profile for everyone, one per user
        (rows in the order of ``hists.users``), or each user's own histogram.
    **kw
        Passed to :func:`sanitize_one` (``distance``, ``quality_bound``,
        ``mitigation``, ``rng`` ...).

    Returns
    -------
    BatchResult
        ``table``: the publishable full-domain table; ``summary``: the PRIVATE
        per-user report.

    Notes
    -----
    Uniform policy: a user whose histogram cannot be sanitized (every visit
    sensitive; resemble/avoid: no histogram within the quality bound meets the
    threshold) gets status ``dropped`` in the private summary and **no rows**
    in the published table, whatever the reason; the original histogram is never
    published in its place.
    """
    check_choice(problem, "problem", ("hide", "resemble", "avoid"))
    if (vectorized and problem == "hide" and kw.get("method", "auto") in ("auto", "convex")
            and sensitive is not None):
        return _hide_buckets(hists, np.asarray(sensitive), bucket, **kw)
    t0 = time.perf_counter()
    if problem == "hide" and kw.get("mitigation") is not None:
        from ..random import make_rng

        kw["rng"] = make_rng(kw.get("rng"))
    nu, nc = hists.n_users, len(hists.categories)
    per_user = None
    if isinstance(target, str):
        if target != "self":
            raise ParameterError(f"target must be an array or 'self', got {target!r}")
    elif target is not None:
        arr = np.asarray(target, dtype=np.float64)
        if arr.ndim == 2:
            if arr.shape != (nu, nc):
                raise ParameterError(f"per-user targets must have shape ({nu}, {nc}), got "
                                     f"{arr.shape}")
            per_user = arr
    cats = np.asarray(hists.categories, dtype=object)
    out = np.zeros((nu, nc), dtype=np.int64)
    ok = np.zeros(nu, dtype=bool)
    sm = {k: [] for k in _SUMMARY}
    for u in range(nu):
        h = hists.dense(u)
        sens_visits = int(h[sensitive].sum()) if sensitive is not None else 0
        tu = h if isinstance(target, str) else (per_user[u] if per_user is not None else target)
        try:
            res = sanitize_one(h, problem=problem, sensitive=sensitive, target=tu, **kw)
        except (InfeasibleError, InstanceTooLargeError) as exc:
            vals = (hists.users[u], int(h.sum()), 0, sens_visits, np.nan, np.nan, "", False,
                    np.nan, "dropped", " ".join(str(exc).split()))
        except ParameterError as exc:  # e.g. an all-zero per-user target: same policy
            if per_user is None and not isinstance(target, str):
                raise
            vals = (hists.users[u], int(h.sum()), 0, sens_visits, np.nan, np.nan, "", False,
                    np.nan, "dropped", " ".join(str(exc).split()))
        else:
            out[u] = res.histogram
            ok[u] = True
            vals = (hists.users[u], int(h.sum()), res.size, sens_visits, res.quality_loss,
                    np.nan if res.privacy_value is None else res.privacy_value, res.algorithm,
                    res.exact, res.gap, "ok", "; ".join(res.notes))
        for k, v in zip(sm, vals):
            sm[k].append(v)
        if progress is not None:
            progress(u + 1, nu)
    table = _full_domain_table(hists.users, cats, np.flatnonzero(ok), out)
    summary = {k: np.asarray(v) for k, v in sm.items()}
    summary["user"] = np.array(sm["user"], dtype=object)  # numpy text drops a trailing NUL
    return BatchResult(table=table, summary=summary, runtime_s=time.perf_counter() - t0)


def write_table(columns: dict[str, np.ndarray], path: str | Path, fmt: str | None = None) -> Path:
    """Write columns to CSV, Parquet or JSON atomically (see :func:`veil.io.write_table`)."""
    from ..io import write_table as _write

    p = Path(path)
    if not p.parent.exists():
        raise ParameterError(f"output folder {str(p.parent)!r} does not exist")
    return _write(columns, p, format=fmt)
