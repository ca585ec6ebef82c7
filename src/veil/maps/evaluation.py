"""The DPBench 2-D protocol for maps (Hay et al., SIGMOD 2016), and held-out real maps.

Protocol: for each dataset *shape* (a 2-D histogram, normalised), target scale and epsilon,
draw a map of ``scale`` points from the shape (multinomial), run each mechanism, and measure
the *scaled mean absolute error* over a workload of random rectangles,
``mean_q |W x - W x_hat| / scale``, averaged over runs. A random rectangle takes two cells
drawn uniformly per axis and covers the cells between them (inclusive). One re-sampled map per
(dataset, scale, run) and one workload per grid shape are shared by all methods, so the methods
are compared on the same inputs.

Datasets: the two 256 x 256 DPBench 2-D histograms (``../shared/data/dpbench-2d``: Gowalla
check-ins and Beijing taxi trips) and held-out maps built here from real point data with
veil's own DuckDB pipeline (:func:`real_shapes`): Gowalla check-ins over the contiguous US,
Foursquare NYC check-ins over New York City, GeoLife GPS points inside Beijing's 4th ring.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..datasets import shared_data_path
from ..errors import ParameterError
from ..random import make_rng
from ..validation import check_int
from ._blocks import prefix2d, rect_sums

__all__ = ["DPBENCH_2D", "load_dpbench_2d", "random_rectangles", "rectangle_answers",
           "scaled_error", "resample_map", "real_shapes", "fresh_shapes", "flat_hb", "evaluate",
           "EvalRow", "summarize"]

#: file stems of the two DPBench 2-D histograms (256 x 256)
DPBENCH_2D = ("checkin_256_256", "BeijingTaxiE_256_256")


def load_dpbench_2d(names=None) -> dict[str, np.ndarray]:
    """Read the DPBench 2-D histograms in place from the shared data folder (int64 counts)."""
    names = DPBENCH_2D if names is None else tuple(names)
    out = {}
    for name in names:
        if name not in DPBENCH_2D:
            raise ParameterError(f"unknown DPBench 2-D dataset {name!r}; known: "
                                 f"{', '.join(DPBENCH_2D)}")
        arr = np.load(shared_data_path("dpbench-2d", f"{name}.npy"))
        out[name] = np.rint(arr).astype(np.int64)
    return out


def random_rectangles(rows: int, cols: int, *, size: int = 2000, rng=None) -> np.ndarray:
    """``size`` random rectangles ``[y0, y1) x [x0, x1)`` as an int64 array ``(size, 4)``.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> q = random_rectangles(8, 8, size=3, rng=make_rng(seed=0))
    >>> bool(((q[:, 0] < q[:, 1]) & (q[:, 2] < q[:, 3])).all() and q[:, [1, 3]].max() <= 8)
    True
    """
    rows = check_int(rows, "rows", minimum=1)
    cols = check_int(cols, "cols", minimum=1)
    size = check_int(size, "size", minimum=1)
    g = make_rng(rng)
    ys = np.sort(g.integers(0, rows, size=(size, 2)), axis=1)
    xs = np.sort(g.integers(0, cols, size=(size, 2)), axis=1)
    return np.column_stack((ys[:, 0], ys[:, 1] + 1, xs[:, 0], xs[:, 1] + 1)).astype(np.int64)


def rectangle_answers(queries: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Answers of the rectangles on a map (or a batch ``(..., rows, cols)`` of maps)."""
    q = np.asarray(queries, dtype=np.int64)
    P = prefix2d(np.asarray(x, dtype=np.float64))
    return rect_sums(P, q[:, 0], q[:, 1], q[:, 2], q[:, 3])


def scaled_error(queries, x_true, x_est, *, scale: float | None = None) -> float:
    """DPBench scaled error ``mean |W x - W x_hat| / scale`` (scale: the true number of points).

    Examples
    --------
    >>> q = np.array([[0, 1, 0, 2]])
    >>> scaled_error(q, [[5, 5], [0, 0]], [[6, 5], [0, 0]])
    0.1
    """
    xt = np.asarray(x_true, dtype=np.float64)
    s = float(xt.sum()) if scale is None else float(scale)
    if s <= 0:
        raise ParameterError(f"scale must be > 0, got {s}")
    return float(np.mean(np.abs(rectangle_answers(queries, xt)
                                - rectangle_answers(queries, x_est))) / s)


