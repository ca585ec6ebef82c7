"""Benchmarks of veil.maps (used by ``benchmarks/maps.py`` and ``veil bench maps``).

* :func:`accuracy_table`: the DPBench 2-D protocol (:mod:`veil.maps.evaluation`) on the two
  DPBench 2-D histograms and the held-out real maps, every mechanism side by side with the
  flattened-HB baseline, and ``auto``'s ratio to the best per setting.
* :func:`generate_points`: a synthetic point file of any size written by one streaming DuckDB
  ``COPY`` from ``range(n)`` with random functions (never held in memory).
* :func:`scale_run`: one timed job ``points -> published map`` in a fresh process (local
  DuckDB or Dask), reporting wall time and peak resident memory (the process's, plus the Dask
  workers').
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ..io import sql

__all__ = ["accuracy_table", "privtree_fraction_calibration", "generate_points", "scale_run", "machine_note", "format_rows",
           "training_shapes", "auto_runs"]


def machine_note() -> str:
    la = os.getloadavg()
    return (f"{os.cpu_count()} cores, load average {la[0]:.1f}/{la[1]:.1f}/{la[2]:.1f} "
            "(shared machine: compare ratios measured side by side)")


# --------------------------------------------------------------------------- accuracy
def format_rows(rows, methods) -> str:
    """A markdown table: one line per (dataset, eps, scale), scaled errors and ratios."""
    from .evaluation import summarize

    summ = summarize(rows)
    head = ["dataset", "eps", "scale", *methods, "best", "auto/best", "best/UG-AG",
            "best/hb-flat"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in sorted(summ, key=lambda k: (k[0], k[2], k[1])):
        e = summ[key]["errors"]
        best = summ[key]["best"]
        ugag = min(e.get("ug", np.inf), e.get("ag", np.inf))
        cells = [key[0], f"{key[1]:g}", f"{key[2]:.0e}",
                 *[f"{e[m]:.3g}" if m in e else "-" for m in methods], best or "-",
                 f"{summ[key]['auto_over_best']:.2f}" if summ[key]["auto_over_best"] else "-",
                 f"{e[best] / ugag:.2f}" if best and np.isfinite(ugag) else "-",
                 f"{e[best] / e['hb-flat']:.2f}" if best and "hb-flat" in e else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def accuracy_table(*, runs: int = 10, scales=(10**4, 10**6, 10**8), epsilons=(0.1, 1.0),
                   datasets: str = "all", methods=None, seed: int = 0, params=None,
                   side: int = 256, log=print):
    """Run the DPBench 2-D protocol; returns ``(rows, markdown)``.

    ``side``: the maps' grid (``side x side``; 256 is the protocol's). The point-file maps are
    rebuilt at that size; the 256 x 256 DPBench maps are summed into ``side x side`` blocks
    when ``side`` divides 256, and left out otherwise.

    ``datasets``: ``'dpbench'``, ``'real'`` (maps from the shared point files), ``'all'``
    (both) or ``'fresh'`` (the second set of maps from the point files, :func:`fresh_shapes`).
    ``params``: extra keyword arguments per method (e.g. ``{'auto': {'rule': ...}}`` to
    evaluate another rule on the same draws). Seeded: an experiment, not a release.
    """
    from ..random import make_rng
    from .api import MECHANISMS
    from .evaluation import evaluate, fresh_shapes, load_dpbench_2d, real_shapes

    methods = list(methods or (*MECHANISMS, "auto", "hb-flat"))
    shapes = {}
    if datasets in ("dpbench", "all"):
        if 256 % side == 0:
            k = 256 // side
            shapes.update({n: a.reshape(side, k, side, k).sum(axis=(1, 3))
                           for n, a in load_dpbench_2d().items()})
        else:
            log(f"# the DPBench maps are 256 x 256: left out at {side} x {side}")
    if datasets in ("real", "all"):
        shapes.update(real_shapes(side, side))
    if datasets == "fresh":
        shapes.update(fresh_shapes(side, side))
    log(f"# maps accuracy: {len(shapes)} maps ({', '.join(shapes)}), eps {list(epsilons)}, "
        f"scales {[f'{s:.0e}' for s in scales]}, {runs} runs, 2000 random rectangles; "
        f"{machine_note()}")
    t0 = time.perf_counter()
    rows = evaluate(shapes, methods=methods, epsilons=epsilons, scales=scales, runs=runs,
                    rng=make_rng(seed=seed), params=params, progress=lambda m: log(f"  {m}"))
    log(f"# took {time.perf_counter() - t0:.0f} s")
    return rows, format_rows(rows, methods)


# --------------------------------------------------------------------------- auto's fit
def training_shapes(quadrants: bool = True) -> dict[str, np.ndarray]:
    """The DPBench 2-D histograms and (``quadrants``) their four 128 x 128 quarters.

    The quarters are more DPBench 2-D data at another concentration (a quarter of the
    Gowalla check-in map holds one continent, a quarter of the Beijing map the centre or the
    outskirts): they give ``auto``'s fit maps of every kind. A quarter without points is left
    out.
    """
    from .evaluation import load_dpbench_2d

    out = {}
    for name, a in load_dpbench_2d().items():
        out[name] = a
        if quadrants:
            h, w = a.shape[0] // 2, a.shape[1] // 2
            for i, (r, c) in enumerate(((0, 0), (0, w), (h, 0), (h, w))):
                q = a[r:r + h, c:c + w]
                if q.sum() > 0:
                    out[f"{name}/q{i}"] = q
    return out


def _protocol_draws(shapes: dict[str, np.ndarray], *, scales, runs: int, queries: int, g,
                    progress=None):
    """The protocol's draws, in a fixed order from the generator ``g``: per shape its random
    rectangles, then per scale and run a resampled map. Yields ``(name, scale, run, x, err)``
    where ``err(v)`` is the scaled mean absolute error of an estimate ``v`` of ``x`` on the
    rectangles; ``progress`` is called after each (shape, scale)."""
    from .evaluation import random_rectangles, rectangle_answers, resample_map

    for name, shape in shapes.items():
        shp = np.asarray(shape)
        q = random_rectangles(*shp.shape, size=queries, rng=g)
        for scale in scales:
            for t in range(runs):
                x = resample_map(shp, int(scale), rng=g)
                ta = rectangle_answers(q, x)

                def err(v, ta=ta, scale=scale):
                    return float(np.mean(np.abs(ta - rectangle_answers(q, v))) / float(scale))
                yield name, scale, t, x, err
            if progress is not None:
                progress(f"{name} scale={scale:.0e}")


def auto_runs(shapes: dict[str, np.ndarray], *, epsilons=(0.1, 1.0), scales, runs: int,
              seed: int = 0, queries: int = 2000,
              reference=("ag", "privtree", "hdmm", "ug", "dawa2d"), progress=None
              ) -> list[dict]:
    """Per-run measurements for :func:`veil.maps.auto.fit_rule` (an experiment: seeded).

    For every shape, scale, run and epsilon (the DPBench 2-D protocol of
    :func:`veil.maps.evaluation.evaluate`): ``auto``'s selection stage as ``auto`` runs it
    (the noisy count and, always here, both features: the entropy, then the occupancy, each
    with ``FEATURE_FRACTION`` of eps, as ``auto`` buys one of them), the candidates' scaled
    errors at the budget ``auto`` would leave them (``ag_a``, ``privtree_a``, ``hdmm_a``,
    ``dawa2d_a`` after count and feature; ``hdmm_d`` is the same HDMM release, the budget of the
    high-signal branch) and the reference methods' errors at the full budget (common random
    numbers within a run).
    """
    from ..random import make_rng
    from .api import publish
    from .auto import (AUTO_SCALE_FRACTION, FEATURE_FRACTION, RULE, auto_selection,
                       occupancy_feature)

    g = make_rng(seed=seed)
    always = {**RULE, "hdmm_above": float("inf")}  # measure the entropy in every run
    out = []
    for name, scale, t, x, err in _protocol_draws(shapes, scales=scales, runs=runs,
                                                  queries=queries, g=g, progress=progress):
        for eps in epsilons:
            sel = auto_selection(x, epsilon=eps, sensitivity=1, rng=g, rule=always)
            n_est = float(sel["n"][0])
            occ = float(occupancy_feature(x, epsilon=FEATURE_FRACTION * eps, sensitivity=1,
                                          rng=g)[0])
            rest = eps * (1 - AUTO_SCALE_FRACTION - FEATURE_FRACTION)
            seed_r = int(g.integers(0, 2**63))
            rec = {"setting": (name, float(eps), int(scale)), "run": t,
                   "signal": float(sel["signal"][0]), "entropy": float(sel["entropy"][0]),
                   "occupancy": occ}
            for m in ("ag", "privtree", "hdmm", "dawa2d"):
                rec[f"{m}_a"] = err(publish(x, epsilon=rest, method=m, scale=n_est,
                                            rng=make_rng(seed=seed_r)).value)
            rec["hdmm_d"] = rec["hdmm_a"]
            for m in reference:
                rec[m] = err(publish(x, epsilon=eps, method=m, rng=make_rng(seed=seed_r)).value)
            out.append(rec)
    return out


def privtree_fraction_calibration(shapes: dict[str, np.ndarray], *,
                                  fractions=(0.2, 0.25, 0.3, 0.35, 0.4),
                                  shares=(0.3, 0.5, 0.7),
                                  epsilons=(0.1, 1.0), scales=(10**4, 10**5, 10**6, 10**7, 10**8),
                                  runs: int = 20, queries: int = 2000, seed: int = 21,
                                  log=print) -> dict:
    """PrivTree's error for each ``tree_fraction`` and ``internal_share`` on the maps (how
    :data:`veil.maps.privtree.TREE_FRACTION` and ``INTERNAL_SHARE`` were chosen; an
    experiment: seeded).

    Every pair runs on the same resampled maps with the same random-generator state (common
    random numbers). Per (eps, scale): the geometric mean over the maps of the mean scaled error
    with each pair, divided by the best pair's; a last row with each column's geometric mean
    over the settings (``overall``, the criterion) and one with its worst ratio (``worst``) on a
    single (map, eps, scale). Columns are labelled ``fraction/share``.

    Examples
    --------
    >>> x = np.zeros((16, 16), dtype=int); x[:4, :4] = 9; x[9, 12] = 4
    >>> out = privtree_fraction_calibration({"toy": x}, fractions=(0.3, 0.5), shares=(0.5,),
    ...                                     epsilons=(1.0,), scales=(1000,), runs=2,
    ...                                     log=lambda s: None)
    >>> sorted(out["overall"]), min(out["overall"].values())
    (['0.3/0.5', '0.5/0.5'], 1.0)
    """
    from ..random import make_rng
    from .privtree import privtree

    g = make_rng(seed=seed)
    fr = tuple(f"{float(f):g}/{float(h):g}" for f in fractions for h in shares)
    err: dict = {}
    for name, scale, _, x, error in _protocol_draws(
            shapes, scales=scales, runs=runs, queries=queries, g=g, progress=log):
        for eps in epsilons:
            run_seed = int(g.integers(0, 2**63))
            for f in fr:
                tf, sh = (float(v) for v in f.split("/"))
                v = privtree(x, epsilon=eps, tree_fraction=tf, internal_share=sh,
                             rng=make_rng(seed=run_seed)).value
                err.setdefault((name, float(eps), int(scale), f), []).append(error(v))
    mean = {k: float(np.mean(v)) for k, v in err.items()}
    lines = ["| eps x N (N / eps) | " + " | ".join(fr) + " | best |",
             "|---|" + "---|" * (len(fr) + 1)]
    cols: dict = {f: [] for f in fr}
    worst = {f: 1.0 for f in fr}
    for eps, scale in sorted({(e, s) for e in epsilons for s in scales},
                             key=lambda t: (t[0] * t[1], t[1])):
        geo = {f: float(np.exp(np.mean([np.log(mean[(n, float(eps), int(scale), f)])
                                        for n in shapes]))) for f in fr}
        best = min(geo, key=geo.get)
        for f in fr:
            cols[f].append(geo[f] / geo[best])
        for n in shapes:
            row = {f: mean[(n, float(eps), int(scale), f)] for f in fr}
            lo = min(row.values())
            for f in fr:
                worst[f] = max(worst[f], row[f] / lo)
        lines.append(f"| {eps * scale:g} ({scale:.0e} / {eps:g}) | "
                     + " | ".join(f"{geo[f] / geo[best]:.2f}" for f in fr) + f" | {best} |")
    overall = {f: float(np.exp(np.mean(np.log(v)))) for f, v in cols.items()}
    lines.append("| geometric mean over settings | "
                 + " | ".join(f"{overall[f]:.3f}" for f in fr) + " | |")
    lines.append("| worst (one map and setting) | "
                 + " | ".join(f"{worst[f]:.2f}" for f in fr) + " | |")
    table = "\n".join(lines)
    log(f"\n## privtree (maps): error / best (tree fraction / internal share)'s ({len(shapes)} "
        f"maps, {runs} runs, {queries} random rectangles)\n" + table)
    return {"table": table, "overall": overall, "worst": worst,
            "errors": [{"map": k[0], "epsilon": k[1], "scale": k[2], "setting": k[3],
                        "errors": v} for k, v in err.items()]}


# --------------------------------------------------------------------------- scale
def generate_points(path, n: int, *, users: int = 100_000, region: str = "nyc",
                    seed: float = 0.42, row_group_size: int = 1_000_000) -> Path:
    """Write ``n`` synthetic points (``user, lat, lon``) to a Parquet file, streaming.

    One DuckDB ``COPY (SELECT ... FROM range(n)) TO ... (FORMAT parquet)``: 70 % of the points
    around 24 Gaussian "hot spots" (Box-Muller from ``random()``), 30 % uniform over the
    region's box; user ``i % users``. Memory stays bounded (DuckDB streams the copy).
    """
    import duckdb

    from .grid import region_bbox

    s, w, nn, e = region_bbox(region)
    g = np.random.default_rng(7)  # hot-spot layout (synthetic data, not noise)
    cy = g.uniform(s, nn, 24)
    cx = g.uniform(w, e, 24)
    sd = g.uniform(0.002, 0.02, 24)
    arr = lambda v: "[" + ", ".join(repr(float(x)) for x in v) + "]"  # noqa: E731
    path = Path(os.fspath(path))
    con = duckdb.connect()
    try:
        con.execute("SET preserve_insertion_order = false")
        con.execute(f"SELECT setseed({float(seed)!r})")
        q = f"""
        SELECT i % {int(users)} AS user,
               CASE WHEN hot THEN least(greatest({arr(cy)}[k] + {arr(sd)}[k] * z1, {s!r}), {nn!r})
                    ELSE {s!r} + random() * {nn - s!r} END AS lat,
               CASE WHEN hot THEN least(greatest({arr(cx)}[k] + {arr(sd)}[k] * z2, {w!r}), {e!r})
                    ELSE {w!r} + random() * {e - w!r} END AS lon
        FROM (SELECT i, random() < 0.7 AS hot, 1 + CAST(floor(random() * 24) AS INTEGER) AS k,
                     sqrt(-2 * ln(1 - random())) AS r, 2 * pi() * random() AS a
              FROM range({int(n)}) t(i)) q,
             LATERAL (SELECT r * cos(a) AS z1, r * sin(a) AS z2)
        """
        con.execute(f"COPY ({q}) TO {sql.target(path)} (FORMAT parquet, ROW_GROUP_SIZE "
                    f"{int(row_group_size)})")
    finally:
        con.close()
    return path


_CHILD = r"""
import json, resource, sys, time, warnings
spec = json.loads(sys.argv[1])
from veil.maps import MapGrid, publish_points
from veil.random import make_rng
g = MapGrid.from_region(spec["region"], spec["rows"], spec["cols"])
kw = dict(protects=spec["protects"])
if spec["protects"] == "user":
    kw.update(user="user", max_points=spec["max_points"])
