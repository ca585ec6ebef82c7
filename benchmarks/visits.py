"""Benchmark of veil.visits: speed against the paper's explicit-graph approach, and real data.

Run from the project root:

    VEIL_SHARED=../shared PYTHONPATH=src python benchmarks/visits.py [--quick]

Sections
--------
(a) SLH: LHO (min-plus DP, numba / numpy) vs a shortest path over the explicitly built
    layered DAG with scipy.sparse.csgraph (the paper's approach), n = 50, K = 200;
    LHO alone at n = 250, K = 1000.
(b) the convex fast path at K = 1e5 (vs a heap-based greedy in pure Python).
(c) RH / AH vs the exact RO / AO where they finish, with the gap.
(d) every user of the Foursquare NYC file sanitized (SLH), DuckDB load included.
(e) real-data table: quality loss, privacy distance, gap, runtime per algorithm, and the
    share of users for which TR / TA are feasible at several eps and c.
(f) the one NYC user with leaf categories (hide / TR / TA on 251 categories).
(g) synthetic scale: per-user driver throughput on a Parquet check-in file.
(h) the measured adversary (veil.visits.distinguishability) on the NYC weekly histograms:
    attack AUC against LHO's releases and against the resample mitigation, with the
    permuted-label control and the quality cost (`veil bench visits --adversary`).
All timings are medians of several runs on a shared, loaded 2-core machine: compare ratios.
"""

from __future__ import annotations

import argparse
import heapq
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from veil.distances import bin_terms  # noqa: E402
from veil.visits import avoid, convex_allocate, hide, lho, resemble  # noqa: E402
from veil.visits._kernels import HAVE_NUMBA  # noqa: E402
from veil.visits.costs import QualityCost  # noqa: E402


def median_time(fn, runs):
    ts, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def slh_instance(rng, n, K, n_sens=3):
    h = rng.integers(1, 40, size=n)
    sens = rng.choice(n, size=n_sens, replace=False)
    h[sens] = 0
    h[sens[0]] = K  # the sensitive total is exactly K
    free = np.setdiff1d(np.arange(n), sens)
    N = int(h.sum())
    cost = QualityCost(h, free, N, "js")
    return h, sens, free, cost


