"""The GeoLife experiment of the PIM paper: PIM against LM in Beijing's 4th ring.

Setup (DESIGN.md section 7): GeoLife fixes inside Beijing's 4th ring, 50 x 50 grid, a
first-order Markov model counted from consecutive fixes (popular: all users; personal:
the trajectory's user), eps = 1, delta = 0.01, 500 timestamps per test trajectory.
Test trajectories are the first ``steps`` fixes of the longest run of consecutive
in-region fixes of each GeoLife file that has one that long. POIs for the kNN queries
are the 2,500 cell centres (public). The popular model includes the test users' data,
as in the paper (the model is assumed public).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...datasets import shared_data_path
from ...errors import ParameterError
from ...random import make_rng, spawn
from ...validation import check_choice, check_int
from .geolife import load_geolife, to_cells
from .grid import beijing_grid
from .markov import MarkovModel
from .metrics import knn_precision_recall
from .release import release_trajectory

__all__ = ["load_beijing", "test_trajectories", "run_geolife_experiment", "format_table"]


def load_beijing(n: int = 50, folder: str = "geolife_long_10_MB"):
    """(grid, per-file cell sequences, per-file user ids) for the shared GeoLife data."""
    grid = beijing_grid(n)
    trs = load_geolife(shared_data_path("geolife", folder))
    return grid, [to_cells(t, grid) for t in trs], [t.user for t in trs]


def _longest_run(seq: np.ndarray) -> tuple[int, int]:
    ok = np.concatenate(([False], seq >= 0, [False]))
    d = np.diff(ok.astype(np.int8))
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    if starts.size == 0:
        return 0, 0
    i = int(np.argmax(ends - starts))
    return int(starts[i]), int(ends[i])


def test_trajectories(seqs: list[np.ndarray], users: list[str], steps: int
                      ) -> list[tuple[str, np.ndarray]]:
    """(user, cells) for every file whose longest in-region run has >= ``steps`` fixes."""
    out = []
    for s, u in zip(seqs, users):
        a, b = _longest_run(s)
        if b - a >= steps:
            out.append((u, s[a:a + steps].astype(np.int64)))
    return out


#: the Markov models of :func:`run_geolife_experiment`: one from every trajectory, or each
#: user's own
MODEL_KINDS = ("popular", "personal")


def run_geolife_experiment(*, epsilons=(1.0,), deltas=(0.01,), steps: int = 500, reps: int = 3,
                           max_trajectories: int = 40, model_kind: str = "popular",
                           mechanisms=("pim", "lm"), seed: int | None = None,
                           k: int = 5, keep_series: bool = False,
                           initial: str = "uniform") -> list[dict[str, Any]]:
    """Run PIM and LM on the same trajectories and random streams; one row per setting.

    Each row: mechanism, eps, delta, model, n_traj, reps, mean/median error (m), drift
    ratio, kNN precision/recall (k = k' = 5, and k' = 10), median delta-set size, the
    adversary's mean expected error, and seconds per step.

    ``initial="uniform"`` starts every trajectory from the uniform prior; ``"start"``
    gives the adversary (and the release loop) the true first cell, i.e. assumes the
    starting point is public -- a stronger adversary, and much smaller delta-sets.
    """
    check_choice(model_kind, "model_kind", MODEL_KINDS)
    for value, name in ((steps, "steps"), (reps, "reps"), (max_trajectories, "max_trajectories")):
        check_int(value, name, minimum=1)
    if not len(epsilons) or not len(deltas):
        raise ParameterError("epsilons and deltas need at least one value each")
    grid, seqs, users = load_beijing()
    tests = test_trajectories(seqs, users, steps)[:max_trajectories]
    if not tests:  # said "need at least one array to concatenate"
        longest = max((b - a for a, b in map(_longest_run, seqs)), default=0)
        raise ParameterError(f"steps={steps}: no GeoLife trajectory has that many consecutive "
                             f"fixes in the region (the longest run has {longest}); use fewer "
                             "steps")
    popular = MarkovModel.from_trajectories(seqs, grid=grid, meta={"kind": "popular"})
    models: dict[str, MarkovModel] = {}
    for u in sorted({u for u, _ in tests}):
        models[u] = (popular if model_kind == "popular" else MarkovModel.from_trajectories(
            [s for s, uu in zip(seqs, users) if uu == u], grid=grid, meta={"kind": "personal"}))
    pois = grid.centers_m
    rng = make_rng(seed=seed)
    rows = []
    for eps in epsilons:
        for delta in deltas:
            streams = spawn(rng, len(tests) * reps)
            for mech in mechanisms:
                errs, drifts, prec, prec10, rec10, sizes, adv, series = [], [], [], [], [], [], [], []
                t0 = time.perf_counter()
                for i, (u, cells) in enumerate(tests):
                    for r in range(reps):
                        # same seed for PIM and LM: paired comparison
                        g = np.random.Generator(streams[i * reps + r].bit_generator.jumped())
                        p0 = None
                        if initial == "start":
                            p0 = np.zeros(grid.n_cells)
                            p0[cells[0]] = 1.0
                        res = release_trajectory(cells, model=models[u], epsilon=eps,
                                                 delta=delta, mechanism=mech, rng=g, initial=p0)
                        e = res.errors_m(grid)
                        errs.append(e)
                        drifts.append(res.drift)
                        sizes.append(res.set_sizes)
                        adv.append(res.adversary_error_m)
                        truth = pois[cells]
                        p5, _ = knn_precision_recall(truth, res.released_m, pois, k=k)
                        p10, r10 = knn_precision_recall(truth, res.released_m, pois, k=k,
                                                        k_prime=2 * k)
                        prec.append(p5)
                        prec10.append(p10)
                        rec10.append(r10)
                        if keep_series:
                            series.append(e)
                elapsed = time.perf_counter() - t0
                e = np.concatenate(errs)
                row = {"mechanism": mech, "epsilon": eps, "delta": delta, "model": model_kind,
                       "n_traj": len(tests), "reps": reps, "steps": steps,
                       "mean_error_m": float(e.mean()), "median_error_m": float(np.median(e)),
                       "drift_ratio": float(np.concatenate(drifts).mean()),
                       f"precision_recall_k{k}": float(np.concatenate(prec).mean()),
                       f"precision_k{k}_k'{2 * k}": float(np.concatenate(prec10).mean()),
                       f"recall_k{k}_k'{2 * k}": float(np.concatenate(rec10).mean()),
                       "median_set_size": float(np.median(np.concatenate(sizes))),
                       "adversary_error_m": float(np.concatenate(adv).mean()),
                       "ms_per_step": 1000 * elapsed / max(1, e.size)}
                if keep_series:
                    row["series"] = np.array(series)
                row["initial"] = initial
                rows.append(row)
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of :func:`run_geolife_experiment` rows (series omitted)."""
    if not rows:
        return "(no rows)"
    cols = [c for c in rows[0] if c != "series"]
    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    table = [cols] + [[fmt(r[c]) for c in cols] for r in rows]
    w = [max(len(row[i]) for row in table) for i in range(len(cols))]
    lines = ["  ".join(x.rjust(w[i]) for i, x in enumerate(row)) for row in table]
    lines.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(lines)
