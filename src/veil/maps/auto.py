"""``method='auto'``: a public rule that picks a map mechanism from DP estimates of the data.

The rule reads only public quantities and two DP estimates (the count and one of two
features), measured first and composed with the chosen mechanism (sequential composition; the
release records every share):

1. the number of points ``N``: a public ``scale`` when the caller has one, else a noisy count
   bought with :data:`AUTO_SCALE_FRACTION` of epsilon (reused by AG, so paid once). With it,
   the *signal* ``sigma = eps N / (s SIGNAL_CELLS)``: points per cell of a 256 x 256 grid (the
   grid the rule was fitted on) in units of the noise scale, whatever the grid's own size
   (:func:`reference_signal`). The choice between AG, PrivTree and HDMM follows the number of
   points and the budget, not how finely the map is cut: AG's and PrivTree's blocks are sized
   by ``eps N`` and HDMM's error grows only slowly with the cells; with the signal per cell of
   the grid itself the rule transferred badly to 128 x 128 maps (docs/benchmarks.md);
2. when ``sigma <= RULE['hdmm_above']`` only: a **concentration feature** bought with
   :data:`FEATURE_FRACTION` of epsilon (a Pythia-style feature, after Kotsogiannis et al.,
   SIGMOD 2017): the normalised entropy of a noisy coarse grid of about
   ``FEATURE_SIDE x FEATURE_SIDE`` blocks, counting only the blocks whose noisy count exceeds
   ``FEATURE_CUT`` noise scales (:func:`coarse_entropy`). Low entropy: the points sit in a few
   blocks; high: they are spread over the map.
3. when ``sigma > RULE['hdmm_above']`` only: an **occupancy feature** bought with the same
   share :data:`FEATURE_FRACTION` of epsilon: the noisy number of non-empty cells (discrete
   Laplace; one person changes at most ``s`` cells from empty to non-empty, or back), divided
   by the number of cells (:func:`occupancy_feature`). Low occupancy: a very sparse map, whose
   non-empty cells DAWA-2D's partition isolates while it merges the empty runs of the Hilbert
   order. Only on grids of at most :data:`DAWA_MAX_CELLS` cells (a public condition).

Then (thresholds in :data:`RULE`, fitted by :func:`fit_rule` on the two DPBench 2-D maps and
six maps built from the shared Gowalla, Foursquare and GeoLife point files, with a
leave-one-source-out evaluation, see docs/maps.md):

* ``sigma > hdmm_above`` and occupancy ``<= privtree_occupancy``: **PrivTree** (the sparsest
  maps: a few hundred non-empty cells, which the tree isolates while it keeps the empty space
  in a few large leaves);
* ``sigma > hdmm_above`` and occupancy ``<= dawa_occupancy``: **DAWA-2D** (a very sparse map);
* ``sigma > hdmm_above``: **HDMM** (its data-independent error is the lowest once the counts
  stand well above the noise);
* ``sigma >= privtree_min_signal`` and entropy ``<= privtree_entropy``: **PrivTree** (a
  concentrated map: the tree isolates the few dense places at fine resolution);
* ``sigma > hdmm_mid_signal`` and entropy ``>= hdmm_entropy``: **HDMM** (a spread map: AG's
  uniform sub-blocks are biased almost everywhere);
* ``sigma > ag_max_signal``: **HDMM** (AG's band closes: with this many points per cell in noise
  units, the maps between the two entropy thresholds are also better served by HDMM's
  data-independent error than by AG's uniform sub-blocks; a rule without this key keeps AG up
  to ``hdmm_above``);
* otherwise **AG** (Qardaji et al.'s adaptive grid).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from ..errors import ParameterError
from ..random import make_rng
from ..release import Release
from ..validation import check_int, check_positive, check_probability
from ._blocks import prefix2d, rect_sums, split_edges
from ._common import as_budget, check_sensitivity, grid_dims, noisy

__all__ = ["RULE", "AUTO_SCALE_FRACTION", "FEATURE_FRACTION", "FEATURE_SIDE", "FEATURE_CUT",
           "SIGNAL_CELLS", "reference_signal", "choose_method", "publish_auto", "signal",
           "coarse_entropy", "occupancy_feature", "auto_selection", "fit_rule", "apply_rule",
           "OCCUPANCY_GRID", "DAWA_MAX_CELLS"]

#: share of epsilon for the noisy number of points (when no public scale is given)
AUTO_SCALE_FRACTION = 0.02
#: share of epsilon for the feature: the concentration feature when ``sigma <=
#: RULE['hdmm_above']``, else the occupancy feature (exactly one of the two is bought)
FEATURE_FRACTION = 0.03
#: the feature's coarse grid has about FEATURE_SIDE x FEATURE_SIDE blocks
FEATURE_SIDE = 16
#: blocks whose noisy count is at most FEATURE_CUT noise scales count as empty
FEATURE_CUT = 3.0

#: the rule's signal counts points per cell of a grid of this many cells (256 x 256, the grid
#: the rule was fitted on), whatever the map's own grid (:func:`reference_signal`)
SIGNAL_CELLS = 256 * 256

#: DAWA-2D is a candidate (and the occupancy feature bought) only on grids of at most this many
#: cells: its run time and memory grow with the cells (0.5 s and 0.23 GB peak at 256 x 256,
#: 3 s at 512 x 512, 10 s and 0.9 GB at 1024 x 1024), and the rule was fitted at 256 x 256
DAWA_MAX_CELLS = 512 * 512

#: candidates of ``dawa_occupancy`` for :func:`fit_rule` (-1: no DAWA-2D; else 0 to 10 % of the
#: cells non-empty, in steps of 0.25 %), fixed before the fit
OCCUPANCY_GRID = (-1.0, *(round(0.0025 * k, 4) for k in range(41)))

#: the fitted thresholds (``python benchmarks/maps.py fit --maps all --privtree-occupancy``: the
#: two DPBench 2-D maps and six maps built from the shared point files, refitted 2026-12-07 for
#: the PrivTree that measures its internal nodes; ``ag_max_signal`` fitted 2026-12-08 on the
#: same runs; docs/maps.md, docs/benchmarks.md)
RULE = {"hdmm_above": 31.6228, "privtree_min_signal": 0.0562, "privtree_entropy": 0.50,
        "hdmm_mid_signal": 0.1778, "hdmm_entropy": 0.62, "ag_max_signal": 5.6234,
        "dawa_occupancy": 0.04, "privtree_occupancy": 0.0325}


def signal(*, rows: int, cols: int, epsilon: float, scale: float, sensitivity: int = 1
           ) -> float:
    """Signal per cell ``eps N / (s rows cols)``.

    Examples
    --------
    >>> signal(rows=256, cols=256, epsilon=1.0, scale=65536)
    1.0
    """
    return float(epsilon) * float(scale) / (int(sensitivity) * int(rows) * int(cols))


def reference_signal(*, epsilon: float, scale: float, sensitivity: int = 1) -> float:
    """The rule's signal ``eps N / (s SIGNAL_CELLS)``: :func:`signal` on a 256 x 256 grid,
    whatever the map's grid.

    Examples
    --------
    >>> reference_signal(epsilon=1.0, scale=65536)
    1.0
    """
    return signal(rows=256, cols=256, epsilon=epsilon, scale=scale, sensitivity=sensitivity)


def _coarse_totals(x: np.ndarray, side: int) -> np.ndarray:
    rows, cols = x.shape[-2:]
    mr, mc = grid_dims(side, rows, cols)
    re_, ce = split_edges(rows, mr), split_edges(cols, mc)
    P = prefix2d(x)
    return rect_sums(P, re_[:-1, None], re_[1:, None], ce[None, :-1], ce[None, 1:])


def coarse_entropy(y: np.ndarray, noise_scale: float, *, cut: float = FEATURE_CUT
                   ) -> np.ndarray:
    """Normalised entropy of noisy block counts ``y`` (..., mr, mc), blocks ``<= cut *
    noise_scale`` dropped; in [0, 1] (0 also when no block is left).

    Post-processing of the noisy counts only.

    Examples
    --------
    >>> float(coarse_entropy(np.full((4, 4), 100.0), 1.0))
    1.0
    >>> float(coarse_entropy(np.array([[100.0, 0.0], [0.0, 2.0]]), 1.0))
    0.0
    """
    y = np.asarray(y, dtype=np.float64)
    k = y.shape[-2] * y.shape[-1]
    z = np.where(y > cut * noise_scale, y, 0.0).reshape(*y.shape[:-2], k)
    tot = z.sum(axis=-1, keepdims=True)
    p = np.divide(z, tot, out=np.zeros_like(z), where=tot > 0)
    ent = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)
    ent = np.maximum(ent, 0.0)  # no -0.0
    return ent / math.log(k) if k > 1 else np.zeros_like(ent)


def occupancy_feature(x: np.ndarray, *, epsilon: float, sensitivity: int, rng, batch: int = 1,
                      from_true: bool = False, feature_sensitivity: int | None = None
                      ) -> np.ndarray:
    """Noisy share of non-empty cells of the count grid ``x`` (``batch`` independent draws).

    A grid finer than 256 x 256 (the grid the rule was fitted on) is first summed into blocks of
    ``ceil(rows / 256) x ceil(cols / 256)`` cells, and the share is of non-empty blocks: the
    share of non-empty cells falls as a map is cut finer, so without this the threshold fitted
    at 256 x 256 would call a 512 x 512 map sparse that is not.

    Why it is ``epsilon``-DP: neighbouring inputs give count grids (and block grids) at L1
    distance at most ``sensitivity`` (integer counts), and the number of non-empty cells changes
    by at most that distance (each unit of a count moves at most one cell across zero); discrete
    Laplace of scale ``sensitivity / epsilon`` on it, then clipping to ``[0, cells]`` and the
    division by the public number of cells are post-processing. ``from_true`` (no noise) and
    ``feature_sensitivity`` (noise for another sensitivity) exist only for the audit's
    canaries; never use them.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> x = np.zeros((100, 100), dtype=int); x[:10, :10] = 5
    >>> v = occupancy_feature(x, epsilon=10.0, sensitivity=1, rng=make_rng(seed=0), batch=2)
    >>> bool(np.all(np.abs(v - 0.01) < 0.002))
    True
    """
    rows, cols = x.shape[-2:]
    kr, kc = -(-rows // 256), -(-cols // 256)
    if kr > 1 or kc > 1:
        pad = np.zeros((-(-rows // kr) * kr, -(-cols // kc) * kc), dtype=np.int64)
        pad[:rows, :cols] = x
        x = pad.reshape(pad.shape[0] // kr, kr, pad.shape[1] // kc, kc).sum(axis=(1, 3))
    cells = x.shape[-2] * x.shape[-1]
    nz = np.full(int(batch), int(np.count_nonzero(x)), dtype=np.int64)
    if from_true:
        z = nz.astype(np.float64)
    else:
        fs = sensitivity if feature_sensitivity is None else feature_sensitivity
        z = noisy(nz, epsilon, fs, rng)[0].astype(np.float64)
    return np.clip(z, 0.0, float(cells)) / cells


def auto_selection(x: np.ndarray, *, epsilon: float, sensitivity: int, rng, scale=None,
                   batch: int | None = None, rule: dict | None = None,
                   scale_fraction: float = AUTO_SCALE_FRACTION,
                   feature_fraction: float = FEATURE_FRACTION, side: int = FEATURE_SIDE,
                   feature_from_true: bool = False, feature_sensitivity: int | None = None
                   ) -> dict:
    """The DP part of ``auto``: the noisy count, one feature, and the rule's choice.

    ``x`` (rows, cols) true counts; ``batch``: draw that many independent selections at once
    (the audits), else one. Returns arrays (one entry per draw): ``n`` (the number of points
    the rule used), ``signal``, ``entropy`` (NaN where it was not bought), ``occupancy`` (NaN
    where it was not bought), ``method``, and the epsilon spent on the count (``eps_scale``),
    on the concentration feature (``eps_feature``, 0 where none was bought) and on the
    occupancy feature (``eps_occupancy``, idem). A rule without ``dawa_occupancy`` buys no
    occupancy feature, nor does a grid of more than :data:`DAWA_MAX_CELLS` cells.

    Why it is DP: the count is a discrete Laplace release of a sum (L1 sensitivity ``s``) with
    ``scale_fraction * eps``; whether the feature is bought is a function of that release;
    the feature's block counts partition the grid (sensitivity ``s``) and get discrete Laplace
    noise with ``feature_fraction * eps``; otherwise (the signal above ``hdmm_above``) the
    occupancy feature is bought with ``feature_fraction * eps`` (:func:`occupancy_feature`);
    entropy and rule are post-processing. Adaptive sequential composition: every branch spends
    at most ``(scale_fraction + feature_fraction) eps`` here, and ``publish_auto`` gives the
    chosen mechanism the rest of its branch's budget. ``feature_from_true`` (the feature on
    the TRUE counts) and ``feature_sensitivity`` (noise calibrated to another sensitivity)
    apply to both features and exist only for the audit's canaries; never use them.
    """
    rule = RULE if rule is None else rule
    s = sensitivity
    rows, cols = x.shape
    nb = 1 if batch is None else int(batch)
    if scale is None:
        e_n = scale_fraction * epsilon
        tot = np.full(nb, int(x.sum()), dtype=np.int64)
        n_est = np.maximum(1.0, noisy(tot, e_n, s, rng)[0].astype(np.float64))
    else:
        e_n = 0.0
        n_est = np.full(nb, check_positive(scale, "scale"), dtype=np.float64)
    sig = epsilon * n_est / (s * SIGNAL_CELLS)
    need = sig <= rule["hdmm_above"]
    ent = np.full(nb, np.nan)
    e_f = feature_fraction * epsilon
    if need.any():
        blocks = _coarse_totals(x, side)
        k = int(need.sum())
        fs = s if feature_sensitivity is None else feature_sensitivity
        if feature_from_true:
            y = np.broadcast_to(blocks, (k, *blocks.shape)).astype(np.float64)
        else:
            y = noisy(np.broadcast_to(blocks, (k, *blocks.shape)), e_f, fs, rng)[0]
        ent[need] = coarse_entropy(y, s / e_f)
    occ = np.full(nb, np.nan)
    high = (~need if "dawa_occupancy" in rule and rows * cols <= DAWA_MAX_CELLS
            else np.zeros(nb, dtype=bool))
    if high.any():
        occ[high] = occupancy_feature(x, epsilon=e_f, sensitivity=s, rng=rng,
                                      batch=int(high.sum()), from_true=feature_from_true,
                                      feature_sensitivity=feature_sensitivity)
    method = apply_rule(sig, ent, rule, occupancy=occ)
    return {"n": n_est, "signal": sig, "entropy": ent, "occupancy": occ, "method": method,
            "eps_scale": np.full(nb, e_n), "eps_feature": np.where(need, e_f, 0.0),
            "eps_occupancy": np.where(high, e_f, 0.0)}


def apply_rule(sig, ent, rule: dict | None = None, *, occupancy=None) -> np.ndarray:
    """The rule on arrays of signals, entropies and occupancies (NaN: not measured); method
    names. Without ``occupancy`` (or a rule without ``dawa_occupancy``) no DAWA-2D.

    Examples
    --------
    >>> apply_rule(np.array([100.0, 0.2, 0.2, 2.0]), np.array([np.nan, 0.3, 0.55, 0.9])).tolist()
    ['hdmm', 'privtree', 'ag', 'hdmm']
    >>> apply_rule(np.array([2.0, 15.0]), np.array([0.55, 0.55])).tolist()  # AG's band closes
    ['ag', 'hdmm']
    >>> apply_rule(np.array([100.0, 100.0, 100.0]), np.array([np.nan, np.nan, np.nan]),
    ...            occupancy=np.array([0.02, 0.036, 0.05])).tolist()
    ['privtree', 'dawa2d', 'hdmm']
    """
    r = RULE if rule is None else rule
    return np.array(_CHOICES, dtype=object)[_rule_codes(sig, ent, r, occupancy)]


#: the rule's outcomes, indexed by :func:`_rule_codes`
_CHOICES = ("ag", "privtree", "hdmm", "dawa2d")


def _rule_codes(sig, ent, r: dict, occupancy=None) -> np.ndarray:
    """The rule as integer codes into :data:`_CHOICES`: the one implementation behind
    :func:`apply_rule` and the fit's scoring (:func:`_ratios`)."""
    sig = np.asarray(sig, dtype=np.float64)
    ent = np.asarray(ent, dtype=np.float64)
    occ = (np.full(sig.shape, np.nan) if occupancy is None
           else np.asarray(occupancy, dtype=np.float64))
    out = np.zeros(sig.shape, dtype=np.int8)
    with np.errstate(invalid="ignore"):
        pt = (sig >= r["privtree_min_signal"]) & (ent <= r["privtree_entropy"])
        hm = (sig > r["hdmm_mid_signal"]) & (ent >= r["hdmm_entropy"])
        if "ag_max_signal" in r:
            hm |= sig > r["ag_max_signal"]
        out[hm & ~pt] = 2
        out[pt] = 1
        direct = sig > r["hdmm_above"]
        out[direct] = 2
        if "dawa_occupancy" in r:
            out[direct & (occ <= r["dawa_occupancy"])] = 3
        if "privtree_occupancy" in r:
            out[direct & (occ <= r["privtree_occupancy"])] = 1
    return out