def resample_map(shape: np.ndarray, scale: int, *, rng=None) -> np.ndarray:
    """A map of ``scale`` points drawn from the normalised ``shape`` (multinomial)."""
    c = np.asarray(shape, dtype=np.float64)
    scale = check_int(scale, "scale", minimum=1)
    p = c.ravel() / c.sum()
    return make_rng(rng).multinomial(scale, p).reshape(c.shape).astype(np.int64)


def flat_hb(counts, *, epsilon, sensitivity: int = 1, rng=None):
    """The baseline veil had before maps: 1-D HB on the row-major flattened grid.

    eps-DP by :func:`veil.histograms.hb` (run with ``epsilon / sensitivity``: group privacy).
    """
    from ..histograms import hb

    x = np.asarray(counts, dtype=np.int64)
    rel = hb(x.ravel(), epsilon=epsilon / sensitivity, rng=rng)
    return rel.value.reshape(x.shape)


# --------------------------------------------------------------------------- real held-out maps
#: (name, region, reader) of the held-out maps built from real points (256 x 256 each)
REAL = (("gowalla-conus", "conus"), ("foursquare-nyc", "nyc"),
        ("geolife-beijing", "beijing-4th-ring"))


def _point_file_map(source: str, grid) -> np.ndarray:
    """True counts (record level) of one shared point file on ``grid``: ``'gowalla'`` (the
    10,000 check-ins of ``gowalla/gowalla_events_10k.tsv``), ``'foursquare'`` (the 44,808 NYC
    check-ins of ``foursquare-nyc/foursquare_nyc.csv``) or ``'geolife'`` (the 164,531 GPS
    points of the 111 ``.plt`` files of ``geolife/geolife_long_10_MB``)."""
    from .points import grid_counts, read_geolife_plt

    if source == "gowalla":
        return grid_counts(shared_data_path("gowalla", "gowalla_events_10k.tsv"), grid,
                           lat="column2", lon="column3", protects="record", csv_header=False,
                           delimiter="\t").counts
    if source == "foursquare":
        return grid_counts(shared_data_path("foursquare-nyc", "foursquare_nyc.csv"), grid,
                           lat="lat", lon="lon", protects="record").counts
    return read_geolife_plt(shared_data_path("geolife", "geolife_long_10_MB"), grid)


def real_shapes(rows: int = 256, cols: int = 256) -> dict[str, np.ndarray]:
    """2-D histograms from the real point files in ``../shared/data`` (held out until
    2026-12-06, now part of ``auto``'s training maps).

    Each is the count of every point in a public region's ``rows x cols`` grid, computed with
    :func:`veil.maps.points.grid_counts` (record level, no noise: these are *shapes* to
    re-sample from, like the DPBench histograms): Gowalla over the contiguous US (``conus``),
    Foursquare over ``nyc``, GeoLife inside ``beijing-4th-ring`` (:func:`_point_file_map`).
    """
    from .grid import MapGrid

    return {"gowalla-conus": _point_file_map("gowalla", MapGrid.from_region("conus", rows, cols)),
            "foursquare-nyc": _point_file_map("foursquare",
                                              MapGrid.from_region("nyc", rows, cols)),
            "geolife-beijing": _point_file_map(
                "geolife", MapGrid.from_region("beijing-4th-ring", rows, cols))}


#: the box of :func:`fresh_shapes`' wider Beijing map (greater Beijing, well beyond the 4th ring;
#: fixed before any measurement on it)
BEIJING_WIDE = (39.6, 115.9, 40.3, 116.9)


def fresh_shapes(rows: int = 256, cols: int = 256) -> dict[str, np.ndarray]:
    """A second set of maps from the same point files, over other public boxes.

    Declared (2026-12-06) before any mechanism or rule was run on them, to check blind the rule
    fitted before that day: Foursquare over ``manhattan``, Gowalla over ``world`` and GeoLife
    over :data:`BEIJING_WIDE`. They share points with :func:`real_shapes` but not the maps.
    """
    from .grid import MapGrid

    return {"foursquare-manhattan": _point_file_map(
                "foursquare", MapGrid.from_region("manhattan", rows, cols)),
            "gowalla-world": _point_file_map("gowalla", MapGrid.from_region("world", rows, cols)),
            "geolife-beijing-wide": _point_file_map("geolife", MapGrid(*BEIJING_WIDE, rows, cols))}


