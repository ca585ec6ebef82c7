"""Geo-indistinguishability benchmarks, side by side in one process.

1. Speed: obfuscate 10^6 points with veil's vectorized planar Laplace against the usual
   per-point Python loop (uniform angle, Lambert-W inverse CDF of the radius via
   scipy.special.lambertw, great-circle destination with the math module).
2. LP baseline (Bordenabe et al. CCS 2014, HiGHS): full LP vs greedy spanner on growing
   k x k grids (time limit 60 s each); size and time; the size where the full LP exceeds
   60 s; comparison of the LP optimum with continuous planar Laplace (2/eps), planar
   Laplace snapped to the grid, and snapped planar Laplace + the optimal remap.
5. Optimal remapping of planar Laplace on held-out GeoLife users (--only-remap).

Usage: PYTHONPATH=src python benchmarks/geo.py [--quick] [--n 1000000] [--repeats 5]
The machine is shared (2 cores, several engineers): compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import time

import numpy as np
from scipy.special import lambertw

from veil.errors import InstanceTooLargeError
from veil.geo.geoind import planar_laplace
from veil.geo.geometry import Grid
from veil.geo.lp import optimal_mechanism_lp
from veil.geo.metrics import expected_loss_of_channel


def baseline_loop(points, eps: float, seed: int = 0):
    """The usual implementation: one point at a time, Lambert-W inverse CDF for the radius."""
    rnd = random.Random(seed)
    R = 6_371_008.8
    out = []
    for lat, lon in points:
        theta = rnd.random() * 2 * math.pi
        p = rnd.random()
        r = -(lambertw((p - 1) / math.e, k=-1).real + 1) / eps
        d = r / R
        la, lo = math.radians(lat), math.radians(lon)
        lat2 = math.asin(math.sin(la) * math.cos(d) + math.cos(la) * math.sin(d) * math.cos(theta))
        lon2 = lo + math.atan2(math.sin(theta) * math.sin(d) * math.cos(la),
                               math.cos(d) - math.sin(la) * math.sin(lat2))
        out.append((math.degrees(lat2), math.degrees(lon2)))
    return out


def bench_speed(n: int, repeats: int, baseline_repeats: int) -> dict:
    rng = np.random.default_rng(0)
    pts = np.column_stack((rng.uniform(39.8, 40.0, n), rng.uniform(116.2, 116.5, n)))
    planar_laplace(pts[:50_000], epsilon=0.01, rng=rng)  # JIT warm-up (numba, cached)
    vt = []
    for _ in range(repeats):
        t = time.perf_counter()
        planar_laplace(pts, epsilon=0.01, rng=rng)
        vt.append(time.perf_counter() - t)
    bt = []
    plist = pts.tolist()
    for _ in range(baseline_repeats):
        t = time.perf_counter()
        baseline_loop(plist, 0.01)
        bt.append(time.perf_counter() - t)
    v, b = statistics.median(vt), statistics.median(bt)
    print(f"\n## 1. Planar Laplace on {n:,} points (median of {repeats} veil runs, "
          f"{baseline_repeats} baseline runs)")
    print("| implementation | seconds | points/s |")
    print("|---|---:|---:|")
    print(f"| veil planar_laplace (vectorized, numba kernel) | {v:.3f} | {n / v:,.0f} |")
    print(f"| per-point Python loop + Lambert-W | {b:.2f} | {n / b:,.0f} |")
    print(f"speed ratio: **{b / v:.1f}x**")
    print(f"individual runs (s): veil {', '.join(f'{x:.3f}' for x in vt)}; baseline "
          f"{', '.join(f'{x:.2f}' for x in bt)}")
    return {"veil_s": v, "baseline_s": b, "ratio": b / v}


def snapped_laplace_channel(X: np.ndarray, grid: Grid, eps: float, m: int, rng) -> np.ndarray:
    """Monte Carlo channel of planar Laplace snapped to the nearest grid centre (clamped)."""
    n = len(X)
    K = np.zeros((n, grid.n_cells))
    for i in range(n):
        th = rng.uniform(0, 2 * np.pi, m)
        r = rng.gamma(2.0, 1 / eps, m)
        z = X[i] + np.column_stack((r * np.cos(th), r * np.sin(th)))
        ix, iy = grid.cell_ij(z)
        ix = np.clip(ix, 0, grid.nx - 1)
        iy = np.clip(iy, 0, grid.ny - 1)
        K[i] = np.bincount(iy * grid.nx + ix, minlength=grid.n_cells) / m
    return K


def optimal_remap_loss(K: np.ndarray, prior: np.ndarray, X: np.ndarray) -> float:
    """Expected loss after remapping each output to the guess minimizing expected loss (post-processing)."""
    D = np.hypot(X[:, None, 0] - X[None, :, 0], X[:, None, 1] - X[None, :, 1])
    joint = prior[:, None] * K               # (n inputs, outputs)
    cost = joint.T @ D                       # cost of reporting point g after output z
    return float(cost.min(axis=1).sum())


def bench_lp(sizes: list[int], span_sizes: list[int], eps: float, step: float,
             time_limit: float) -> list[dict]:
    print(f"\n## 2. LP optimum (HiGHS) vs spanner vs continuous noise; eps = {eps}/m, "
          f"grid step {step:g} m, uniform prior, distance loss, time limit {time_limit:g} s")
    print("| grid | points | LP | variables | constraints | solve s | expected loss (m) | "
          "PL continuous 2/eps | PL snapped | PL snapped + remap |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    rng = np.random.default_rng(1)
    full_failed_at = None
    for k in sorted(set(sizes) | set(span_sizes)):
        g = Grid(0.0, 0.0, k * step, k * step, k, k)
        X = g.centers
        pi = np.full(len(X), 1 / len(X))
        K = snapped_laplace_channel(X, g, eps, 40_000, rng)
        snapped = expected_loss_of_channel(K, pi, X, X)
        remap = optimal_remap_loss(K, pi, X)
        for kind, dil in (("full", None), ("spanner 1.1", 1.1)):
            if (kind == "full" and (k not in sizes or full_failed_at is not None)) or \
               (kind != "full" and k not in span_sizes):
                continue
            try:
                m = optimal_mechanism_lp(X, epsilon=eps, spanner_dilation=dil,
                                         time_limit=time_limit)
                s = m.summary()
                rows.append({"k": k, "kind": kind, **s, "snapped": snapped, "remap": remap})
                print(f"| {k}x{k} | {k * k} | {kind} | {s['n_variables']:,} | "
                      f"{s['n_constraints']:,} | {s['solve_seconds']:.2f} | "
                      f"{s['expected_loss']:.1f} | {2 / eps:.1f} | {snapped:.1f} | {remap:.1f} |",
                      flush=True)
            except InstanceTooLargeError as exc:
                print(f"| {k}x{k} | {k * k} | {kind} | {k ** 4:,} | - | > {time_limit:g} | "
                      f"(time limit) | {2 / eps:.1f} | {snapped:.1f} | {remap:.1f} |", flush=True)
                rows.append({"k": k, "kind": kind, "timeout": True, "message": str(exc)})
                if kind == "full":
                    full_failed_at = k
    both = [r["k"] for r in rows if r["kind"] == "full" and not r.get("timeout")]
    if both:
        kmax = max(both)
        f = next(r for r in rows if r["k"] == kmax and r["kind"] == "full")
        s = next((r for r in rows if r["k"] == kmax and r["kind"] != "full"
                  and not r.get("timeout")), None)
        if s is not None:
            print(f"\nlargest grid both solve: {kmax}x{kmax}: spanner speed-up "
                  f"{f['solve_seconds'] / s['solve_seconds']:.1f}x, loss ratio "
                  f"{s['expected_loss'] / f['expected_loss']:.4f} (spanner / full)")
    if full_failed_at is not None:
        print(f"full LP exceeded {time_limit:g} s first at {full_failed_at}x{full_failed_at} "
              f"({full_failed_at ** 2} points, {full_failed_at ** 4:,} variables, "
              f"{full_failed_at ** 2 * (full_failed_at ** 2 - 1) * full_failed_at ** 2 + full_failed_at ** 2:,} constraints)")
    return rows


def bench_eps_sweep(k: int, step: float, epss: list[float]) -> list[dict]:
    """LP (spanner 1.1) vs snapped planar Laplace on one grid as eps * step grows."""
    print(f"\n## 3. LP optimum vs snapped planar Laplace on a {k}x{k} grid (step {step:g} m) "
          f"as eps grows (spanner LP, dilation 1.1)")
    print("| eps (1/m) | eps x step | LP spanner loss (m) | PL snapped (m) | PL snapped + remap (m) "
          "| PL continuous 2/eps (m) | remap / LP |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    g = Grid(0.0, 0.0, k * step, k * step, k, k)
    X = g.centers
    pi = np.full(len(X), 1 / len(X))
    rng = np.random.default_rng(2)
    out = []
    for eps in epss:
        m = optimal_mechanism_lp(X, epsilon=eps, spanner_dilation=1.1)
        K = snapped_laplace_channel(X, g, eps, 40_000, rng)
        snapped = expected_loss_of_channel(K, pi, X, X)
        remap = optimal_remap_loss(K, pi, X)
        print(f"| {eps:g} | {eps * step:g} | {m.expected_loss:.1f} | {snapped:.1f} | {remap:.1f} "
              f"| {2 / eps:.1f} | {remap / m.expected_loss:.3f} |", flush=True)
        out.append({"eps": eps, "lp": m.expected_loss, "snapped": snapped, "remap": remap})
    return out


def bench_optimal_noise() -> None:
    """The optimal member of the tight family for several losses (geo and (D, eps))."""
    from veil.geo.lprivacy import (PlanarLaplace, TightNoise, custom_loss, d_epsilon_privacy,
                                   distance_loss, expected_loss, geo_indistinguishability,
                                   optimal_noise, power_loss, squared_loss, threshold_loss)

    print("\n## 4. Optimal noise search (tight family: flat core + steepest decay allowed by l)")
    print("| privacy | loss | best core (m) | best slope | expected loss | error bound | "
          "planar Laplace / core=0 staircase | best member with core > 0.05 scale or slope < 1 | "
          "members tried | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    losses = [distance_loss(), squared_loss(), power_loss(3), threshold_loss(150.0),
              custom_loss(lambda d: np.minimum(d, 300.0), scale=100.0, name="min(d,300)",
                          breakpoints=[300.0])]
    for l in (geo_indistinguishability(0.01), d_epsilon_privacy(100.0, 1.0)):
        for L in losses:
            t = time.perf_counter()
            o = optimal_noise(l, L)
            took = time.perf_counter() - t
            ref_noise = PlanarLaplace(0.01) if l.kind == "geo" else TightNoise(l, core=0.0)
            ref = expected_loss(ref_noise, L).value
            others = o.candidates[(o.candidates[:, 0] > 0.05 * l.scale) | (o.candidates[:, 1] < 1)]
            alt = float(others[:, 2].min()) if len(others) else float("nan")
            print(f"| {l.name} | {L.name} | {o.core:.2f} | {o.slope:g} | "
                  f"{o.expected_loss.value:.6g} | {o.expected_loss.error:.2g} | {ref:.6g} | "
                  f"{alt:.6g} | {len(o.candidates)} | {took:.2f} |", flush=True)


def bench_remap_heldout(epss: list[float], n_points: int, seed: int = 7,
                        grid_n: int = 50, in_sample: bool = False) -> list[dict]:
    """5. Optimal remapping (Chatzikokolakis et al. PoPETs 2017) on HELD-OUT GeoLife users.

    The public prior is the density of the *training* users' fixes on the public 50 x 50
    Beijing grid (cell counts + 1, the training users being public data as the mobility
    model is); the test points are fixes of the other users (3 folds by user). Each point
    is obfuscated with planar Laplace and then remapped with the prior; both errors are
    measured against the true point at the same eps (remapping is post-processing).
    """
    from veil.geo.geometry import LocalProjection
    from veil.geo.remap import optimal_remap
    from veil.distances import haversine_m
    from veil.geo.temporal.experiment import load_beijing
    from veil.geo.temporal.geolife import load_geolife
    from veil.datasets import shared_data_path

    grid, _, _ = load_beijing(grid_n)
    trs = load_geolife(shared_data_path("geolife", "geolife_long_10_MB"))
    users = np.array([t.user for t in trs])
    lat = [t.lat for t in trs]
    lon = [t.lon for t in trs]
    ids = sorted(set(users))
    folds = [ids[i::3] for i in range(3)]
    centres = grid.centers_latlon
    rng = np.random.default_rng(seed)
    who = ("ALL users' fix density (in-sample: includes the test users)" if in_sample
           else "training users' fix density")
    print(f"\n## 5. Optimal remapping on held-out GeoLife users (3 folds by user; prior = "
          f"{who} on the {grid.nx} x {grid.ny} Beijing grid; {n_points} test fixes per "
          f"fold)\n")
    rows = []
    acc = {e: [[], []] for e in epss}
    for fold in folds:
        tr = [i for i, u in enumerate(users) if in_sample or u not in fold]
        te = [i for i, u in enumerate(users) if u in fold]
        cl = np.concatenate([grid.cell_of(lat[i], lon[i]) for i in tr])
        w = np.bincount(cl[cl >= 0], minlength=grid.n_cells) + 1.0
        pts = np.column_stack((np.concatenate([lat[i] for i in te]),
                               np.concatenate([lon[i] for i in te])))
        pts = pts[grid.cell_of(pts[:, 0], pts[:, 1]) >= 0]
        pts = pts[rng.choice(len(pts), size=min(n_points, len(pts)), replace=False)]
        for e in epss:
            rel = planar_laplace(pts, epsilon=e, rng=rng)
            rem = optimal_remap(rel, prior_points=centres, prior_weights=w,
                                projection=LocalProjection(*grid.origin),
                                prior_cell_m=float(np.mean(grid.cell_size_m)))
            acc[e][0].append(haversine_m(pts[:, 0], pts[:, 1], rel.value[:, 0], rel.value[:, 1]))
            acc[e][1].append(haversine_m(pts[:, 0], pts[:, 1], rem.value[:, 0], rem.value[:, 1]))
    for e in epss:
        raw, rem = np.concatenate(acc[e][0]), np.concatenate(acc[e][1])
        rows.append({"eps": e, "n": raw.size, "raw": raw.mean(), "remap": rem.mean(),
                     "gain": 1 - rem.mean() / raw.mean(), "raw_med": np.median(raw),
                     "remap_med": np.median(rem)})
    print("| eps (1/m) | test fixes | mean error, planar Laplace (m) | mean error, remapped (m) "
          "| gain | median, planar Laplace (m) | median, remapped (m) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['eps']:g} | {r['n']} | {r['raw']:.0f} | {r['remap']:.0f} | "
              f"{100 * r['gain']:.1f} % | {r['raw_med']:.0f} | {r['remap_med']:.0f} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline-repeats", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-lp", action="store_true")
    ap.add_argument("--only-optimal", action="store_true", help="run section 4 only")
    ap.add_argument("--only-speed", action="store_true", help="run section 1 only")
    ap.add_argument("--only-remap", action="store_true",
                    help="run section 5 only (needs VEIL_SHARED or ../shared: GeoLife)")
    ap.add_argument("--remap-fixes", type=int, default=1500,
                    help="section 5: held-out test fixes per fold")
    args = ap.parse_args()
    print(f"# veil geo benchmarks (machine: {os.cpu_count()} cores, shared and loaded; "
          f"load average {os.getloadavg()[0]:.1f})")
    if args.only_speed:
        bench_speed(args.n, args.repeats, args.baseline_repeats)
        return
    if args.only_optimal:
        bench_optimal_noise()
        return
    if args.only_remap:
        n_fix = 500 if args.quick else args.remap_fixes
        for n in (50, 100):
            bench_remap_heldout([0.002, 0.005, 0.01, 0.02], n_fix, grid_n=n)
        bench_remap_heldout([0.002, 0.005, 0.01, 0.02], n_fix, grid_n=100, in_sample=True)
        return
    if args.quick:
        bench_speed(50_000, 3, 1)
        bench_lp([3, 4], [3, 4, 5], 0.01, 100.0, 10.0)
        bench_eps_sweep(4, 100.0, [0.01, 0.03])
        bench_optimal_noise()
        return
    if not args.skip_speed:
        bench_speed(args.n, args.repeats, args.baseline_repeats)
    if not args.skip_lp:
        bench_lp([3, 4, 5, 6, 7, 8, 9], [3, 4, 5, 6, 7, 8, 9, 10], 0.01, 100.0, args.time_limit)
    bench_eps_sweep(6, 100.0, [0.0025, 0.005, 0.01, 0.02, 0.04, 0.08])
    bench_optimal_noise()


if __name__ == "__main__":
    main()
