"""Run the DP ratio audits of the core mechanisms and their canaries; print eps lower bounds.

    python benchmarks/audit.py

Each audit: 2e5 samples per side, exact Clopper-Pearson bounds, Bonferroni over the
event family, family-wise alpha 1e-6. PASS iff the lower bound <= claimed eps.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import print_table  # noqa: E402

from veil.audit.core_mechanisms import AUDITS, CANARIES  # noqa: E402


def main() -> None:
    rows = []
    for kind, table in (("mechanism", AUDITS), ("canary", CANARIES)):
        for name, fn in table.items():
            t = time.perf_counter()
            res = fn()
            rows.append([kind, name, res.claimed_epsilon, res.eps_lower_bound,
                         "PASS" if res.passed else "FAIL", res.worst_event,
                         time.perf_counter() - t])
    print_table(["kind", "name", "claimed eps", "eps lower bound", "verdict", "worst event",
                 "seconds"], rows)


if __name__ == "__main__":
    main()