def explicit_dag_shortest_path(C):
    """The paper's LHO: build G_LHO explicitly, run a general shortest-path routine."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    m, R1 = C.shape
    K = R1 - 1
    jj, kk = np.triu_indices(R1)  # j <= j'
    srcs, dsts, ws = [np.array([0])], [np.array([1])], [np.array([0.0])]
    srcs, dsts, ws = [], [], []
    for i in range(m):
        if i == 0:
            a = np.zeros(R1, dtype=np.int64)
            b = np.arange(R1)
        else:
            a, b = jj, kk
        srcs.append((0 if i == 0 else 1 + (i - 1) * R1) + a)
        dsts.append(1 + i * R1 + b)
        ws.append(C[i, b - a] + 1.0)  # +1 per edge: every s-t path has m edges; keeps 0-weights
    src = np.concatenate(srcs)
    dst = np.concatenate(dsts)
    w = np.concatenate(ws)
    nnodes = 1 + m * R1
    G = csr_matrix((w, (src, dst)), shape=(nnodes, nnodes))
    dist = dijkstra(G, directed=True, indices=0)
    return float(dist[1 + (m - 1) * R1 + K]) - m, int(src.size)


def heap_greedy(marginal, m, total):
    """Textbook greedy marginal allocation with a binary heap (pure Python)."""
    heap = [(float(marginal(np.array([b]), np.array([0]))[0]), b) for b in range(m)]
    heapq.heapify(heap)
    out = np.zeros(m, dtype=np.int64)
    for _ in range(total):
        _, b = heapq.heappop(heap)
        out[b] += 1
        heapq.heappush(heap, (float(marginal(np.array([b]), np.array([out[b]]))[0]), b))
    return out


def section_a(rng, quick):
    print("\n(a) SLH exact: LHO (min-plus DP) vs explicit DAG + scipy.sparse.csgraph.dijkstra")
    n, K = (30, 120) if quick else (50, 200)
    h, sens, free, cost = slh_instance(rng, n, K)
    C = cost.table(K)
    lho(C, K)  # warm-up (numba compile)
    t_lho, (alloc, best) = median_time(lambda: lho(C, K), 7)
    t_np, (alloc_np, best_np) = median_time(lambda: lho(C, K, backend="numpy"), 3)
    t_g, (best_g, n_edges) = median_time(lambda: explicit_dag_shortest_path(C), 3)
    print(f"  n={n} bins ({free.size} non-sensitive), K={K}, explicit graph: {n_edges:,} edges")
    print(f"  {'method':38s} {'median s':>10s} {'optimum':>14s} {'speed-up':>9s}")
    print(f"  {'explicit DAG + csgraph.dijkstra':38s} {t_g:10.4f} {best_g:14.10f} {1.0:9.1f}")
    print(f"  {'LHO numpy (sliding-window min-plus)':38s} {t_np:10.4f} {best_np:14.10f} "
          f"{t_g / t_np:9.1f}")
    print(f"  {'LHO ' + ('numba' if HAVE_NUMBA else 'numpy'):38s} {t_lho:10.4f} {best:14.10f} "
          f"{t_g / t_lho:9.1f}")
    assert abs(best - best_g) <= 1e-9 * max(1, abs(best)), (best, best_g)
    n2, K2 = (120, 500) if quick else (250, 1000)
    h, sens, free, cost = slh_instance(rng, n2, K2)
    C2 = cost.table(K2)
    t2, (a2, b2) = median_time(lambda: lho(C2, K2), 3)
    t2np, _ = median_time(lambda: lho(C2, K2, backend="numpy"), 1)
    t2c, a2c = median_time(lambda: convex_allocate(cost.marginal, free.size, K2), 5)
    b2c = float(cost.table(K2)[np.arange(free.size), a2c].sum())
    print(f"  LHO alone at n={n2}, K={K2}: {'numba' if HAVE_NUMBA else 'numpy'} {t2:.3f} s "
          f"(numpy fallback {t2np:.3f} s); convex fast path {t2c * 1e3:.2f} ms, same optimum: "
          f"{abs(b2 - b2c) <= 1e-9 * max(1, b2)}")
    return {"lho_speedup": t_g / t_lho, "lho_big_s": t2}


def section_b(rng, quick):
    print("\n(b) convex fast path (JS) at large K vs a heap greedy in pure Python")
    n, K = 250, 100_000
    h, sens, free, cost = slh_instance(rng, n, K)
    convex_allocate(cost.marginal, free.size, K)
    t_c, a = median_time(lambda: convex_allocate(cost.marginal, free.size, K), 7)
    Kh = 10_000 if not quick else 2_000
    h2, s2, f2, c2 = slh_instance(rng, n, Kh)
    t_h, ah = median_time(lambda: heap_greedy(c2.marginal, f2.size, Kh), 1)
    t_c2, ac = median_time(lambda: convex_allocate(c2.marginal, f2.size, Kh), 5)
    obj = lambda c, al: float(c(np.arange(al.size), al).sum())  # noqa: E731
    print(f"  n={n}, K={K:,}: convex fast path {t_c * 1e3:.2f} ms (sum of allocation "
          f"{int(a.sum()):,})")
    print(f"  K={Kh:,}: heap greedy {t_h * 1e3:.1f} ms vs fast path {t_c2 * 1e3:.2f} ms "
          f"(x{t_h / t_c2:.0f}); objectives {obj(c2, ah):.12f} vs {obj(c2, ac):.12f}")
    return {"convex_ms": t_c * 1e3}


def random_tr(rng, n, N):
    h = rng.multinomial(N, rng.dirichlet(np.full(n, 0.7)))
    t = rng.dirichlet(np.ones(n))
    return h, t


def section_c(rng, quick):
    print("\n(c) TR/TA: heuristic (RH/AH) vs exact (RO/AO), JS/JS, random instances")
    sizes = [(10, 60), (20, 150)] if quick else [(10, 60), (20, 150), (30, 300)]
    reps = 3 if quick else 5
    paper_max, paper_limit = (600, 20) if quick else (3000, 30)
    paper_reps = 3
    print(f"  {'n':>3s} {'N':>4s} {'eps':>5s} {'prob':>4s} {'paper s':>8s} {'exact s':>8s} "
          f"{'heur ms':>8s} {'bound ms':>9s} {'p/heur':>7s} {'x/heur':>6s} {'opt':>8s} "
          f"{'heur':>8s} {'heur-opt':>9s} {'gap':>8s} {'heur=opt':>8s}")
    rows = []
    for n, N in sizes:
        for eps in (0.02, 0.1):
            for fn, name in ((resemble, "TR"), (avoid, "TA")):
                te, th, tb, dif, gaps, same, opts, hs = [], [], [], [], [], 0, [], []
                tp = []
                for _ in range(reps):
                    h, t = random_tr(rng, n, N)
                    t0 = time.perf_counter()
                    try:
                        ex = fn(h, t, quality_bound=eps, method="exact", time_limit=60)
                    except Exception as exc:  # noqa: BLE001
                        print(f"  exact failed: {exc}")
                        continue
                    te.append(time.perf_counter() - t0)
                    if n * N <= paper_max and len(tp) < paper_reps:
                        t0 = time.perf_counter()
                        try:
                            px = fn(h, t, quality_bound=eps, method="exact", pruning="paper",
                                    time_limit=paper_limit)
                            assert abs(px.privacy_value - ex.privacy_value) <= 1e-9
                            tp.append(time.perf_counter() - t0)
                        except Exception:  # noqa: BLE001 - too large: reported as '>limit'
                            tp.append(np.inf)
                    he = fn(h, t, quality_bound=eps, method="heuristic")
                    th.append(he.parameters["timings"]["heuristic_s"])
                    tb.append(he.parameters["timings"]["bound_s"])
                    dif.append(abs(he.privacy_value - ex.privacy_value))
                    gaps.append(he.gap)
                    opts.append(ex.privacy_value)
                    hs.append(he.privacy_value)
                    same += dif[-1] <= 1e-9
                if not te:
                    continue
                mt, mh, mb = (statistics.median(x) for x in (te, th, tb))
                mp = statistics.median(tp) if tp else np.nan
                rows.append((n, N, eps, name, mt, mh))
                ps = (f"{mp:8.3f}" if np.isfinite(mp) else
                      (f"{'>' + str(paper_limit):>8s}" if tp else f"{'-':>8s}"))
                pr = f"{mp / mh:7.0f}" if np.isfinite(mp) else f"{'-':>7s}"
                print(f"  {n:3d} {N:4d} {eps:5.2f} {name:>4s} {ps} {mt:8.3f} {mh * 1e3:8.2f} "
                      f"{mb * 1e3:9.2f} {pr} {mt / mh:6.0f} {statistics.mean(opts):8.5f} "
                      f"{statistics.mean(hs):8.5f} {statistics.mean(dif):9.6f} "
                      f"{statistics.mean(gaps):8.5f} {same:>4d}/{len(te)}")
    print("  paper s = exact search with the paper's pruning only (dominance + quality bound); "
          "exact s = veil's exact call (heuristic + bound + label search with feasibility and "
          "Lagrangian pruning); p/heur, x/heur = time ratios to the heuristic alone; gap = "
          "heuristic - Lagrangian bound (what a user sees without the exact answer)")
    return rows


def nyc_inputs():
    from veil.datasets import shared_data_path
    from veil.visits.batch import align_target, load_checkins
    from veil.visits.io import read_profile
    from veil.visits.taxonomy import foursquare_taxonomy

    tax = foursquare_taxonomy()
    t0 = time.perf_counter()
    uh = load_checkins(shared_data_path("foursquare-nyc", "foursquare_nyc.csv"),
                       user_column="label")
    t_load = time.perf_counter() - t0
    tl, tv = read_profile(shared_data_path("foursquare-nyc",
                                           "woojink_nyc_checkins_category_hour.csv"))
    roots = [tax.ancestor(tax.resolve(x), 0) for x in tl]
    agg: dict[str, float] = {}
    for r_, v in zip(roots, tv):
        agg[r_] = agg.get(r_, 0.0) + v
    domain, target = align_target(list(agg), list(agg.values()), uh.categories)
    assert domain == uh.categories, "the city-wide roots must match the file's categories"
    # the NYC file records only root categories: the sensitive subtrees live inside one root
    sens_roots = sorted({tax.ancestor("Medical Center", 0), tax.ancestor("Spiritual Center", 0)})
    sens = np.array([uh.categories.index(s) for s in sens_roots])
    return tax, uh, target, sens, sens_roots, t_load


def section_d(quick):
    from veil.visits.batch import sanitize_users

    print("\n(d) SLH for every user of the Foursquare NYC file (DuckDB load + per-user driver)")
    t0 = time.perf_counter()
    tax, uh, target, sens, sens_roots, t_load = nyc_inputs()
    br = sanitize_users(uh, problem="hide", sensitive=sens)
    total = time.perf_counter() - t0
    print(f"  {uh.n_users} users, {int(uh.count.sum()):,} check-ins, {len(uh.categories)} "
          f"categories; sensitive bins {sens_roots}")
    print(f"  load {t_load:.2f} s + sanitize {br.runtime_s:.2f} s; end to end {total:.2f} s; "
          f"status {br.status_counts()}")
    # the paper's motivating baseline: redistribute proportionally to the non-sensitive counts
    # (largest-remainder rounding), against the optimum
    free = np.setdiff1d(np.arange(len(uh.categories)), sens)
    base, opt = [], []
    for u in range(uh.n_users):
        h = uh.dense(u)
        K, rest = int(h[sens].sum()), h[free]
        if rest.sum() == 0:
            continue
        share = K * rest / rest.sum()
        add = np.floor(share).astype(np.int64)
        left = K - int(add.sum())
        add[np.argsort(-(share - add), kind="stable")[:left]] += 1
        out = np.zeros_like(h)
        out[free] = rest + add
        base.append(float(bin_terms(h / h.sum(), out / h.sum(), "js").sum()))
    opt = br.summary["quality_loss"][br.summary["status"] == "ok"]
    print(f"  mean JS loss: proportional redistribution (paper's strawman, rounded) "
          f"{np.mean(base):.6f} vs optimal (LHO) {np.mean(opt):.6f}; optimal better for "
          f"{int(np.sum(np.array(base) > opt + 1e-12))} of {len(base)} users")
    return {"nyc_slh_s": total}


def section_e(quick):
    print("\n(e) real data: Foursquare NYC users (root categories), target = city-wide "
          "distribution (woojink, 227,428 check-ins, rolled up to roots)")
    tax, uh, target, sens, sens_roots, _ = nyc_inputs()
    users = range(uh.n_users) if not quick else range(0, uh.n_users, 8)
    hs = [uh.dense(u) for u in users]
    print(f"  users: {len(hs)}; sizes median {int(np.median([h.sum() for h in hs]))}, max "
          f"{int(max(h.sum() for h in hs))}")
    d0 = [float(bin_terms(h / h.sum(), target / target.sum(), "js").sum()) for h in hs]
    print(f"  JS distance of the unmodified histograms to the target: mean {np.mean(d0):.4f}, "
          f"median {np.median(d0):.4f}, range {min(d0):.4f}..{max(d0):.4f}")
    print(f"  {'algorithm':12s} {'eps':>5s} {'mean d_q':>9s} {'mean d_p':>9s} {'mean gap':>9s} "
          f"{'max gap':>9s} {'exact%':>7s} {'total s':>8s} {'heur s':>7s} {'bound s':>8s}")
    for method in ("lho", "convex"):
        t0 = time.perf_counter()
        rs = [hide(h, sensitive=sens, method=method) for h in hs if h[
            np.setdiff1d(np.arange(h.size), sens)].sum() > 0]
        dt = time.perf_counter() - t0
        print(f"  {'SLH ' + method:12s} {'-':>5s} {np.mean([r.quality_loss for r in rs]):9.5f} "
              f"{'-':>9s} {0.0:9.5f} {0.0:9.5f} {100.0:7.1f} {dt:8.2f} {'-':>7s} {'-':>8s}")
    feas = {}
    eps_list = (0.01, 0.05) if quick else (0.01, 0.05, 0.1)
    tl = 2.0 if quick else 5.0
    for eps in eps_list:
        for prob, fn in (("TR", resemble), ("TA", avoid)):
            for method in ("exact", "heuristic"):
                t0 = time.perf_counter()
                rs, nex = [], 0
                for h in hs:
                    r = fn(h, target, quality_bound=eps,
                           method="auto" if method == "exact" else "heuristic", time_limit=tl)
                    rs.append(r)
                    nex += r.exact
                dt = time.perf_counter() - t0
                label = {"TR": ("RO", "RH"), "TA": ("AO", "AH")}[prob][method != "exact"]
                if method == "exact":
                    label += "*"
                dps = np.array([r.privacy_value for r in rs])
                bnds = np.array([r.bound for r in rs])
                gaps = np.array([r.gap for r in rs])
                th = sum(r.parameters["timings"]["heuristic_s"] for r in rs)
                tb = sum(r.parameters["timings"]["bound_s"] for r in rs)
                print(f"  {prob + ' ' + label:12s} {eps:5.2f} "
                      f"{np.mean([r.quality_loss for r in rs]):9.5f} {dps.mean():9.5f} "
                      f"{gaps.mean():9.5f} {gaps.max():9.5f} {100 * nex / len(rs):7.1f} "
                      f"{dt:8.2f} {th:7.2f} {tb:8.2f}")
                feas[(prob, eps, method)] = (dps, bnds, np.array([r.exact for r in rs]))
    print("  * = exact within a time limit of %.0f s per user, else the heuristic (counted in "
          "exact%%); total s = all calls; heur s / bound s = the heuristic moves alone and the "
          "Lagrangian bound alone (summed over users)" % tl)
    print("\n  share of users for which the privacy property holds (TR: d_p <= c; TA: d_p >= c)")
    print(f"  {'problem':8s} {'eps':>5s} {'c':>6s} {'heuristic':>10s} {'exact*':>8s} "
          f"{'not ruled out by bound':>23s}")
    for prob, cs in (("TR", (0.02, 0.05, 0.1)), ("TA", (0.1, 0.2, 0.3))):
        for eps in eps_list:
            dh, bh, _ = feas[(prob, eps, "heuristic")]
            de, be, _ = feas[(prob, eps, "exact")]
            for c in cs:
                if prob == "TR":
                    sh, se, sb = (dh <= c).mean(), (de <= c).mean(), (be <= c).mean()
                else:
                    sh, se, sb = (dh >= c).mean(), (de >= c).mean(), (be >= c).mean()
                print(f"  {prob:8s} {eps:5.2f} {c:6.2f} {100 * sh:9.1f}% {100 * se:7.1f}% "
                      f"{100 * sb:22.1f}%")


def section_f(quick):
    from veil.datasets import shared_data_path
    from veil.visits.batch import align_target
    from veil.visits.io import read_profile
    from veil.visits.taxonomy import foursquare_taxonomy
    import duckdb

    print("\n(f) fine categories: the one NYC user with leaf categories (gtheodor user 210, "
          "156 check-ins), sensitive = Medical Center + Spiritual Center subtrees, target = "
          "city-wide leaf distribution (251 categories)")
    tax = foursquare_taxonomy()
    p = shared_data_path("foursquare-nyc", "gtheodor_user210events.txt")
    rows = duckdb.sql(f"SELECT column1 AS c, count(*) AS n FROM read_csv('{p}', delim='\\t', "
                      "header=false) GROUP BY 1 ORDER BY 1").fetchall()
    labels = [tax.resolve(r[0]) for r in rows]
    h = np.array([r[1] for r in rows], dtype=np.int64)
    tl, tv = read_profile(shared_data_path("foursquare-nyc",
                                           "woojink_nyc_checkins_category_hour.csv"))
    tl = [tax.resolve(x) for x in tl]
    domain, target = align_target(tl, tv, labels)
    h = np.concatenate([h, np.zeros(len(domain) - h.size, dtype=np.int64)])
    print(f"  domain {len(domain)} categories; user visits {int(h.sum())} in "
          f"{int((h > 0).sum())} categories")
    for sel in (["Medical Center", "Spiritual Center"], ["Nightlife Spot"]):
        mask = tax.sensitive_mask(domain, sel)
        print(f"  sensitive {sel}: {int(mask.sum())} categories in the domain, "
              f"{int(h[mask].sum())} of the user's visits "
              f"{[d for d, m in zip(domain, mask) if m and h[domain.index(d)] > 0]}")
        if h[mask].sum() == 0:
            print("    nothing to hide for this user (shown for completeness)")
            continue
        for method in ("lho", "convex"):
            t, r = median_time(lambda: hide(h, sensitive=mask, method=method), 3)
            moved = {domain[i]: int(r.histogram[i] - h[i]) for i in np.flatnonzero(
                (r.histogram - h) > 0)}
            print(f"    SLH {method:6s}: d_q={r.quality_loss:.5f}  {t * 1e3:8.2f} ms  added to "
                  f"{dict(sorted(moved.items(), key=lambda kv: -kv[1])[:6])}")
    for fn, name in ((resemble, "TR"), (avoid, "TA")):
        for eps in (0.05, 0.1):
            t0 = time.perf_counter()
            r = fn(h, target, quality_bound=eps, method="auto", time_limit=20)
            dt = time.perf_counter() - t0
            d0 = float(bin_terms(h / h.sum(), target / target.sum(), "js").sum())
            print(f"  {name} eps={eps:.2f}: {r.algorithm} d_p {d0:.4f} -> {r.privacy_value:.4f} "
                  f"(bound {r.bound:.4f}, gap {r.gap:.4f}), d_q={r.quality_loss:.4f}, "
                  f"{dt:.2f} s {'; ' + r.notes[0][:90] if r.notes else ''}")


def section_g(rng, quick):
    """Throughput of the per-user driver on a synthetic check-in file (baseline for scale)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from veil.visits.batch import load_checkins, sanitize_users

    n_users = 2_000 if quick else 20_000
    n_cat = 100
    print(f"\n(g) synthetic scale: {n_users:,} users x {n_cat} categories, SLH per user "
          "(Parquet -> DuckDB -> driver)")
    sizes = rng.integers(5, 100, size=n_users)
    users = np.repeat(np.arange(n_users), sizes)
    pref = rng.dirichlet(np.full(n_cat, 0.3), size=n_users)
    cats = np.concatenate([rng.choice(n_cat, size=s_, p=p_) for s_, p_ in zip(sizes, pref)])
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "checkins.parquet")
        pq.write_table(pa.table({"user": users, "category": [f"c{c:03d}" for c in cats]}), path)
        t0 = time.perf_counter()
        uh = load_checkins(path)
        t_load = time.perf_counter() - t0
    sens = np.arange(0, n_cat, 10)  # 10 sensitive categories
    br = sanitize_users(uh, problem="hide", sensitive=sens)
    print(f"  {int(sizes.sum()):,} check-ins: DuckDB load {t_load:.2f} s, sanitize "
          f"{br.runtime_s:.2f} s ({1e3 * br.runtime_s / n_users:.2f} ms per user), status "
          f"{br.status_counts()}")


