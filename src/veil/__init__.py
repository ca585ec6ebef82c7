"""veil: privacy-preserving publishing of location data, histograms and tables.

The top-level namespace holds the privacy core; each capability lives in its
subpackage (``veil.histograms``, ``veil.visits``, ``veil.geo``, ``veil.tables``).
Importing veil has no side effects and does not import the subpackages.
"""

from __future__ import annotations

from .budget import Accountant, GeoDP, PureDP
from .errors import (BudgetExceededError, DataError, InfeasibleError, InstanceTooLargeError,
                     ParameterError, PrivacyWarning, VeilError)
from .mechanisms import exponential_mechanism, geometric_mechanism, laplace_mechanism
from .random import make_rng, spawn
from .release import Release

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "Accountant",
    "GeoDP",
    "PureDP",
    "Release",
    "VeilError",
    "ParameterError",
    "DataError",
    "InfeasibleError",
    "InstanceTooLargeError",
    "BudgetExceededError",
    "PrivacyWarning",
    "make_rng",
    "spawn",
    "geometric_mechanism",
    "laplace_mechanism",
    "exponential_mechanism",
]
