"""veil: privacy-preserving publishing of location data, histograms and tables.

The top-level namespace holds the privacy core; each capability lives in its
subpackage (``veil.histograms``, ``veil.visits``, ``veil.geo``, ``veil.tables``).
Importing veil has no side effects and does not import the subpackages.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

# The names below are loaded on first use (PEP 562), so that ``import veil`` is cheap: the
# ``veil`` command installs its Ctrl-C handling before numpy and the rest are imported
# (see :mod:`veil._console`).
_LAZY = {
    "Accountant": "budget", "GeoDP": "budget", "PureDP": "budget",
    "BudgetExceededError": "errors", "DataError": "errors", "InfeasibleError": "errors",
    "InstanceTooLargeError": "errors", "ParameterError": "errors", "PrivacyWarning": "errors",
    "VeilError": "errors",
    "exponential_mechanism": "mechanisms", "geometric_mechanism": "mechanisms",
    "laplace_mechanism": "mechanisms",
    "make_rng": "random", "spawn": "random",
    "Release": "release",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and editors
    from .budget import Accountant, GeoDP, PureDP
    from .errors import (BudgetExceededError, DataError, InfeasibleError,
                         InstanceTooLargeError, ParameterError, PrivacyWarning, VeilError)
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


#: submodules that ``import veil`` used to load eagerly: still reachable as attributes
_SUBMODULES = frozenset({"budget", "errors", "mechanisms", "random", "release"})


def __getattr__(name: str):
    if name in _SUBMODULES:
        return import_module(f".{name}", __name__)
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'veil' has no attribute {name!r}")
    value = getattr(import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
