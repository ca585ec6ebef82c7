"""A measured adversary: can the published histograms tell who had sensitive visits?

The paper's adversary sees one sanitized histogram and knows only that sensitive
bins are zero. A stronger, realistic adversary has training data: published
histograms of other users whose label ("visited a sensitive place or not") is
known, and learns the difference. :func:`distinguishability` measures it:

* units (e.g. weekly histograms) are grouped by user, and users are split into
  ``folds`` folds at random; each fold is scored by attacks trained on the other
  folds (cross-fitting: no user is in the training and the test set at once);
* attacks: ``"likelihood"`` (per-class multinomial category model plus a
  smoothed size distribution: the log-likelihood ratio), ``"gbm"``
  (scikit-learn's ``HistGradientBoostingClassifier`` on counts, shares, size and
  number of visited categories) and ``"size"`` (the released size alone);
* the score is the AUC over the positive-negative pairs *within* each held-out fold
  (0.5: no better than a coin; 1: perfect; pooling the folds' scores instead would
  bias it below 0.5, since each fold's scores are calibrated to the other folds' base
  rate), with a percentile bootstrap confidence interval that resamples *users*
  (``scipy.stats.bootstrap``), since a user's units are correlated;
* the control: the same procedure with permuted labels, whose AUC must be about 0.5
  (a check that the pipeline itself does not leak labels).

An AUC near 0.5 means these attacks, trained on this much data, do no better than
chance; it is an empirical statement about the attacks and the data, not a proof
that no adversary can do better.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import ParameterError
from ..validation import check_choice, check_int, check_probability

__all__ = ["auc", "fold_auc", "distinguishability", "AttackResult", "Distinguishability", "ATTACKS"]

ATTACKS = ("likelihood", "gbm", "size")


def auc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties half.

    Examples
    --------
    >>> auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
    0.75
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 == 0 or n0 == 0:
        raise ParameterError("auc needs at least one positive and one negative label")
    from scipy.stats import rankdata

    r = rankdata(s)
    return float((r[y].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


@dataclass(frozen=True)
class AttackResult:
    """One attack's AUC (with its confidence interval) and its permuted-label control."""

    attack: str
    auc: float
    ci: tuple[float, float]
    control_auc: float
    control_ci: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {"attack": self.attack, "auc": self.auc, "ci": list(self.ci),
                "control_auc": self.control_auc, "control_ci": list(self.control_ci)}


@dataclass(frozen=True)
class Distinguishability:
    """Results of :func:`distinguishability` (one entry per attack)."""

    results: dict[str, AttackResult]
    n_units: int
    n_users: int
    positive_share: float
    level: float
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def max_auc(self) -> float:
        """The best attack's AUC (the adversary picks the strongest one)."""
        return max(r.auc for r in self.results.values())

    def to_dict(self) -> dict[str, Any]:
        return {"results": {k: v.to_dict() for k, v in self.results.items()},
                "n_units": self.n_units, "n_users": self.n_users,
                "positive_share": self.positive_share, "level": self.level,
                "max_auc": self.max_auc, "parameters": self.parameters}


def _features(X: np.ndarray) -> np.ndarray:
    n = X.sum(axis=1, keepdims=True).astype(np.float64)
    return np.hstack([X, X / np.maximum(n, 1.0), n, (X > 0).sum(axis=1, keepdims=True)])


#: tempering factors tried by the likelihood attack (chosen on the training folds)
_TEMPERS = (0.0, 1.0, 3.0, 10.0, 30.0, 100.0)


