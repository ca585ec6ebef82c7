"""File-level privacy audits of the DP commands: eps lower bounds of the written values.

    python benchmarks/file_audits.py            # fast sizes (as in CI), about a minute
    python benchmarks/file_audits.py --slow     # the slow suite's sizes (minutes)

For every DP command (veil.audit.files): the command runs in-process on two neighbouring
input files; the value read back from its output goes through the DP ratio audit (exact
Clopper-Pearson bounds, Bonferroni over the event family, family-wise alpha 1e-6; PASS iff
the lower bound <= the claimed epsilon), and every other artefact must be identical across
the neighbours. The same audits on broken twins must FAIL: a sidecar that records the
input's size and sum, a run with 4x (40x for one-draw-per-run commands at the fast size)
the epsilon it claims, and (histogram publish) a sidecar that passes the input's size off as
a declared output (``derived``), which only the audit of the declared outputs can catch. The table ends with ratios lower bound / claimed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import machine_note, print_table  # noqa: E402

from veil.audit.files import FILE_AUDITS, TRUE_NEIGHBOURS, audit_command, broken_twin  # noqa: E402

ONE_DRAW = {"histogram publish", "trajectory release"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slow", action="store_true", help="the slow suite's sizes and variants")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    print(machine_note())
    rows = []
    plan = [(name, make, slow if args.slow else fast) for name, (make, fast, slow)
            in sorted(FILE_AUDITS.items())]
    if args.slow:
        plan += [(name, make, n) for name, (make, n) in sorted(TRUE_NEIGHBOURS.items())]
    for name, make, n in plan:
        factor = 4 if (args.slow or name not in ONE_DRAW) else 40
        runs = [("command", (make(), None))]
        # auto's noisy total is paid 2 % of epsilon: an under-noised twin of that one draw is
        # beyond what these run counts can detect (tests/audit/test_file_audits.py says why)
        if name != "histogram publish (noisy total)":
            runs.append((f"twin: {factor:g}x epsilon",
                         broken_twin(make(), "under-noised", factor=factor)))
        runs.append(("twin: data in sidecar", broken_twin(make(), "data-dependent-sidecar")))
        if name == "histogram publish":  # the one spec whose audit covers declared outputs
            runs.append(("twin: data as an output",
                         broken_twin(make(), "data-dependent-output")))
        for label, (spec, runner) in runs:
            t = time.perf_counter()
            size = n if not label.startswith("twin: data in") else min(n, 10 if name in ONE_DRAW
                                                                     else n)
            r = audit_command(spec, n=size, seed=args.seed, runner=runner)
            rows.append([name, label, size, r.ratio.claimed_epsilon, r.ratio.eps_lower_bound,
                         r.ratio.eps_lower_bound / r.ratio.claimed_epsilon,
                         "PASS" if r.ratio.passed else "FAIL",
                         "identical" if r.artefacts_identical else "DIFFER",
                         "PASS" if r.passed else "FAIL", time.perf_counter() - t])
    print_table(["command", "run", "draws per side", "claimed eps", "eps lower bound",
                 "bound / claimed", "value audit", "artefacts", "verdict", "seconds"], rows)
    bad = [r for r in rows if (r[1] == "command") != (r[8] == "PASS")]
    print(f"{sum(r[1] == 'command' for r in rows)} commands audited; "
          f"{'every command passed and every twin failed' if not bad else f'{len(bad)} unexpected verdicts'}")
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
