"""From a point file to a published map in one call: bound, count, publish."""

from __future__ import annotations

import dataclasses

from ..random import make_rng
from ..release import Release
from ..validation import check_choice
from .api import publish
from .grid import MapGrid
from .points import grid_counts

__all__ = ["publish_points", "ENGINES", "unit_text"]

ENGINES = ("local", "dask")


def unit_text(protects: str, max_points: int | None, user: str | None) -> str:
    """The protected unit in plain words (stated in every map release)."""
    if protects == "user":
        return (f"one person (column {user!r}): neighbouring inputs differ by all the points "
                f"of one person, of which at most {max_points} are kept (sampled uniformly)")
    return "one point (record): neighbouring inputs differ by one row of the input"


def publish_points(path, grid: MapGrid, *, epsilon, method: str = "auto", lat: str = "lat",
                   lon: str = "lon", user: str | None = None, time: str | None = None,
                   protects: str = "user", max_points: int | None = None, start=None,
                   end=None, scale: float | None = None, engine: str = "local",
                   workers: int = 2, scheduler: str | None = None, security=None, rng=None,
                   format: str | None = None, delimiter: str | None = None,
                   memory_limit: str = "1GB", threads: int | None = None,
                   **params) -> Release:
    """Publish an eps-DP map of the points in a file (per-person bounding, then a mechanism).

    Steps: (1) :func:`veil.maps.points.grid_counts` (or its Dask twin, ``engine='dask'``)
    streams the file through DuckDB and counts the points of every cell of ``grid``, keeping at
    most ``max_points`` points per person (``protects='user'``); (2) :func:`veil.maps.publish`
    releases the counts with sensitivity ``max_points`` (or 1 per record).

    Why it is eps-DP: step (1) maps neighbouring inputs (one person more or less) to count
    grids at L1 distance at most ``max_points`` (a person's kept points depend only on their own
    points and the secret salt); step (2) is eps-DP at that distance. Nothing else about the
    data is released: the number of points read, outside the box or removed by the bound is
    not part of the release.

    Parameters
    ----------
    path : path
        CSV/TSV, Parquet or JSON points (``engine='dask'``: Parquet).
    grid : MapGrid
        Public grid (see :class:`veil.maps.MapGrid`, :data:`veil.maps.REGIONS`).
    epsilon : float or PureDP
    method : str
        A mechanism of :data:`veil.maps.METHODS`, or ``'auto'``.
    lat, lon, user, time, protects, max_points, start, end
        See :func:`veil.maps.points.grid_counts`.
    scale : float, optional
        Public number of points for the grid-size rules (else a noisy count, 5 % of epsilon).
    engine : {'local', 'dask'}
    workers, scheduler, security
        Dask: local workers (a TLS cluster on 127.0.0.1), or the address of an existing
        scheduler and its ``distributed.security.Security``.
    rng : numpy.random.Generator, optional
    format, delimiter, memory_limit, threads
        Input and DuckDB options.
    **params
        Passed to the mechanism.

    Returns
    -------
    Release
        ``value``: the ``rows x cols`` estimate; ``parameters`` record the grid, the protected
        unit, the bound and the input's public description.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from veil.random import make_rng
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
    >>> _ = f.write_text("user,lat,lon\\n" + "".join(f"u{i % 7},{0.1 + (i % 9) / 10},"
    ...                  f"{0.05 + (i % 5) / 5}\\n" for i in range(200)))
    >>> r = publish_points(f, MapGrid(0, 0, 1, 1, rows=8, cols=8), epsilon=1.0,
    ...                    method="identity", user="user", max_points=10, rng=make_rng(seed=0))
    >>> r.parameters["protects"], r.parameters["sensitivity"], r.value.shape
    ('user', 10, (8, 8))
    """
    engine = check_choice(engine, "engine", ENGINES)
    g = make_rng(rng)
    g_sample, g_mech = g.spawn(2)
    kw = dict(lat=lat, lon=lon, user=user, time=time, protects=protects,
              max_points=max_points, start=start, end=end, rng=g_sample)
    if engine == "local":
        pc = grid_counts(path, grid, format=format, delimiter=delimiter,
                         memory_limit=memory_limit, threads=threads, **kw)
    else:
        from .dask import grid_counts_dask

        pc = grid_counts_dask(path, grid, workers=workers, scheduler=scheduler,
                              security=security, **kw)
    rel = publish(pc.counts, epsilon=epsilon, method=method, sensitivity=pc.sensitivity,
                  scale=scale, rng=g_mech, **params)
    unit = unit_text(pc.protects, pc.max_points, user)
    return dataclasses.replace(
        rel, protects=pc.protects,  # the sidecar's top-level unit (it said "record" per user)
        parameters={**rel.parameters, "grid": grid.to_dict(), "protects": pc.protects,
                         "max_points": pc.max_points, "unit": unit, "input": pc.source,
                         "engine": engine},
        notes=(*rel.notes, f"protects {unit}"))
