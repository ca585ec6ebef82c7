"""Location release under temporal correlations (Xiao & Xiong, CCS 2015).

A user shares locations continually; an adversary who knows a public Markov mobility
model filters the released points with a hidden Markov model. At each timestamp veil
computes the adversary's prior, the delta-location set (the most probable cells with
mass >= 1 - delta), replaces a drifted true cell by its surrogate, releases a point by
the Planar Isotropic Mechanism (K-norm mechanism on the sensitivity hull) or the
L1 Laplace baseline, and updates the posterior.

Main entry points: :class:`TemporalGrid` / :func:`beijing_grid`, :class:`MarkovModel`,
:func:`release_trajectory`, :class:`PlanarIsotropicMechanism`,
:class:`L1LaplaceMechanism`, :func:`sensitivity_hull`, :func:`delta_location_set`,
:func:`forward_filter`, the metrics and the GeoLife loader.
"""

from .geolife import GeoLifeTrajectory, downsample, load_geolife, read_plt, to_cells
from .grid import BEIJING_4TH_RING, TemporalGrid, beijing_grid
from .hmm import (brute_force_filter, delta_location_set, forward_filter, grid_surrogates,
                  nearest_in_set,
                  posterior_update)
from .knorm import (MECHANISMS, L1LaplaceMechanism, PlanarIsotropicMechanism, SensitivityHull,
                    knorm_noise, sensitivity_hull)
from .markov import MarkovModel, transition_counts
from .metrics import drift_ratio, euclidean_error, knn_precision_recall
from .release import ReleaseStepper, TrajectoryRelease, release_trajectory

__all__ = [
    "BEIJING_4TH_RING", "TemporalGrid", "beijing_grid",
    "MarkovModel", "transition_counts",
    "delta_location_set", "nearest_in_set", "grid_surrogates", "posterior_update",
    "forward_filter",
    "brute_force_filter",
    "SensitivityHull", "sensitivity_hull", "knorm_noise", "PlanarIsotropicMechanism",
    "L1LaplaceMechanism", "MECHANISMS",
    "ReleaseStepper", "TrajectoryRelease", "release_trajectory",
    "euclidean_error", "drift_ratio", "knn_precision_recall",
    "GeoLifeTrajectory", "read_plt", "load_geolife", "downsample", "to_cells",
]