def choose_method(*, rows: int, cols: int, epsilon: float, scale: float,
                  sensitivity: int = 1, entropy: float | None = None,
                  occupancy: float | None = None, rule: dict | None = None
                  ) -> tuple[str, str]:
    """The public rule behind ``auto`` on given values; returns ``(method, reason)``.

    ``entropy`` is the concentration feature (:func:`coarse_entropy`); it is needed only when
    the signal is at most ``RULE['hdmm_above']``; ``occupancy`` (the share of non-empty cells,
    :func:`occupancy_feature`) only above, on grids of at most :data:`DAWA_MAX_CELLS` cells.

    Examples
    --------
    >>> choose_method(rows=256, cols=256, epsilon=1.0, scale=10**8, occupancy=0.05)[0]
    'hdmm'
    >>> choose_method(rows=256, cols=256, epsilon=1.0, scale=10**8, occupancy=0.036)[0]
    'dawa2d'
    >>> choose_method(rows=256, cols=256, epsilon=1.0, scale=10**8, occupancy=0.004)[0]
    'privtree'
    >>> choose_method(rows=256, cols=256, epsilon=1.0, scale=10**4, entropy=0.3)[0]
    'privtree'
    >>> choose_method(rows=256, cols=256, epsilon=0.1, scale=10**4, entropy=0.6)[0]
    'ag'
    """
    rows = check_int(rows, "rows", minimum=1)
    cols = check_int(cols, "cols", minimum=1)
    r = RULE if rule is None else rule
    sig = reference_signal(epsilon=check_positive(epsilon, "epsilon"),
                           scale=check_positive(scale, "scale"), sensitivity=sensitivity)
    if sig <= r["hdmm_above"] and entropy is None:
        raise ParameterError(f"signal {sig:.3g} <= {r['hdmm_above']:g}: the rule "
                             "needs the concentration feature (entropy)")
    if sig > r["hdmm_above"] and "dawa_occupancy" in r and occupancy is None and \
            rows * cols <= DAWA_MAX_CELLS:
        raise ParameterError(f"signal {sig:.3g} > {r['hdmm_above']:g}: the rule "
                             "needs the occupancy feature (share of non-empty cells)")
    ent = np.nan if entropy is None else float(entropy)
    occ = np.nan if occupancy is None else float(occupancy)
    if rows * cols > DAWA_MAX_CELLS:
        occ = np.nan
    method = str(apply_rule(np.array([sig]), np.array([ent]), r, occupancy=np.array([occ]))[0])
    return method, _reason(sig, ent, method, r, occ)