extra = {}
cluster = None
if spec["engine"] == "dask":
    warnings.simplefilter("ignore")
    from distributed import Client, LocalCluster
    from distributed.security import Security
    sec = Security.temporary()
    cluster = LocalCluster(n_workers=spec["workers"], threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit="2GB", security=sec,
                           protocol="tls://", host="127.0.0.1")
    extra = dict(engine="dask", scheduler=cluster.scheduler_address, security=sec)
from veil.maps import publish
from veil.maps.points import grid_counts
if spec["method"] == "hdmm":  # the public strategy is computed (or loaded) once per size
    from veil.maps.hdmm import strategy_for
    t0 = time.perf_counter(); strategy_for(spec["rows"]); strategy_for(spec["cols"])
    strategy_s = time.perf_counter() - t0
else:
    strategy_s = 0.0
t0 = time.perf_counter()
if spec["engine"] == "dask":
    from veil.maps.dask import grid_counts_dask
    pc = grid_counts_dask(spec["path"], g, rng=make_rng(seed=1), scheduler=extra["scheduler"],
                          security=extra["security"], memory_limit=spec["memory_limit"], **kw)
else:
    pc = grid_counts(spec["path"], g, rng=make_rng(seed=1), memory_limit=spec["memory_limit"],
                     **kw)
