"""Release under temporal correlations (PIM vs LM): speed and utility on GeoLife.

    VEIL_SHARED=/work/shared python benchmarks/temporal.py            # full run
    VEIL_SHARED=/work/shared python benchmarks/temporal.py --quick    # a smoke run

Part 1 -- one release step (prior, delta-set, hull, sample, posterior) on the 2,500-cell
Beijing grid, our sparse implementation against the same step with a dense transition
matrix, on the same states and random streams (target: < 5 ms median).
Part 2 -- 100 trajectories x 500 steps (target: < 5 minutes).
Part 3 -- PIM against LM on GeoLife (Beijing 4th ring, 50 x 50, eps = 1, delta = 0.01,
500 timestamps), plus sweeps over eps and delta and a personal model.
Part 5 -- held-out users: models learned from the other users, raw and smoothed; drift,
error, optimal remapping and the no-information baseline.

    VEIL_SHARED=/work/shared python benchmarks/temporal.py --part 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import machine_note, print_table  # noqa: E402

from veil.geo.temporal import MarkovModel, ReleaseStepper, release_trajectory  # noqa: E402
from veil.geo.temporal.experiment import (load_beijing, run_geolife_experiment,  # noqa: E402
                                          test_trajectories)


class DenseStepper(ReleaseStepper):
    """The same step with the transition matrix as a dense (2500 x 2500) ndarray."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.dense = self.model.to_dense()

    def prior(self):
        return self.initial if self.posterior is None else self.posterior @ self.dense


def step_times(cls, model, cells, initial, seed, mechanism="pim"):
    st = cls(model=model, epsilon=1.0, delta=0.01, mechanism=mechanism, initial=initial)
    rng = np.random.default_rng(seed)
    ts, zs = [], []
    for c in cells:
        t = time.perf_counter()
        s = st.step(int(c), rng)
        ts.append(time.perf_counter() - t)
        zs.append(s["z"])
    return np.array(ts), np.array(zs)


def part1(model, tests, runs, n_steps):
    print("\n## 1. One release step on the 2,500-cell grid (median ms per step)\n")
    rows = []
    for label, start_known in (("GeoLife, start known", True), ("GeoLife, uniform start", False)):
        for mech in ("pim", "lm"):
            sp_med, de_med = [], []
            for r in range(runs):
                cells = tests[r % len(tests)][1][:n_steps]
                init = None
                if start_known:
                    init = np.zeros(model.n_cells)
                    init[cells[0]] = 1.0
                ts, za = step_times(ReleaseStepper, model, cells, init, r, mech)
                td, zb = step_times(DenseStepper, model, cells, init, r, mech)
                assert np.allclose(za, zb), "dense and sparse steps disagree"
                sp_med.append(np.median(ts) * 1e3)
                de_med.append(np.median(td) * 1e3)
            s, d = statistics.median(sp_med), statistics.median(de_med)
            rows.append([label, mech, s, d, d / s])
    print_table(["states", "mechanism", "veil sparse ms", "dense-matrix ms", "dense / veil"],
                rows)
    return rows


def part2(model, tests, n_traj, steps):
    print(f"\n## 2. {n_traj} trajectories x {steps} steps (PIM, uniform initial prior)\n")
    t = time.perf_counter()
    for i in range(n_traj):
        cells = tests[i % len(tests)][1][:steps]
        release_trajectory(cells, model=model, epsilon=1.0, delta=0.01,
                           rng=np.random.default_rng(i))
    el = time.perf_counter() - t
    print_table(["trajectories", "steps", "total s", "ms per step"],
                [[n_traj, steps, el, 1e3 * el / (n_traj * steps)]])
    return el


COLS = ["mechanism", "epsilon", "delta", "model", "initial", "mean_error_m", "median_error_m",
        "drift_ratio", "precision_recall_k5", "precision_k5_k'10", "recall_k5_k'10",
        "median_set_size", "adversary_error_m"]


def show(rows):
    print_table(COLS, [[r[c] for c in COLS] for r in rows])
    by = {}
    for r in rows:
        by.setdefault((r["epsilon"], r["delta"], r["model"], r["initial"]), {})[r["mechanism"]] = r
    ratio = [[*k, v["lm"]["mean_error_m"] / v["pim"]["mean_error_m"],
              v["lm"]["median_error_m"] / v["pim"]["median_error_m"]]
             for k, v in by.items() if {"pim", "lm"} <= set(v)]
    print()
    print_table(["epsilon", "delta", "model", "initial", "LM/PIM mean error",
                 "LM/PIM median error"], ratio)


