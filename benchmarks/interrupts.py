"""Ctrl-C swept over the first seconds of a local batch job: exit codes and tracebacks.

    python benchmarks/interrupts.py                 # 48 delays, 0 to 1.2 s in steps of 25 ms
    python benchmarks/interrupts.py --step 0.05 --until 2

Each run starts ``tests/engine/jobrun.py`` (one batch job: 2,000 check-ins, 300 users, 8
buckets, 2 local workers, 0.1 s of sleep per bucket) in its own process group, waits until the
interpreter runs the script's first line (before that, any Python program dies by the
signal), sleeps the delay and sends SIGINT to the whole group, as a terminal's Ctrl-C does. A
run is right when the job exits 130 (or finished first, 0) and nothing on stderr is a
traceback (of the parent, a worker or the forkserver). Each run has its own ledger and state
folder. Prints one row per wrong run and a summary table.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "engine"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _util import machine_note, print_table  # noqa: E402
from helpers import checkins, kill_group, launch, wait_until  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--step", type=float, default=0.025)
    ap.add_argument("--until", type=float, default=1.2)
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="veil-interrupts-"))
    inp = checkins(d / "in.parquet", n=2000, users=300, seed=0)
    codes: dict[int, int] = {}
    wrong = []
    t0 = time.perf_counter()
    delays = np.arange(0.0, args.until, args.step)
    for i, delay in enumerate(delays):
        ready = d / f"ready{i}"
        spec = {"input": str(inp), "output": str(d / f"out{i}"), "task": "test-noise-truth",
                "params": {}, "user_column": "uid", "buckets": 8, "engine": "local",
                "workers": 2, "seed": 7}
        p = launch(spec, {"VEIL_LEDGER": str(d / f"ledger{i}.sqlite"),
                          "VEIL_HOME": str(d / f"home{i}"), "VEIL_TEST_SLEEP": "0.1",
                          "VEIL_TEST_READY": str(ready)})
        wait_until(lambda: ready.exists() or p.poll() is not None, 60)
        time.sleep(float(delay))
        kill_group(p, signal.SIGINT)
        err = p.stderr.read()
        codes[p.returncode] = codes.get(p.returncode, 0) + 1
        if p.returncode not in (0, 130) or "Traceback" in err:
            last = " | ".join(err.strip().splitlines()[-2:])[-160:]
            wrong.append((round(float(delay), 3), p.returncode, last))
    for row in wrong:
        print("WRONG", *row)
    print_table(["runs", "exit codes", "with a traceback or a wrong code", "seconds"],
                [[len(delays), ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())),
                  len(wrong), f"{time.perf_counter() - t0:.0f}"]])
    print(machine_note())


if __name__ == "__main__":
    main()