count_s = time.perf_counter() - t0
t1 = time.perf_counter()
rel = publish(pc.counts, epsilon=1.0, method=spec["method"], sensitivity=pc.sensitivity,
              rng=make_rng(seed=2))
mech_s = time.perf_counter() - t1
dt = count_s + mech_s
workers_mb = []
if cluster is not None:
    c = Client(cluster, security=sec)
    workers_mb = list(c.run(lambda: __import__("resource").getrusage(
        __import__("resource").RUSAGE_SELF).ru_maxrss / 1024).values())
    c.close(); cluster.close()
print(json.dumps({"seconds": dt, "count_s": count_s, "mechanism_s": mech_s,
                  "strategy_s": strategy_s, "points_counted": int(pc.counts.sum()), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "workers_peak_mb": workers_mb, "shape": list(rel.value.shape),
                  "mechanism": rel.mechanism}))
"""


def scale_run(path, *, engine: str = "local", protects: str = "record", max_points: int = 50,
              rows: int = 1024, cols: int = 1024, region: str = "nyc", method: str = "hdmm",
              workers: int = 2, memory_limit: str = "1GB") -> dict:
    """One job ``points -> 1024 x 1024 map`` in a fresh Python process; time and peak memory.

    Peak memory is the child process's maximum resident set (``ru_maxrss``: DuckDB's buffers,
    the grid and the mechanism), plus, for Dask, each worker's maximum resident set.
    """
    spec = {"path": str(path), "engine": engine, "protects": protects,
            "max_points": max_points, "rows": rows, "cols": cols, "region": region,
            "method": method, "workers": workers, "memory_limit": memory_limit}
    src = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(spec)], capture_output=True,
                         text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"scale run failed: {out.stderr[-2000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res.update(spec)
    res["total_peak_mb"] = res["peak_mb"] + sum(res["workers_peak_mb"])
    return res