def _likelihood(Xtr, ytr, Xte) -> np.ndarray:
    """Log-likelihood ratio of class 1 against class 0 from a size model and a profile model.

    Size: a Gaussian kernel density of ``log(1 + size)`` per class (no term when
    every released size is equal). Profile: per-class category probabilities
    ``theta_c`` (pooled counts + 0.5); a histogram's profile evidence is
    ``tau * sum_i share_i * log(theta_1i / theta_0i)``, i.e. the multinomial
    log-likelihood ratio of ``tau`` visits drawn from its shares (visits of one
    user are not independent, so the raw multinomial over-counts evidence); ``tau``
    is picked from :data:`_TEMPERS` by the AUC on the training folds.
    """
    from scipy.stats import gaussian_kde

    ntr, nte = Xtr.sum(axis=1), Xte.sum(axis=1)

    def size_term(n):
        if np.ptp(np.r_[ntr, nte]) == 0:
            return np.zeros(n.size)
        out = np.zeros(n.size)
        for c, sign in ((True, 1.0), (False, -1.0)):
            v = np.log1p(ntr[ytr == c].astype(np.float64))
            if np.ptp(v) == 0:
                v = v + np.linspace(-0.5, 0.5, v.size)
            out += sign * gaussian_kde(v).logpdf(np.log1p(n.astype(np.float64)))
        return out

    theta = [(Xtr[ytr == c].sum(axis=0) + 0.5) for c in (True, False)]
    w = np.log(theta[0] / theta[0].sum()) - np.log(theta[1] / theta[1].sum())

    def prof(X, n):
        return (X / np.maximum(n, 1)[:, None]) @ w

    st_tr, pr_tr = size_term(ntr), prof(Xtr, ntr)
    tau = max(_TEMPERS, key=lambda t: auc(st_tr + t * pr_tr, ytr))
    return size_term(nte) + tau * prof(Xte, nte)


def _fit_score(attack: str, Xtr, ytr, Xte, rng) -> np.ndarray:
    if attack == "size":
        s_tr = Xtr.sum(axis=1)
        sign = 1.0 if auc(s_tr, ytr) >= 0.5 else -1.0  # orientation learnt on training data
        return sign * Xte.sum(axis=1).astype(np.float64)
    if attack == "likelihood":
        return _likelihood(Xtr, ytr, Xte)
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
    except ImportError:  # pragma: no cover - depends on the environment
        raise ParameterError("the 'gbm' attack needs scikit-learn (pip install 'veil[bench]')"
                             ) from None
    from threadpoolctl import threadpool_limits

    clf = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05,
                                         random_state=int(rng.integers(2**31 - 1)))
    with threadpool_limits(1):  # one thread: far faster than oversubscribed OpenMP on a busy host
        clf.fit(_features(Xtr), ytr)
        return clf.predict_proba(_features(Xte))[:, 1]


def _cross_fit(attack, X, y, fold_of_unit, folds, rng) -> np.ndarray:
    scores = np.empty(X.shape[0])
    for f in range(folds):
        te = fold_of_unit == f
        tr = ~te
        if len(np.unique(y[tr])) < 2:
            raise ParameterError("a training fold has a single label: too few users of one kind")
        scores[te] = _fit_score(attack, X[tr], y[tr], X[te], rng)
    return scores


def fold_auc(scores: np.ndarray, labels: np.ndarray, fold: np.ndarray) -> float:
    """AUC over the positive-negative pairs that lie in the same fold.

    Examples
    --------
    >>> import numpy as np
    >>> fold_auc(np.array([0.1, 0.9, 5.0, 6.0]), np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1]))
    1.0
    """
    from scipy.stats import rankdata

    y = np.asarray(labels).astype(bool)
    num = den = 0.0
    for f in np.unique(fold):
        m = fold == f
        yy = y[m]
        n1, n0 = int(yy.sum()), int((~yy).sum())
        if n1 == 0 or n0 == 0:
            continue
        r = rankdata(scores[m])
        num += r[yy].sum() - n1 * (n1 + 1) / 2.0
        den += n1 * n0
    return float(num / den) if den else float("nan")


def _cluster_ci(scores, y, user_codes, n_users, n_boot, level, rng,
                fold) -> tuple[float, float]:
    from scipy.stats import bootstrap

    order = np.argsort(user_codes, kind="stable")
    starts = np.searchsorted(user_codes[order], np.arange(n_users + 1))
    rows = [order[starts[u]:starts[u + 1]] for u in range(n_users)]

    def stat(users):
        idx = np.concatenate([rows[int(u)] for u in users])
        return fold_auc(scores[idx], y[idx], fold[idx])

    res = bootstrap((np.arange(n_users),), stat, n_resamples=n_boot, confidence_level=level,
                    method="percentile", vectorized=False, random_state=rng)
    lo, hi = res.confidence_interval
    return float(lo), float(hi)