# --------------------------------------------------------------------------- evaluation
@dataclass
class EvalRow:
    dataset: str
    method: str
    epsilon: float
    scale: int
    errors: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    chosen: list[str] = field(default_factory=list)

    @property
    def error(self) -> float:
        return float(np.mean(self.errors))

    def to_dict(self) -> dict:
        from collections import Counter

        return {"dataset": self.dataset, "method": self.method, "epsilon": self.epsilon,
                "scale": self.scale, "error": self.error,
                "error_sem": float(np.std(self.errors, ddof=1) / np.sqrt(len(self.errors)))
                if len(self.errors) > 1 else 0.0,
                "runs": len(self.errors), "seconds_median": float(np.median(self.seconds)),
                "chosen": dict(Counter(self.chosen))}


def _run(method: str, x: np.ndarray, eps: float, scale_known: bool, rng, params: dict):
    from .api import publish

    if method == "hb-flat":
        return flat_hb(x, epsilon=eps, rng=rng), "hb-flat"
    extra = dict(params.get(method, {}))
    if scale_known and method in ("ug", "ag", "auto"):
        extra["scale"] = float(x.sum())
    rel = publish(x, epsilon=eps, method=method, rng=rng, **extra)
    return rel.value, rel.parameters.get("chosen", rel.mechanism)


def evaluate(shapes: dict[str, np.ndarray], *, methods, epsilons=(0.1, 1.0),
             scales=(10**4, 10**6, 10**8), runs: int = 10, queries: int = 2000,
             scale_known: bool = False, params: dict | None = None, rng=None,
             progress=None) -> list[EvalRow]:
    """Run every method on every shape, scale, epsilon and run (see the module docstring).

    Within a run, every method starts from the same random-generator state (common random
    numbers): ``auto`` then reproduces exactly the release of the method it picks whenever
    that method draws the same numbers (e.g. AG after the same noisy count).

    ``scale_known=False`` (default) lets UG, AG and ``auto`` spend 5 % of epsilon on a noisy
    number of points, as a user without a public count would; ``True`` gives them the true
    number (DPBench's side-information setting). ``params`` maps a method to extra keyword
    arguments. ``'hb-flat'`` is the 1-D HB baseline on the flattened grid.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> rows = evaluate({"toy": np.ones((8, 8))}, methods=["identity", "ug"], epsilons=[1.0],
    ...                 scales=[1000], runs=2, rng=make_rng(seed=0))
    >>> sorted(r.method for r in rows), len(rows[0].errors)
    (['identity', 'ug'], 2)
    """
    runs = check_int(runs, "runs", minimum=1)
    g = make_rng(rng)
    params = params or {}
    out: dict[tuple, EvalRow] = {}
    wl: dict[tuple, np.ndarray] = {}
    for dname, shape in shapes.items():
        shp = np.asarray(shape)
        key = shp.shape
        if key not in wl:
            wl[key] = random_rectangles(*key, size=queries, rng=g)
        q = wl[key]
        for scale in scales:
            for t in range(runs):
                x = resample_map(shp, int(scale), rng=g)
                true_ans = rectangle_answers(q, x)
                for eps in epsilons:
                    # common random numbers: every method of this run starts from the same
                    # generator state (a method that makes the same draws as another gets
                    # the same noise), which sharpens the comparison of methods
                    run_seed = int(g.integers(0, 2**63))
                    for m in methods:
                        child = make_rng(seed=run_seed)
                        t0 = time.perf_counter()
                        est, chosen = _run(m, x, float(eps), scale_known, child, params)
                        dt = time.perf_counter() - t0
                        err = float(np.mean(np.abs(true_ans - rectangle_answers(q, est)))
                                    / float(scale))
                        row = out.setdefault((dname, m, float(eps), int(scale)),
                                             EvalRow(dname, m, float(eps), int(scale)))
                        row.errors.append(err)
                        row.seconds.append(dt)
                        row.chosen.append(chosen)
                if progress is not None:
                    progress(f"{dname} scale={scale:.0e} run {t + 1}/{runs}")
    return list(out.values())


def summarize(rows: list[EvalRow]) -> dict:
    """Per (dataset, epsilon, scale): each method's error, the best method and ``auto / best``."""
    out: dict = {}
    for r in rows:
        out.setdefault((r.dataset, r.epsilon, r.scale), {})[r.method] = r.error
    summ = {}
    for key, errs in out.items():
        cand = {m: e for m, e in errs.items() if m not in ("auto", "hb-flat")}
        best = min(cand, key=cand.get) if cand else None
        summ[key] = {"errors": errs, "best": best,
                     "auto_over_best": errs["auto"] / cand[best]
                     if best and "auto" in errs and cand[best] > 0 else None}
    return summ
