"""Location privacy: geometry, geo-indistinguishability, l-privacy, and release under temporal correlations.

Submodules
----------
geometry
    Local metric planes (azimuthal equidistant), grids, regions (Polygon, Disc, Box).
geoind
    Planar Laplace for real use (exact, per-point local plane), the discretized and truncated
    variant with its eps', and the consistent obfuscator (averaging defence).
lprivacy
    Distinguishability functions l, losses, circular noise functions, l-privacy checks, expected
    loss with error bounds, optimal noise search.
lp
    The optimal discrete mechanism by linear programming (Bordenabe et al.), with spanner reduction.
metrics
    Distance errors, quantiles, the Bayesian remapping adversary's error.
snapping
    The public output lattice of every continuous release (float-safe outputs).
remap
    Optimal remapping of reports with a public prior (free post-processing).
repeated
    A per-user budget manager for streams of reports (cache, predictive test, budget per
    window).
risk
    Re-identification risk of trajectory sets (location, sequence, frequency attacks).
audits
    veil.audit experiments for the mechanisms and their canaries.
temporal
    Release under temporal correlations (separate subpackage).
"""

from .geoind import (ConsistentObfuscator, PublicCells, discretized_planar_laplace,
                     discretized_planar_laplace_xy, planar_laplace, planar_laplace_xy)
from .remap import optimal_remap, remap_trajectory
from .repeated import ReportBudgetManager
from .risk import reidentification_risk, risk_before_after
from .geometry import Box, Disc, Grid, LocalProjection, Polygon, Region
from .lprivacy import (PlanarLaplace, RadialNoise, TightNoise, check_lprivacy,
                       custom_distinguishability, custom_loss, d_epsilon_privacy,
                       distance_loss, expected_loss, geo_indistinguishability, optimal_noise,
                       power_loss, squared_loss, threshold_loss)

__all__ = [
    "LocalProjection", "Grid", "Region", "Polygon", "Disc", "Box",
    "planar_laplace", "planar_laplace_xy", "discretized_planar_laplace",
    "discretized_planar_laplace_xy", "ConsistentObfuscator", "PublicCells",
    "optimal_remap", "remap_trajectory", "ReportBudgetManager", "reidentification_risk",
    "risk_before_after",
    "geo_indistinguishability", "d_epsilon_privacy", "custom_distinguishability",
    "distance_loss", "squared_loss", "power_loss", "threshold_loss", "custom_loss",
    "PlanarLaplace", "TightNoise", "RadialNoise", "check_lprivacy", "expected_loss",
    "optimal_noise",
]
