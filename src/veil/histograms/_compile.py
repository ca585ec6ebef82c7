"""Optional numba compilation for the dynamic-programming kernels.

numba is an optional dependency (``pip install veil[fast]``). When it is
missing, or when the environment variable ``VEIL_DISABLE_NUMBA=1`` is set,
:data:`HAVE_NUMBA` is False and the kernels in :mod:`veil.histograms.partition`
use their vectorized numpy versions instead (same results, slower).
"""

from __future__ import annotations

import os

__all__ = ["HAVE_NUMBA", "njit"]

HAVE_NUMBA = False
if os.environ.get("VEIL_DISABLE_NUMBA", "") not in ("1", "true", "yes"):
    try:  # pragma: no cover - depends on the environment
        import numba as _numba

        HAVE_NUMBA = True
    except Exception:  # noqa: BLE001 - any import failure means "no numba"
        HAVE_NUMBA = False


def njit(*args, **kwargs):
    """``numba.njit(cache=True)`` when numba is available, else a no-op decorator."""
    if HAVE_NUMBA:
        kwargs.setdefault("cache", True)
        return _numba.njit(*args, **kwargs)
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f
