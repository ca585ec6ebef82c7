"""Study (issue 19): would a small DP feature of the data improve the histogram ``auto`` rule?

Reads ``--accuracy`` runs of ``benchmarks/histograms.py`` (their ``--json`` files, each with
the seed it was run with), regenerates exactly the re-sampled histograms those runs used (the
data stream of ``evaluate`` does not depend on the methods: ``spawn`` consumes no draws), and
computes on each one a DP feature bought with a share ``--fraction`` of epsilon:

* ``heavy``: the share of the n bins whose noisy count (discrete Laplace, scale
  ``1/e_f``) exceeds ``3/e_f``;
* ``entropy16``: the normalised entropy of 16 noisy block counts, blocks at most ``3/e_f``
  dropped (the maps' coarse-grid entropy in 1-D).

Both are post-processing of a noisy histogram of L1 sensitivity 1 (``e_f``-DP).

Then, for each fold of the same 3-fold cross-validation by dataset as ``autofit``
(:func:`veil.histograms.autofit.cross_validate`, same permutation), it fits the base rule
(:func:`veil.histograms.autofit.fit_rule`) on the training datasets and, per workload class
and signal level, optionally one feature branch ``method_low if feature <= t else method_high``
(t on a fixed grid), kept only if it lowers the training cost (mean log ratio to the best
method). Where a branch is used the chosen method's per-trial error is multiplied by
``1 / (1 - fraction)`` (the mechanism runs with the rest of epsilon; exact for
noise-dominated errors, which scale as ``1/eps``). Held out, per (dataset, eps, scale,
workload): ``auto``'s mean error over trials against the best method's, as in ``autofit``.

Usage::

    python benchmarks/hist_auto_feature.py /tmp/h/b1.json:1 /tmp/h/b2.json:2 --fraction 0.03
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from veil.histograms._common import noisy_integers  # noqa: E402
from veil.histograms.api import METHODS  # noqa: E402
from veil.histograms.autofit import (CLASS_OF_WORKLOAD, _ratio, apply_rule,  # noqa: E402
                                     fit_rule)
from veil.histograms.bench import load_rows  # noqa: E402
from veil.histograms.evaluation import load_dpbench  # noqa: E402
from veil.histograms.workload import resample_to_scale  # noqa: E402
from veil.random import make_rng  # noqa: E402

CUT = 3.0
CHARGE = True  # the mechanism runs with 1 - fraction of epsilon where the feature is bought
GRID = np.round(np.arange(0.0, 1.0001, 0.01), 4)


def heavy(x, e_f, g):
    y, _, _ = noisy_integers(x, e_f, g)
    return float(np.mean(y > CUT / e_f))


def entropy16(x, e_f, g):
    b = x.reshape(16, -1).sum(axis=1)
    y, _, _ = noisy_integers(b, e_f, g)
    z = np.where(y > CUT / e_f, y, 0).astype(np.float64)
    if z.sum() <= 0:
        return 0.0
    p = z[z > 0] / z.sum()
    return float(max(0.0, -(p * np.log(p)).sum()) / math.log(16))


FEATURES = {"heavy": heavy, "entropy16": entropy16}


def draws(path: Path, seed: int):
    """{(dataset, scale, trial): histogram} of one run, regenerated from its seed."""
    rows = json.loads(path.read_text())["accuracy"]
    names = list(dict.fromkeys(r["dataset"] for r in rows))
    scales = sorted({int(r["scale"]) for r in rows})
    trials = max(int(r["trials"]) for r in rows)
    n = int(rows[0]["n"])
    shapes = load_dpbench(names, n=n)
    g = make_rng(seed=seed)
    out = {}
    for d in names:
        for sc in scales:
            for t in range(trials):
                out[(d, sc, t)] = resample_to_scale(shapes[d], sc, rng=g)
    return out


def cells_of(rows):
    """{(cls, level, eps, scale, dataset): {method: per-trial errors}}."""
    out = {}
    for r in rows:
        if r.method == "auto" or r.workload not in CLASS_OF_WORKLOAD:
            continue
        lv = round(math.log10(r.epsilon * r.scale / r.n), 6)
        out.setdefault((CLASS_OF_WORKLOAD[r.workload], lv, r.epsilon, r.scale, r.dataset),
                       {})[r.method] = np.asarray(r.errors, dtype=np.float64)
    return out


def cell_ratio(errs, picks, infl, scale):
    """auto's mean error over trials (method ``picks[t]`` in trial t) over the best's."""
    best = min(float(np.mean(v)) for v in errs.values())
    a = float(np.mean([errs[m][t] * infl for t, m in enumerate(picks)]))
    return _ratio(a, best, scale)


def informative(eps, scale, frac, min_signal):
    """Public guard: buy the feature only where a block's mean count stands ``min_signal``
    noise scales above the feature's noise (``frac eps N / 16 >= min_signal``)."""
    return frac * eps * scale / 16.0 >= min_signal


