"""Sampler speed, side by side in one run on 10^6 draws.

    python benchmarks/samplers.py            # needs `pip install opendp` (benchmark only)

Targets (issue 2): veil's exact discrete Laplace >= 20x faster than OpenDP's exact
integer Laplace and within 5x of numpy's float two-sided geometric; the planar
Gamma-radius sampler >= 100x faster than a per-point Python loop.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import machine_note, median_time, print_table  # noqa: E402

from veil.samplers import discrete_laplace, planar_laplace_noise  # noqa: E402

N = 1_000_000


def numpy_two_sided_geometric(scale: float, n: int, rng: np.random.Generator) -> np.ndarray:
    p = 1 - math.exp(-1 / scale)
    return rng.geometric(p, n) - rng.geometric(p, n)


def opendp_integer_laplace(scale: float, n: int):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    m = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int),
                          scale=scale)
    return m([0] * n)


def planar_loop(eps: float, n: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty((n, 2))
    for i in range(n):
        theta = rng.uniform(0.0, 2 * math.pi)
        r = rng.gamma(2.0, 1.0 / eps)
        out[i, 0] = r * math.cos(theta)
        out[i, 1] = r * math.sin(theta)
    return out


def main() -> None:
    rng = np.random.default_rng()
    print(machine_note())
    rows = []
    have_opendp = True
    try:
        import opendp  # noqa: F401
    except ImportError:
        have_opendp = False
        print("opendp not installed: `pip install opendp` to include it")
    for scale in (1.0, 10.0):
        t_veil = median_time(lambda: discrete_laplace(scale, N, rng), 5)
        t_np = median_time(lambda: numpy_two_sided_geometric(scale, N, rng), 5)
        t_odp = median_time(lambda: opendp_integer_laplace(scale, N), 2) if have_opendp else math.nan
        rows.append([f"discrete Laplace, scale {scale:g}", t_veil, t_np, t_odp,
                     t_odp / t_veil, t_veil / t_np])
    print(f"\nExact discrete Laplace, {N:,} draws (median seconds)")
    print_table(["sampler", "veil exact", "numpy float geom", "OpenDP exact",
                 "OpenDP/veil (target >= 20)", "veil/numpy (target <= 5)"], rows)
    eps = 0.01
    t_vec = median_time(lambda: planar_laplace_noise(eps, N, rng), 5)
    t_loop = median_time(lambda: planar_loop(eps, N, rng), 1)
    print(f"\nPlanar Laplace displacement (Gamma(2) radius), {N:,} draws (median seconds)")
    print_table(["sampler", "veil vectorized", "per-point Python loop",
                 "loop/veil (target >= 100)"], [["planar Laplace", t_vec, t_loop, t_loop / t_vec]])


if __name__ == "__main__":
    main()
