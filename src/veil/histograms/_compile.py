"""Optional, lazy numba compilation for the dynamic-programming kernels.

numba is a dependency of veil but kept optional at run time. It is imported
only when a compiled kernel is first called (importing numba costs about a
second), and small problems use the numpy kernels instead, so short runs never
pay for it. When numba is missing, or ``VEIL_NO_NUMBA=1`` is set,
:data:`HAVE_NUMBA` is False and the numpy kernels are used (same results, slower).
"""

from __future__ import annotations

import importlib.util
import os

from .._jit import call

__all__ = ["HAVE_NUMBA", "njit", "use_compiled"]

HAVE_NUMBA = (os.environ.get("VEIL_NO_NUMBA", "") not in ("1", "true", "yes")
              and importlib.util.find_spec("numba") is not None)

#: problems with fewer elementary steps than this run on numpy under engine='auto'
SMALL_WORK = 5_000_000


def use_compiled(engine: str, work: float) -> bool:
    """Whether ``engine`` ('numba' or 'auto', already validated) should run compiled code."""
    return engine == "numba" or (engine == "auto" and HAVE_NUMBA and work >= SMALL_WORK)


class _LazyKernel:
    """A plain Python function compiled with ``numba.njit(cache=True)`` on first call."""

    def __init__(self, fn):
        self.py_func = fn
        self._compiled = None
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __call__(self, *args):
        if not HAVE_NUMBA:
            return self.py_func(*args)
        if self._compiled is None:
            import numba

            self._compiled = numba.njit(cache=True)(self.py_func)
        return call(self._compiled, *args)


def njit(fn):
    """Decorator: compile lazily with numba when available, else run as Python.

    Kernels must be self-contained (no calls to other decorated kernels).
    """
    return _LazyKernel(fn)
