"""2-D trees with and without their padding nodes set to 0 (``zero_empty_nodes``), side by side.

A 200 x 230 crop of the DPBench checkin map (padded to 256 x 256 by the quadtree and HB2D),
N = 10^6, 2000 random rectangles, 20 runs, the same noise draws for both variants (the
variant without the fix replaces ``zero_empty_nodes`` by the identity). Prints a markdown table:
method, eps, scaled mean absolute error before / after, ratio.

    PYTHONPATH=src python benchmarks/maps_padding.py
"""
import numpy as np
import veil.maps.mechanisms as mech
from veil.maps import publish
from veil.maps.evaluation import (load_dpbench_2d, random_rectangles, rectangle_answers,
                                  resample_map)
from veil.random import make_rng
a = load_dpbench_2d()["checkin_256_256"][:200, :230]
g = np.random.default_rng(5)
q = random_rectangles(200, 230, size=2000, rng=g)
orig = mech.zero_empty_nodes
print("| method | eps | padding noised | padding 0 | ratio |")
print("|---|---|---|---|---|")
for method in ("quadtree", "hb2d"):
    for eps in (0.1, 1.0):
        errs = {True: [], False: []}
        for t in range(20):
            x = resample_map(a, 10**6, rng=g)
            ta = rectangle_answers(q, x)
            seed = int(g.integers(2**62))
            for on in (True, False):
                mech.zero_empty_nodes = orig if on else (lambda lv, real, b: lv)
                v = publish(x, epsilon=eps, method=method, rng=make_rng(seed=seed)).value
                errs[on].append(np.mean(np.abs(ta - rectangle_answers(q, v))) / 1e6)
        mech.zero_empty_nodes = orig
        on, off = np.mean(errs[True]), np.mean(errs[False])
        print(f"| {method} | {eps} | {off:.3g} | {on:.3g} | {on/off:.3f} |")