def part3(args):
    print(f"\n## 3. PIM vs LM on GeoLife ({args.traj} trajectories x {args.steps} steps, "
          f"{args.reps} repetitions for the headline rows)\n")
    rows = []
    for initial in ("uniform", "start"):
        rows += run_geolife_experiment(epsilons=[1.0], deltas=[0.01], steps=args.steps,
                                       reps=args.reps, max_trajectories=args.traj, seed=1,
                                       initial=initial)
    show(rows)
    if args.quick:
        return
    print("\n### eps and delta sweeps (start known, 1 repetition), personal model\n")
    rows = run_geolife_experiment(epsilons=[0.5, 2.0], deltas=[0.01], steps=args.steps,
                                  reps=1, max_trajectories=args.traj, seed=2, initial="start")
    rows += run_geolife_experiment(epsilons=[1.0], deltas=[0.001, 0.1], steps=args.steps,
                                   reps=1, max_trajectories=args.traj, seed=3, initial="start")
    rows += run_geolife_experiment(epsilons=[1.0], deltas=[0.01], steps=args.steps, reps=1,
                                   max_trajectories=args.traj, seed=4, initial="start",
                                   model_kind="personal")
    show(rows)


def part4(args, model, tests, grid):
    """Plots like the paper's: one trajectory with released points; error against eps."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(args.plots)
    out.mkdir(parents=True, exist_ok=True)
    cells = tests[0][1][:args.steps]
    p0 = np.zeros(model.n_cells)
    p0[cells[0]] = 1.0
    c = grid.centers_m / 1000
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), sharex=True, sharey=True)
    for ax, mech, col in zip(axes, ("pim", "lm"), ("#1f77b4", "#d62728")):
        r = release_trajectory(cells, model=model, epsilon=1.0, delta=0.01, mechanism=mech,
                               initial=p0, rng=np.random.default_rng(0))
        z = r.released_m / 1000
        ax.plot(z[:, 0], z[:, 1], ".", ms=3, color=col, alpha=0.6, label=f"released ({mech})")
        ax.plot(c[cells, 0], c[cells, 1], "-k", lw=1.5, label="true (cell centres)")
        ax.set_xlim(c[:, 0].min(), c[:, 0].max())
        ax.set_ylim(c[:, 1].min(), c[:, 1].max())
        ax.set_title(f"{mech.upper()}, eps=1, delta=0.01: mean error {r.errors_m(grid).mean():.0f} m")
        ax.legend(fontsize=7)
    fig.savefig(out / "temporal_trajectory.png", dpi=110, bbox_inches="tight")
    eps_list = [0.5, 1.0, 2.0, 4.0]
    rows = run_geolife_experiment(epsilons=eps_list, deltas=[0.01], steps=args.steps, reps=1,
                                  max_trajectories=min(args.traj, 10), seed=5, initial="start")
    fig, ax = plt.subplots(figsize=(6, 4))
    for mech, col in (("pim", "#1f77b4"), ("lm", "#d62728")):
        ys = [r["mean_error_m"] for r in rows if r["mechanism"] == mech]
        ax.plot(eps_list, ys, "o-", color=col, label=mech.upper())
    ax.set_xlabel("epsilon per timestamp")
    ax.set_ylabel("mean distance error (m)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend()
    fig.savefig(out / "temporal_error_vs_eps.png", dpi=110, bbox_inches="tight")
    print(f"\nplots written to {out}/temporal_trajectory.png and temporal_error_vs_eps.png")
    show(rows)


def heldout(args, grid, seqs, users):
    """Part 5: PIM vs LM on HELD-OUT GeoLife users (issue 16): the model is learned from the
    other users only (3 folds by user), raw and smoothed with the public distance-decay prior;
    drift, mean error, the remapped error and the no-information baseline (grid centre)."""
    from veil.geo.remap import remapped_xy

    ids = sorted(set(users))
    folds = [ids[i::3] for i in range(3)]
    weights = [0.0] + [float(w) for w in args.prior_weights.split(",")]
    for initial in ("uniform", "start"):
        _heldout(args, grid, seqs, users, folds, weights, initial, ids)


def _heldout(args, grid, seqs, users, folds, weights, initial, ids):
    from veil.geo.remap import remapped_xy

    print(f"\n## 5. Held-out users ({len(ids)} GeoLife users in 3 folds; model from the other "
          f"folds; eps = 1, delta = 0.01, {args.steps} steps, {args.reps_heldout} repetitions, "
          f"{'uniform start' if initial == 'uniform' else 'start cell known'})\n")
    centre = grid.centers_m.mean(axis=0)
    acc: dict = {}
    unseen = {w: [0, 0] for w in weights}
    for fold in folds:
        train = [s for s, u in zip(seqs, users) if u not in fold]
        tests = [(u, c) for u, c in test_trajectories(seqs, users, args.steps) if u in fold]
        tests = tests[:args.traj_per_fold]
        for w in weights:
            m = MarkovModel.from_trajectories(train, grid=grid, prior_weight=w)
            never_left = np.asarray(m.matrix.diagonal()) >= 1.0
            for _, cells in tests:
                unseen[w][0] += int(never_left[cells].sum())
                unseen[w][1] += cells.size
            for i, (_, cells) in enumerate(tests):
                for r in range(args.reps_heldout):
                    for mech in ("pim", "lm"):
                        g = np.random.default_rng([args.seed, i, r, hash(tuple(fold)) % 997])
                        p0 = None
                        if initial == "start":
                            p0 = np.zeros(grid.n_cells)
                            p0[cells[0]] = 1.0
                        res = release_trajectory(cells, model=m, epsilon=1.0, delta=0.01,
                                                 mechanism=mech, rng=g, keep_posteriors=True,
                                                 initial=p0)
                        e = res.errors_m(grid)
                        rm = remapped_xy(res, grid)
                        er = np.hypot(*(rm - grid.centers_m[cells]).T)
                        a = acc.setdefault((w, mech), {"err": [], "remap": [], "drift": [],
                                                       "base": []})
                        a["err"].append(e.mean())
                        a["remap"].append(er.mean())
                        a["drift"].append(res.drift_ratio)
                        a["base"].append(np.hypot(*(grid.centers_m[cells] - centre).T).mean())
    rows = []
    for (w, mech), a in acc.items():
        err, rem = np.array(a["err"]), np.array(a["remap"])
        rows.append([f"{w:g}", mech, len(err), float(np.mean(a["drift"])), float(err.mean()),
                     float(rem.mean()), float(1 - rem.mean() / err.mean()),
                     float(np.mean(a["base"])),
                     f"{unseen[w][0] / max(1, unseen[w][1]):.3f}"])
    print_table(["prior weight", "mechanism", "runs", "drift ratio", "mean error (m)",
                 "remapped error (m)", "remap gain", "no-information baseline (m)",
                 "held-out fixes in never-left cells"], rows)
    by = {(r[0], r[1]): r for r in rows}
    ratio = [[w, by[(w, "lm")][4] / by[(w, "pim")][4], by[(w, "lm")][5] / by[(w, "pim")][5]]
             for w in dict.fromkeys(r[0] for r in rows) if (w, "lm") in by and (w, "pim") in by]
    print()
    print_table(["prior weight", "LM/PIM mean error", "LM/PIM remapped error"], ratio)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", type=int, nargs="*", default=[1, 2, 3],
                    help="1 step timing, 2 100x500 timing, 3 PIM vs LM tables, 4 plots, "
                         "5 held-out users (raw vs smoothed model, remapping, baseline)")
    ap.add_argument("--plots", default="temporal-plots", help="folder for part 4's PNGs")
    ap.add_argument("--prior-weights", default="0.2",
                    help="part 5: prior weights of the smoothed models (0 = raw always run)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the experiment's noise")
    ap.add_argument("--heldout-traj", type=int, default=4,
                    help="part 5: test trajectories per fold")
    args = ap.parse_args()
    args.traj_per_fold = 3 if args.quick else args.heldout_traj
    args.reps_heldout = 1 if args.quick else 2
    args.steps = 100 if args.quick else 500
    args.traj = 4 if args.quick else 40
    args.reps = 1 if args.quick else 3
    print(machine_note())
    grid, seqs, users = load_beijing()
    model = MarkovModel.from_trajectories(seqs, grid=grid)
    tests = test_trajectories(seqs, users, 500)
    print(f"GeoLife: {len(seqs)} files, {sum(int((s >= 0).sum()) for s in seqs)} fixes in "
          f"the 4th ring; {len(tests)} test trajectories of 500 in-region fixes; model "
          f"nnz={model.matrix.nnz}")
    if 1 in args.part:
        part1(model, tests, runs=3 if args.quick else 5, n_steps=100 if args.quick else 300)
    if 2 in args.part:
        part2(model, tests, n_traj=5 if args.quick else 100, steps=args.steps)
    if 3 in args.part:
        part3(args)
    if 4 in args.part:
        part4(args, model, tests, grid)
    if 5 in args.part:
        heldout(args, grid, seqs, users)


if __name__ == "__main__":
    main()