def distinguishability(released: Any, labels: Any, groups: Sequence[Any], *,
                       attacks: Sequence[str] = ("likelihood", "gbm"), folds: int = 2,
                       n_boot: int = 500, level: float = 0.95, control: bool = True,
                       rng: Any = None) -> Distinguishability:
    """AUC of attacks that tell, from published histograms, who had sensitive visits.

    Parameters
    ----------
    released : array-like of int, shape (units, bins)
        The published histograms (one row per unit: a user, or a user-week).
    labels : array-like of bool, shape (units,)
        True where the unit's *original* histogram had a sensitive visit.
    groups : sequence, shape (units,)
        The user of each unit: train/test folds are split over users.
    attacks : subset of ("likelihood", "gbm", "size")
    folds : int
        Number of user folds for cross-fitting (>= 2).
    n_boot : int
        Bootstrap resamples (over users) for the confidence interval.
    level : float
        Confidence level of the interval.
    control : bool
        Also run every attack on permuted labels (expected AUC 0.5).
    rng : numpy.random.Generator, optional
        Randomness of the folds, the bootstrap and the permutation (default: OS
        entropy; seed it for reproducible experiments).

    Returns
    -------
    Distinguishability

    Examples
    --------
    >>> import numpy as np
    >>> g = np.random.default_rng(0)
    >>> y = g.random(400) < 0.5
    >>> X = g.poisson(np.where(y[:, None], [6, 2, 2], [2, 2, 6]))  # a strong signal
    >>> r = distinguishability(X, y, np.arange(400), attacks=["likelihood"], n_boot=100, rng=g)
    >>> r.results["likelihood"].auc > 0.9, abs(r.results["likelihood"].control_auc - 0.5) < 0.1
    (True, True)
    """
    from ..random import make_rng

    rng = make_rng(rng)
    X = np.asarray(released)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ParameterError(f"released must be a non-empty 2-D array (units, bins), got shape "
                             f"{X.shape}")
    if X.dtype.kind not in "iu":
        if X.dtype.kind == "f" and np.all(np.isfinite(X)) and np.all(X == np.round(X)):
            X = X.astype(np.int64)
        else:
            raise ParameterError("released must hold integer counts")
    if (X < 0).any():
        raise ParameterError("released must hold non-negative counts")
    X = X.astype(np.int64)
    y = np.asarray(labels).astype(bool)
    if y.shape != (X.shape[0],):
        raise ParameterError(f"labels must have {X.shape[0]} entries, got shape {y.shape}")
    g = np.asarray(groups)
    if g.shape != (X.shape[0],):
        raise ParameterError(f"groups must have {X.shape[0]} entries, got shape {g.shape}")
    for a in attacks:
        check_choice(a, "attack", ATTACKS)
    if not attacks:
        raise ParameterError("attacks must name at least one attack")
    folds = check_int(folds, "folds", minimum=2)
    n_boot = check_int(n_boot, "n_boot", minimum=10)
    level = check_probability(level, "level", open_low=True, open_high=True)
    users, codes = np.unique(g, return_inverse=True)
    if users.size < 2 * folds:
        raise ParameterError(f"need at least {2 * folds} users for {folds} folds, got {users.size}")
    if y.all() or not y.any():
        raise ParameterError("labels must contain both kinds of units")
    fold_of_user = rng.permutation(np.arange(users.size) % folds)
    fold = fold_of_user[codes]
    out = {}
    y_perm = rng.permutation(y)
    for a in attacks:
        s = _cross_fit(a, X, y, fold, folds, rng)
        ci = _cluster_ci(s, y, codes, users.size, n_boot, level, rng, fold)
        if control:
            sc = _cross_fit(a, X, y_perm, fold, folds, rng)
            c_auc = fold_auc(sc, y_perm, fold)
            c_ci = _cluster_ci(sc, y_perm, codes, users.size, n_boot, level, rng, fold)
        else:
            c_auc, c_ci = float("nan"), (float("nan"), float("nan"))
        out[a] = AttackResult(a, fold_auc(s, y, fold), ci, c_auc, c_ci)
    return Distinguishability(out, int(X.shape[0]), int(users.size), float(y.mean()), level,
                              {"folds": folds, "n_boot": n_boot, "attacks": list(attacks)})