def _score(log_ratios, target):
    """The fit's cost: the mean log ratio, or with ``target`` (the shipped rule's criterion)
    first the number of cells above ``target`` times the best, then the mean log ratio."""
    lr = np.asarray(log_ratios, dtype=np.float64)
    mean = float(np.mean(lr, axis=0)) if lr.ndim == 1 else np.mean(lr, axis=0)
    if target is None:
        return mean
    return np.sum(lr > math.log(target), axis=0) * 1e6 + mean  # lexicographic (count, mean)


def fit_branches(cells, feats, base, train, cands, frac, min_signal=0.0, target=None):
    """Per (class, level): the best ``(t, low, high)`` branch if it beats the base rule."""
    infl = 1.0 / (1.0 - frac) if CHARGE else 1.0
    out = {}
    for cls, lv in sorted({(k[0], k[1]) for k in cells}):
        sub = [(k, v) for k, v in cells.items() if k[0] == cls and k[1] == lv
               and k[4] in train and k[2] < base.get("exact_epsilon", math.inf)
               and informative(k[2], k[3], frac, min_signal)]
        if not sub:
            continue
        m0 = apply_rule(base, cls, lv, sub[0][0][2])
        T = len(next(iter(sub[0][1].values())))
        base_cost = _score([math.log(cell_ratio(v, [m0] * T, 1.0, k[3])) for k, v in sub],
                           target)
        best = (base_cost, None)
        for lo in cands:
            for hi in cands:
                if lo == hi:
                    continue
                logs = []
                for k, v in sub:
                    if lo not in v or hi not in v:
                        logs.append(np.full(GRID.size, np.inf))
                        continue
                    fv = np.array([feats[(k[4], k[3], k[2], t)] for t in range(T)])
                    mask = fv[None, :] <= GRID[:, None]           # (thresholds, trials)
                    a = np.where(mask, v[lo][None, :], v[hi][None, :]).mean(axis=1) * infl
                    b = min(float(np.mean(e)) for e in v.values())
                    f = 1.0 / k[3]
                    logs.append(np.log(np.maximum(a, f) / max(b, f)))
                c = _score(np.array(logs), target)
                j = int(np.argmin(c))
                if c[j] < best[0] - 1e-12:
                    best = (float(c[j]), (float(GRID[j]), lo, hi))
        if best[1] is not None:
            out[(cls, lv)] = best[1]
    return out


def evaluate(cells, feats, base, branches, test, frac, min_signal=0.0):
    infl = 1.0 / (1.0 - frac) if CHARGE else 1.0
    res = []
    for k, v in cells.items():
        cls, lv, eps, sc, d = k
        if d not in test:
            continue
        T = len(next(iter(v.values())))
        br = (branches.get((cls, lv)) if eps < base.get("exact_epsilon", math.inf)
              and informative(eps, sc, frac, min_signal) else None)
        if br is None:
            picks, f = [apply_rule(base, cls, lv, eps)] * T, 1.0
        else:
            picks = [br[1] if feats[(d, sc, eps, t)] <= br[0] else br[2] for t in range(T)]
            f = infl
        if any(m not in v for m in picks):
            continue
        res.append((k, cell_ratio(v, picks, f, sc)))
    return res