def _reason(sig: float, ent: float, method: str, r: dict, occ: float = float("nan")) -> str:
    head = f"signal eps*N/(s*{SIGNAL_CELLS}) = {sig:.3g}"
    if sig > r["hdmm_above"]:
        if not np.isfinite(occ):
            return (f"{head} > {r['hdmm_above']:g} (no occupancy feature: DAWA-2D is a "
                    f"candidate only up to {DAWA_MAX_CELLS} cells): {method}")
        pt = (f"privtree if <= {r['privtree_occupancy']:g}, "
              if "privtree_occupancy" in r else "")
        return (f"{head} > {r['hdmm_above']:g}, share of non-empty cells {occ:.4f} ({pt}dawa2d "
                f"if <= {r['dawa_occupancy']:g}, else hdmm): {method}")
    closes = (f", or signal > {r['ag_max_signal']:g}" if "ag_max_signal" in r
              and r["ag_max_signal"] < r["hdmm_above"] else "")
    return (f"{head} <= {r['hdmm_above']:g}, coarse entropy {ent:.3f} (privtree if signal >= "
            f"{r['privtree_min_signal']:g} and entropy <= {r['privtree_entropy']:g}; hdmm if "
            f"signal > {r['hdmm_mid_signal']:g} and entropy >= {r['hdmm_entropy']:g}{closes}; "
            f"else ag): {method}")