#: the mitigation setting documented in docs/visits.md and docs/benchmarks.md (chosen from the
#: grid of section h on the NYC weekly histograms; checked by a slow test with other seeds)
MITIGATION = {"size": 10, "mix": 0.4}


def nyc_weekly():
    """Weekly histograms of foursquare_nyc.csv: one row per trajectory ``tid``, users ``label``."""
    import duckdb

    from veil.datasets import shared_data_path
    from veil.io import sql

    src = sql.path(shared_data_path("foursquare-nyc", "foursquare_nyc.csv"))
    rows = duckdb.sql(f"SELECT tid, label, category, count(*) AS n FROM read_csv({src}) "
                      "GROUP BY ALL").fetchnumpy()
    cats = sorted(set(rows["category"].tolist()))
    pos = {c: i for i, c in enumerate(cats)}
    tids, ti = np.unique(rows["tid"], return_inverse=True)
    H = np.zeros((tids.size, len(cats)), dtype=np.int64)
    np.add.at(H, (ti, np.array([pos[c] for c in rows["category"]])), rows["n"])
    user = np.zeros(tids.size, dtype=np.int64)
    user[ti] = rows["label"]
    return H, user, cats


def section_h(quick, seed=7):
    from veil.visits import Resample
    from veil.visits.distinguishability import distinguishability
    from veil.visits.hide import hide_many

    print("\n(h) measured adversary on the NYC weekly histograms (train/test split over users)")
    H, user, cats = nyc_weekly()
    s = cats.index("Professional & Other Places")
    y = H[:, s] > 0
    N = H.sum(axis=1)
    attacks = ["likelihood", "gbm", "size"]
    n_boot = 200 if quick else 1000
    repeats = 1 if quick else 3
    print(f"  {H.shape[0]} weekly histograms of {np.unique(user).size} users over {len(cats)} "
          f"root categories; sensitive: {cats[s]!r}; {100 * y.mean():.1f}% of the weeks have a "
          f"sensitive visit; median size {np.median(N):.0f}")
    print(f"  AUC within folds, cross-fitted over 2 user folds, {int(100 * 0.95)}% percentile bootstrap CI "
          f"over users ({n_boot} resamples); control = permuted labels; mitigation draws: "
          f"{repeats} (seeds {seed}..{seed + repeats - 1}, experiments only)")
    settings = [("LHO (paper)", None)]
    grid = ([(40, 0.0), (20, 0.0), (10, 0.0), (20, 0.2), (10, 0.2), (20, 0.4), (10, 0.4)]
            if not quick else [(20, 0.0), (MITIGATION["size"], MITIGATION["mix"])])
    settings += [(f"resample size {m}, mix {a:g}", Resample(size=m, mix=a)) for m, a in grid]
    hdr = (f"  {'release':26s} {'attack':10s} {'AUC':>6s} {'95% CI':>15s} {'control':>8s} "
           f"{'mean d_q JS':>11s} {'size err':>8s}")
    print(hdr)
    summary = []
    for name, mit in settings:
        draws = [None] if mit is None else range(repeats)
        res_by_attack = {a: [] for a in attacks}
        costs, size_err = [], []
        for r in draws:
            out, q, st = hide_many(H, sensitive=[s], mitigation=mit,
                                   rng=None if mit is None else np.random.default_rng(seed + r))
            ok = st == ""
            costs.append(float(np.mean(q[ok])))
            size_err.append(float(np.mean(np.abs(out[ok].sum(axis=1) - N[ok]) / N[ok])))
            d = distinguishability(out[ok], y[ok], user[ok], attacks=attacks, n_boot=n_boot,
                                   rng=np.random.default_rng(seed + 100 + (r or 0)))
            for a in attacks:
                res_by_attack[a].append(d.results[a])
        strongest_mean, worst = 0.0, 0.0
        for a in attacks:
            rs = res_by_attack[a]
            au = float(np.mean([x.auc for x in rs]))
            lo = float(np.mean([x.ci[0] for x in rs]))
            hi = float(np.mean([x.ci[1] for x in rs]))
            ctl = float(np.mean([x.control_auc for x in rs]))
            strongest_mean = max(strongest_mean, au)
            worst = max(worst, max(x.auc for x in rs))
            print(f"  {name:26s} {a:10s} {au:6.3f} [{lo:5.3f}, {hi:5.3f}] {ctl:8.3f} "
                  f"{np.mean(costs):11.4f} {np.mean(size_err):8.3f}")
        print(f"  {'':26s} strongest attack: mean AUC over draws {strongest_mean:.3f}, worst "
              f"draw {worst:.3f}")
        summary.append((name, strongest_mean, float(np.mean(costs)), float(np.mean(size_err)),
                        worst, mit))
    lho = summary[0]
    print(f"  strongest attack on LHO: AUC {lho[1]:.3f} (mean JS loss {lho[2]:.4f})")
    ok = [x for x in summary[1:] if x[4] <= 0.55]  # every draw, every attack
    if ok:
        best = min(ok, key=lambda x: x[2])
        print(f"  cheapest mitigation with every attack's AUC <= 0.55 in every draw: {best[0]}: "
              f"AUC {best[1]:.3f} (worst draw {best[4]:.3f}), mean JS loss {best[2]:.4f} "
              f"({best[2] / lho[2]:.2f}x LHO's), size changed by {100 * best[3]:.0f}% on average")
        documented = (best[5].size, best[5].mix) == (MITIGATION["size"], MITIGATION["mix"])
        print(f"  documented setting {MITIGATION}: "
              + ("the one selected here" if documented else "NOT the one selected here"))
    else:
        print("  no mitigation setting of this grid reached AUC <= 0.55")

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=7, help="instance generator seed (benchmarks)")
    ap.add_argument("--only", default=None,
                    help="sections to run (default: all; with --quick all but h, the adversary)")
    args = ap.parse_args()
    if args.only is None:
        args.only = "abcdefg" if args.quick else "abcdefgh"
        if args.quick:
            print("(h) the adversary is not part of --quick: run `veil bench visits --adversary`")
    rng = np.random.default_rng(args.seed)
    print(f"veil.visits benchmark ({'quick' if args.quick else 'full'}); numba={HAVE_NUMBA}; "
          f"machine: {os.cpu_count()} cores shared with other jobs (loaded): compare ratios")
    if "a" in args.only:
        section_a(rng, args.quick)
    if "b" in args.only:
        section_b(rng, args.quick)
    if "c" in args.only:
        section_c(rng, args.quick)
    if "d" in args.only:
        section_d(args.quick)
    if "e" in args.only:
        section_e(args.quick)
    if "f" in args.only:
        section_f(args.quick)
    if "g" in args.only:
        section_g(rng, args.quick)
    if "h" in args.only:
        section_h(args.quick, args.seed)


if __name__ == "__main__":
    main()
