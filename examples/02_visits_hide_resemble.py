"""Sanitize one user's location-visit histogram: hide sensitive places, resemble a target.

Shows :func:`veil.visits.hide` (sensitive location hiding: the visits to every
health or religious place are moved to other categories, changing the
histogram as little as possible) and :func:`veil.visits.resemble` (target
resemblance: move the histogram towards the city-wide average profile within a
quality bound) on synthetic check-ins
(:func:`veil.datasets.synthetic.synthetic_checkins`). Both are deterministic
optimisations, not differential privacy.

Run::

    PYTHONPATH=src python examples/02_visits_hide_resemble.py [--quality-bound 0.05] [--seed N]
"""

from __future__ import annotations

import argparse

import numpy as np

import veil
from veil.datasets.synthetic import synthetic_checkins, synthetic_city
from veil.distances import histogram_distance
from veil.visits import hide, resemble


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quality-bound", type=float, default=0.05,
                    help="largest JS distance allowed between the original and the output")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed for experiments only (makes the synthetic data reproducible)")
    args = ap.parse_args(argv)
    rng = veil.make_rng(seed=args.seed)

    city = synthetic_city(n_pois=800, rng=rng)
    checkins = synthetic_checkins(city, n_users=50, mean_per_user=60, rng=rng)
    H = checkins.visit_histograms()                       # users x leaf categories
    labels = [str(x) for x in city.categories.leaf_names]
    sensitive = city.categories.sensitive_leaf_mask()     # health and religious places
    # the user with the most sensitive visits (who still has other visits)
    ok = H[:, ~sensitive].sum(axis=1) > 0
    user = int(np.argmax(np.where(ok, H[:, sensitive].sum(axis=1), -1)))
    h = H[user]
    print(f"user {user}: {h.sum()} visits over {h.size} categories, "
          f"{h[sensitive].sum()} of them to sensitive places "
          f"({', '.join(city.categories.sensitive)})")

    r = hide(h, sensitive=sensitive, labels=labels)
    moved = r.histogram - h
    print(f"\nhide: {r.algorithm} (exact={r.exact}), size kept {r.histogram.sum()}, "
          f"sensitive visits left {r.histogram[sensitive].sum()}, "
          f"JS quality loss {r.quality_loss:.4f}")
    for i in np.flatnonzero(moved):
        print(f"  {labels[i]:32s} {h[i]:4d} -> {r.histogram[i]:4d}")

    target = H.sum(axis=0).astype(float)                  # the city-wide profile
    before = histogram_distance(h, target, "js")
    t = resemble(h, target, quality_bound=args.quality_bound, labels=labels, method="auto",
                 time_limit=0.5)
    print(f"\nresemble the city-wide profile within JS <= {args.quality_bound}: "
          f"{t.algorithm} (exact={t.exact})")
    print(f"  JS distance to the target: before {before:.4f}, after {t.privacy_value:.4f} "
          f"(bound {t.bound if t.bound is None else round(t.bound, 4)}, gap {t.gap:.2g})")
    print(f"  JS quality loss {t.quality_loss:.4f}, size kept {t.histogram.sum()}")
    print("\nok: hide and resemble done")


if __name__ == "__main__":
    main()