def publish_auto(x: np.ndarray, *, epsilon, sensitivity: int = 1, scale=None, rng=None,
                 scale_fraction: float = AUTO_SCALE_FRACTION,
                 feature_fraction: float = FEATURE_FRACTION, rule: dict | None = None
                 ) -> Release:
    """Publish with the mechanism the rule picks (see the module docstring).

    Why it is eps-DP: :func:`auto_selection` spends ``eps_scale + eps_feature +
    eps_occupancy`` (all recorded in the budget split; at most one of the two features is
    bought); the chosen mechanism is run with the rest, ``eps - eps_scale - eps_feature -
    eps_occupancy``, and AG reuses the noisy count as its scale (sequential, adaptive
    composition: the parts sum to eps in every branch).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> x = np.zeros((64, 64), dtype=int); x[:2, :2] = 2000
    >>> r = publish_auto(x, epsilon=1.0, rng=make_rng(seed=3))
    >>> r.parameters["chosen"], sorted(r.budget_split)[:2]
    ('privtree', ['feature', 'privtree:nodes'])
    >>> y = np.zeros((64, 64), dtype=int); y[::8, ::8] = 10**6   # 64 non-empty cells (1.6 %)
    >>> r = publish_auto(y, epsilon=1.0, rng=make_rng(seed=3))
    >>> r.parameters["chosen"], sorted(r.budget_split)[:2]
    ('privtree', ['occupancy', 'privtree:nodes'])
    """
    from .api import publish

    b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    check_probability(scale_fraction, "scale_fraction", open_low=True, open_high=True)
    check_probability(feature_fraction, "feature_fraction", open_low=True, open_high=True)
    if scale_fraction + feature_fraction >= 1:
        raise ParameterError("scale_fraction + feature_fraction must be < 1")
    r = RULE if rule is None else rule
    g = make_rng(rng)
    rows, cols = x.shape
    sel = auto_selection(x, epsilon=b.epsilon, sensitivity=s, rng=g, scale=scale, rule=r,
                         scale_fraction=scale_fraction, feature_fraction=feature_fraction)
    n_est, sig, ent = float(sel["n"][0]), float(sel["signal"][0]), float(sel["entropy"][0])
    occ = float(sel["occupancy"][0])
    method = str(sel["method"][0])
    e_n, e_f = float(sel["eps_scale"][0]), float(sel["eps_feature"][0])
    e_o = float(sel["eps_occupancy"][0])
    rest = b.epsilon - e_n - e_f - e_o
    rel = publish(x, epsilon=rest, method=method, sensitivity=s, scale=n_est, rng=g)
    split = {}
    if e_n > 0:
        split["scale"] = e_n
    if e_f > 0:
        split["feature"] = e_f
    if e_o > 0:
        split["occupancy"] = e_o
    split.update({f"{method}:{k}": v for k, v in rel.budget_split.items()})
    reason = _reason(sig, ent, method, r, occ)
    note = (f"scale: noisy number of points {n_est:g} (epsilon {e_n:g})" if scale is None
            else "scale: public value given by the caller")
    feat = (f"auto: concentration feature bought with epsilon {e_f:g} (entropy of a noisy "
            f"coarse grid)" if e_f > 0 else
            f"auto: occupancy feature bought with epsilon {e_o:g} (noisy number of non-empty "
            f"cells)" if e_o > 0 else "auto: no feature needed")
    return dataclasses.replace(
        rel, budget=b, budget_split=split,
        parameters={**rel.parameters, "chosen": method, "auto_rule": reason,
                    "auto_thresholds": dict(r), "auto_signal": sig,
                    "auto_entropy": None if not np.isfinite(ent) else ent,
                    "auto_occupancy": None if not np.isfinite(occ) else occ,
                    "scale_rule": note},
        # the chosen mechanism saw auto's noisy count as a given scale: its own "scale:" note
        # ("public value given by the caller") is replaced by auto's, which says what it was
        notes=(*(n_ for n_ in rel.notes if not n_.startswith("scale:")), f"auto: {reason}",
               feat, note),
        derived=_auto_derived(rel, e_n, e_f, e_o))


