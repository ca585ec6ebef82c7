"""Small helpers shared by the benchmark scripts (timing, tables, machine note)."""

from __future__ import annotations

import os
import platform
import statistics
import time
from typing import Callable


def median_time(fn: Callable[[], object], repeats: int = 5) -> float:
    """Median wall time in seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def machine_note() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"load average {load:.2f} (shared machine: compare ratios, not absolute times)")


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for j, r in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
        if j == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def _fmt(c: object) -> str:
    if isinstance(c, float):
        return f"{c:.4g}"
    return str(c)


def run_child(code: str, *args: str) -> dict:
    """Run ``code`` in a fresh Python process with this checkout's ``src`` first on the path;
    return the JSON object its last line of stdout prints (peak memory per run needs a fresh
    process: ``ru_maxrss`` only grows)."""
    import json
    import os
    import subprocess
    import sys

    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])
