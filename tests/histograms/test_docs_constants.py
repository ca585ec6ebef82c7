"""The constants docs/histograms.md states are the code's (the guide cannot drift from it)."""

import re
from pathlib import Path

from veil.histograms.api import AUTO_TOTAL_FRACTION
from veil.histograms.dawa import PENALTY_SCHEDULE, SCHEDULE_MAX_N, SELECTION_PENALTY
from veil.histograms.hdmm import P_CAP
from veil.histograms.structurefirst import AUTHORS_GRID, NEIGHBOUR_VARIATION

DOC = (Path(__file__).resolve().parents[2] / "docs" / "histograms.md").read_text()


def test_guide_states_the_code_constants():
    assert f"SELECTION_PENALTY = {SELECTION_PENALTY:g}" in DOC
    assert f"`1/eps2 + {SELECTION_PENALTY:g} * 4/eps1`" in DOC
    steps = [f"{p:g} below {u:.2f}" for u, p in PENALTY_SCHEDULE[1:-1]]
    sched = (f"{PENALTY_SCHEDULE[0][1]:g} below `log10(s) = {PENALTY_SCHEDULE[0][0]:.2f}`, "
             + ", ".join(steps) + f", then {PENALTY_SCHEDULE[-1][1]:g}")
    assert sched in " ".join(DOC.split()), sched
    assert f"`SCHEDULE_MAX_N = {SCHEDULE_MAX_N}`" in DOC
    assert f"capped at\n{P_CAP}" in DOC or f"capped at {P_CAP}" in DOC
    assert f"`AUTO_TOTAL_FRACTION` ({AUTO_TOTAL_FRACTION * 100:g} %)" in DOC
    assert f"eps1 = j eps / {AUTHORS_GRID}" in DOC
    assert re.search(r"at most %d" % P_CAP, DOC)
    assert f"NEIGHBOUR_VARIATION = {NEIGHBOUR_VARIATION:g}`" in DOC