def _auto_derived(rel: Release, e_n: float, e_f: float, e_o: float) -> tuple[str, ...]:
    """The fields of auto's release that are outputs: the pick when it read a noisy value,
    the noisy values themselves, and what the inner mechanism sized from the noisy scale."""
    if e_n > 0 or e_f > 0 or e_o > 0:  # the pick read a noisy value: whole fields, the
        from ..release import PICKED_FROM_NOISE  # same list whichever method was picked

        return PICKED_FROM_NOISE
    return tuple(rel.derived)


# --------------------------------------------------------------------------- fitting
def _ratios(rule, sig, ent, choice, idx, cnt, best, occ=None):
    """auto / best per setting: each run charged the error of the method the rule picks, at
    auto's budget (``hdmm_d`` where no feature was bought, above ``hdmm_above``)."""
    code = _rule_codes(sig, ent, rule, occ)
    hd = np.where(sig > rule["hdmm_above"], choice["hdmm_d"], choice["hdmm_a"])
    dw = choice.get("dawa2d_a", np.full(sig.shape, np.inf))
    e = np.choose(code, [choice["ag_a"], choice["privtree_a"], hd, dw])
    return np.bincount(idx, weights=e, minlength=best.size) / cnt / best


def fit_rule(runs: list[dict], *, reference=("ag", "privtree", "hdmm", "ug"),
             grid: dict | None = None, target: float = 1.15,
             occupancy_grid=None, privtree_occupancy: bool = False) -> tuple[dict, dict]:
    """Fit :data:`RULE` on per-run measurements (``veil.maps.bench.auto_runs``).

    Each run carries ``setting`` (any hashable, e.g. ``(map, eps, N)``), ``signal`` and
    ``entropy`` (as ``auto`` measures them), the errors of the candidates at ``auto``'s budgets
    (``ag_a``, ``privtree_a``, ``hdmm_a`` after the feature; ``hdmm_d`` when no feature is
    bought) and the reference methods' errors at the full budget. For every setting, the ratio
    of ``auto``'s mean error to the best reference's mean error; over a grid of thresholds
    (``grid``: name -> candidates), the rules with the fewest settings above ``target``, then
    the smallest mean log ratio (to 3 decimals), tie; each threshold is then the median of the
    tied rules' values (snapped to the grid): where the training data cannot tell thresholds
    apart, the middle of the undecided range. Returns ``(rule, report)``.

    With ``occupancy_grid`` (runs carrying ``occupancy`` and ``dawa2d_a``, DAWA-2D's error at
    ``auto``'s budget), a second stage: the other thresholds fixed, ``dawa_occupancy`` is chosen
    from ``occupancy_grid`` by the same score and tie rule (a value below 0 closes the DAWA-2D
    branch; the training data leave it undecided wherever DAWA-2D is never picked).
    """
    settings = sorted({r["setting"] for r in runs}, key=str)
    sid = {k: i for i, k in enumerate(settings)}
    idx = np.array([sid[r["setting"]] for r in runs])
    cnt = np.bincount(idx, minlength=len(settings)).astype(np.float64)
    sig = np.array([r["signal"] for r in runs])
    ent = np.array([r["entropy"] for r in runs])
    err = {k: np.array([r[k] for r in runs]) for k in ("ag_a", "privtree_a", "hdmm_a", "hdmm_d")}
    best = np.min([np.bincount(idx, weights=[r[m] for r in runs], minlength=len(settings))
                   / cnt for m in reference], axis=0)
    if grid is None:
        sg = lambda lo, hi: [round(10 ** (k / 4), 4) for k in range(lo, hi + 1)]  # noqa: E731
        grid = {"hdmm_above": sg(0, 6), "privtree_min_signal": sg(-8, -2),
                "privtree_entropy": [round(v, 2) for v in np.arange(0.30, 0.601, 0.02)],
                "hdmm_mid_signal": sg(-4, 4),
                "hdmm_entropy": [round(v, 2) for v in np.arange(0.50, 0.801, 0.02)],
                # where AG's band closes (HDMM above); 31.6, the top of hdmm_above's grid,
                # closes nothing below it
                "ag_max_signal": sg(0, 6)}
    grid = dict(grid)
    if "dawa_occupancy" in grid:
        occupancy_grid = grid.pop("dawa_occupancy")
    pt_grid = None
    if "privtree_occupancy" in grid:
        pt_grid = grid.pop("privtree_occupancy")
    elif privtree_occupancy and occupancy_grid is not None:
        pt_grid = occupancy_grid
    names = list(grid)
    choice = {"hdmm_d": err["hdmm_d"], "hdmm_a": err["hdmm_a"], "privtree_a": err["privtree_a"],
              "ag_a": err["ag_a"]}
    scored = []
    for combo in itertools.product(*(grid[n] for n in names)):
        rule = dict(zip(names, combo))
        if rule["hdmm_mid_signal"] > rule["hdmm_above"] or \
                rule["privtree_min_signal"] > rule["hdmm_above"]:
            continue
        ratio = _ratios(rule, sig, ent, choice, idx, cnt, best)
        scored.append(((int(np.sum(ratio > target)), round(float(np.mean(np.log(ratio))), 3)),
                       combo))
    top = min(k for k, _ in scored)
    tied = np.array([c for k, c in scored if k == top], dtype=np.float64)
    tied_ranges = {n: (float(tied[:, j].min()), float(tied[:, j].max()))
                   for j, n in enumerate(names)}
    n_tied = int(tied.shape[0])
    # thresholds the training data cannot tell apart: the middle of the tied candidates (the
    # median per threshold, snapped to the grid), not the first one met
    rule = {}
    for j, n in enumerate(names):
        vals = np.array(grid[n], dtype=np.float64)
        rule[n] = float(vals[np.argmin(np.abs(vals - np.median(tied[:, j])))])
    if occupancy_grid is not None:
        occ = np.array([r["occupancy"] for r in runs])
        choice["dawa2d_a"] = np.array([r["dawa2d_a"] for r in runs])
        og = np.asarray(occupancy_grid, dtype=np.float64)
        pg = None if pt_grid is None else np.asarray(pt_grid, dtype=np.float64)
        pairs = [(tp, td) for td in og for tp in (pg if pg is not None else [np.nan])
                 if not (tp > td and tp >= 0)]
        sc = []
        for tp, td in pairs:
            r2 = {**rule, "dawa_occupancy": float(td)}
            if pg is not None:
                r2["privtree_occupancy"] = float(tp)
            ratio = _ratios(r2, sig, ent, choice, idx, cnt, best, occ)
            sc.append((int(np.sum(ratio > target)), round(float(np.mean(np.log(ratio))), 3)))
        top = min(sc)
        tp_v = np.array([p[0] for p, k in zip(pairs, sc) if k == top])
        td_v = np.array([p[1] for p, k in zip(pairs, sc) if k == top])
        rule["dawa_occupancy"] = float(og[np.argmin(np.abs(og - np.median(td_v)))])
        if pg is not None:
            rule["privtree_occupancy"] = float(pg[np.argmin(np.abs(pg - np.median(tp_v)))])
        ratio = _ratios(rule, sig, ent, choice, idx, cnt, best, occ)
        tied_occ = (float(td_v.min()), float(td_v.max()), int(td_v.size))
        if pg is not None:
            tied_ranges["privtree_occupancy"] = (float(tp_v.min()), float(tp_v.max()))
    else:
        ratio = _ratios(rule, sig, ent, choice, idx, cnt, best)
        tied_occ = None
    best_rule = rule
    best_rep = {"over_target": int(np.sum(ratio > target)),
                "mean_log": float(np.mean(np.log(ratio))), "worst": float(ratio.max()),
                "tied": n_tied, "tied_occupancy": tied_occ,
                "tied_ranges": tied_ranges,
                "ratios": dict(zip(settings, ratio.tolist()))}
    return best_rule, best_rep