def summary(res, cls):
    ob = np.array([r for k, r in res if k[0] == cls])
    return (f"{cls}: {int(np.sum(ob <= 1.15))}/{ob.size} = {100 * np.mean(ob <= 1.15):.1f} % "
            f"within 1.15x, median {np.median(ob):.2f}, worst {ob.max():.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="FILE.json:SEED of --accuracy runs")
    ap.add_argument("--fraction", type=float, default=0.03, help="feature's share of epsilon")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--feature-seed", type=int, default=2024)
    ap.add_argument("--features", nargs="+", default=list(FEATURES), choices=list(FEATURES))
    ap.add_argument("--min-feature-signal", type=float, default=0.0,
                    help="buy the feature only where fraction*eps*N/16 >= this (public)")
    ap.add_argument("--free", action="store_true",
                    help="bound: do not charge the feature's share to the mechanism (no 1/(1-f))")
    ap.add_argument("--fit-target", type=float, default=None,
                    help="fit the base rule and the branches by the number of cells above this "
                         "many times the best, then the mean log ratio (the shipped rule: 1.15)")
    ap.add_argument("--exact-epsilon", type=float, default=None,
                    help="Identity from this epsilon on in every fold (e.g. AUTO_RULE's 3.162278)"
                         " instead of the fitted threshold")
    a = ap.parse_args(argv)
    global CHARGE
    CHARGE = not a.free
    paths = [(Path(s.rsplit(":", 1)[0]), int(s.rsplit(":", 1)[1])) for s in a.runs]
    rows = load_rows([p for p, _ in paths])
    cells = cells_of(rows)
    present = {r.method for r in rows}  # in METHODS order, as autofit's report (ties)
    cands = tuple(m for m in METHODS if m in present and m != "auto")
    hist = {}
    for p, s in paths:
        hist.update(draws(p, s))
    eps_levels = sorted({k[2] for k in cells})
    names = sorted({k[4] for k in cells})
    perm = [names[i] for i in np.random.default_rng(0).permutation(len(names))]
    parts = [perm[i::a.folds] for i in range(a.folds)]
    for fname in a.features:
        fn = FEATURES[fname]
        fg = make_rng(seed=a.feature_seed)  # experiments only
        feats = {(d, sc, eps, t): fn(x, a.fraction * eps, fg)
                 for (d, sc, t), x in sorted(hist.items()) for eps in eps_levels}
        before, after = [], []
        print(f"## feature {fname}, {a.fraction:g} of epsilon, guard "
              f"fraction*eps*N/16 >= {a.min_feature_signal:g}")
        for i, test in enumerate(parts):
            train = set(names) - set(test)
            base = fit_rule(rows, datasets=train, candidates=cands, target=a.fit_target)
            if a.exact_epsilon is not None:
                base["exact_epsilon"] = a.exact_epsilon
            br = fit_branches(cells, feats, base, train, cands, a.fraction,
                              a.min_feature_signal, a.fit_target)
            print(f"  fold {i} (held out {', '.join(sorted(test))}): branches {br}")
            before += evaluate(cells, feats, base, {}, set(test), a.fraction)
            after += evaluate(cells, feats, base, br, set(test), a.fraction,
                              a.min_feature_signal)
        for cls in ("prefix", "ranges"):
            print(f"  held out, base rule    {summary(before, cls)}")
            print(f"  held out, with feature {summary(after, cls)}")
        worse = [(k, rb, ra) for (k, rb), (k2, ra) in zip(sorted(before), sorted(after))
                 if abs(ra - rb) > 0.05]
        from scipy.stats import binomtest

        up = sum(ra < rb for _, rb, ra in worse)
        gb = math.exp(np.mean([math.log(r) for _, r in before]))
        ga = math.exp(np.mean([math.log(r) for _, r in after]))
        p = binomtest(up, len(worse)).pvalue if worse else 1.0
        print(f"  all held-out cells: geometric mean ratio to best {gb:.4f} -> {ga:.4f}; cells "
              f"changed by > 0.05: {up} better, {len(worse) - up} worse (two-sided sign "
              f"test p = {p:.3g})")
        for k, rb, ra in sorted(worse, key=lambda t: t[2] - t[1]):
            print(f"    {k[0]:6s} {k[4][:30]:30s} eps={k[2]:<5g} scale={k[3]:.0e}: "
                  f"{rb:.2f} -> {ra:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
