"""Per-user batch jobs at scale: local engine (1 and 2 workers) and Dask (2 workers), side by side.

    python benchmarks/scale.py --users 1000000          # SLH for 10^6 users (~20 categories each)
    python benchmarks/scale.py --users 100000 --quick   # smaller
    python benchmarks/scale.py --users 1000000 --skip-trajectories --baseline-src /path/src
        # also runs every SLH configuration with another veil source tree (e.g. an older
        # engine) in a subprocess, alternating with this one, and prints the time ratios

Targets (issue 8): 10^6 users' SLH in under 10 minutes with peak memory under 4 GB;
throughput near-linear from 1 to 2 workers; Dask within 1.5x of the local engine's time.
Peak memory is the largest summed RSS of this process and all its descendants (workers,
Dask nanny and scheduler), sampled every 0.2 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import machine_note, print_table  # noqa: E402


class PeakRSS:
    """Sample the summed RSS of this process tree in a background thread."""

    def __init__(self, interval: float = 0.2) -> None:
        import psutil

        self.proc = psutil.Process()
        self.peak = 0
        self.interval = interval
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            total = 0
            try:
                procs = [self.proc] + self.proc.children(recursive=True)
                for p in procs:
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            self.peak = max(self.peak, total)
            time.sleep(self.interval)

    def __enter__(self) -> "PeakRSS":
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


def _clean(out: Path) -> None:
    """Remove an output folder and the private work folder beside it (an earlier run)."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(out.parent / f".{out.name}.veil-work", ignore_errors=True)


_EXTERNAL = """
import sys, time, json
sys.path.insert(0, {src!r})
from veil.engine import Job, run_job
t = time.perf_counter()
res = run_job(Job({inp!r}, {out!r}, {task!r}, params={params!r}, engine={engine!r},
                  workers={workers}, user_column={user!r}, progress=False, spend_again=True))
print(json.dumps({{"wall": time.perf_counter() - t, "users": res.users}}))
"""


def run_external(src, task, inp, out, params, engine, workers, user_column="user"):
    """The same job with another veil source tree, in a subprocess (peak RSS included)."""
    import json
    import subprocess

    _clean(out)
    code = _EXTERNAL.format(src=str(src), inp=str(inp), out=str(out), task=task, params=params,
                            engine=engine, workers=workers, user=user_column)
    with PeakRSS() as mem:
        # PYTHONPATH (not only sys.path): the forkserver preloads veil before it applies the
        # parent's sys.path, and must import the baseline's veil too
        env = dict(os.environ, PYTHONPATH=str(src))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env)
    if r.returncode != 0:
        raise SystemExit(f"baseline run failed: {r.stderr.strip()[-2000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return res["wall"], res["users"], mem.peak / 2**20


def run_config(task, inp, out, params, engine, workers, user_column="user"):
    from veil.engine import Job, run_job

    _clean(out)
    with PeakRSS() as mem:
        t = time.perf_counter()
        res = run_job(Job(inp, out, task, params=params, engine=engine, workers=workers,
                          user_column=user_column, progress=False, spend_again=True))
        wall = time.perf_counter() - t
    return res, wall, mem.peak / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--trajectories", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "veil-scale"))
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--skip-trajectories", action="store_true")
    ap.add_argument("--skip-slh", action="store_true")
    ap.add_argument("--configs", default="local:1,local:2,dask:2",
                    help="engine:workers list, e.g. local:2")
    ap.add_argument("--mechanisms", default="pim,lm")
    ap.add_argument("--baseline-src", default=None,
                    help="another veil src folder (e.g. of the main branch) run side by side")
    args = ap.parse_args()
    os.environ.setdefault("VEIL_LEDGER", os.path.join(args.workdir, "ledger.json"))
    from veil.datasets.large import (LARGE_CATEGORIES, write_large_checkins,
                                     write_large_trajectories)

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    print(machine_note())
    inp = work / f"checkins_{args.users}.parquet"
    if not inp.exists():
        t = time.perf_counter()
        rows = write_large_checkins(inp, args.users)
        print(f"generated {rows:,} check-ins for {args.users:,} users in "
              f"{time.perf_counter() - t:.1f} s -> {inp}")
    params = {"categories": LARGE_CATEGORIES,
              "sensitive": ["Hospital", "Church", "Mosque", "Synagogue", "Medical Center"]}
    configs = [(c.split(":")[0], int(c.split(":")[1])) for c in args.configs.split(",")]
    if args.skip_dask:
        configs = [c for c in configs if c[0] != "dask"]
    rows_out = []
    base = {}
    baseline = {}
    for engine, workers in ([] if args.skip_slh else configs):
        if args.baseline_src:  # alternate: baseline then this tree, same configuration
            bwall, busers, bpeak = run_external(args.baseline_src, "visits-hide", inp,
                                                work / f"base-{engine}-{workers}", params,
                                                engine, workers)
            baseline[(engine, workers)] = (bwall, busers, bpeak)
        res, wall, peak = run_config("visits-hide", inp, work / f"out-{engine}-{workers}",
                                     params, engine, workers)
        base[(engine, workers)] = wall
        rows_out.append([f"SLH {args.users:,} users", engine, workers, wall,
                         res.users / wall, peak, base[configs[0]] / wall])
        if args.baseline_src:
            bwall, busers, bpeak = baseline[(engine, workers)]
            rows_out.append([f"SLH {args.users:,} users (baseline)", engine, workers, bwall,
                             busers / bwall, bpeak, baseline[configs[0]][0] / bwall])
    traj_rows = []
    if not args.skip_trajectories:
        try:
            from veil.engine.registry import get_task

            get_task("trajectories")
        except Exception as exc:  # noqa: BLE001
            print(f"trajectory task unavailable ({exc}); skipped")
        else:
            tin = work / f"traj_{args.trajectories}_{args.steps}.parquet"
            if not tin.exists():
                write_large_trajectories(tin, args.trajectories, steps=args.steps)
            model_path = work / "beijing_model.npz"
            if not model_path.exists():
                # a public model: learned from a separate synthetic set (other seed), never
                # from the trajectories being released
                import duckdb

                from veil.geo.temporal import MarkovModel
                from veil.geo.temporal.grid import beijing_grid

                train = work / "traj_train.parquet"
                write_large_trajectories(train, 2_000, steps=args.steps, seed=12345)
                tab = duckdb.sql(f"SELECT user, lon, lat FROM '{train}' ORDER BY user, t").fetchnumpy()
                grid = beijing_grid(50)
                cells = grid.cell_of(tab["lat"], tab["lon"])
                cuts = np.flatnonzero(np.diff(tab["user"])) + 1
                MarkovModel.from_trajectories(np.split(cells, cuts), grid=grid).save(model_path)
            tbase = {}
            for mech in args.mechanisms.split(","):
                for engine, workers in configs:
                    tparams = {"mechanism": mech, "epsilon": 1.0, "delta": 0.01,
                               "model": str(model_path), "on_invalid": "drop"}
                    res, wall, peak = run_config("trajectories", tin,
                                                 work / f"tout-{mech}-{engine}-{workers}",
                                                 tparams, engine, workers)
                    tbase.setdefault(mech, wall)
                    traj_rows.append([f"{mech.upper()} {args.trajectories:,} x {args.steps}",
                                      engine, workers, wall, res.users / wall, peak,
                                      tbase[mech] / wall])
    print()
    print_table(["job", "engine", "workers", "wall s", "users/s", "peak MB",
                 f"speed-up vs {configs[0][0]} x{configs[0][1]}"], rows_out + traj_rows)
    if ("local", 2) in base and ("dask", 2) in base:
        print(f"\nDask/local time ratio at 2 workers (SLH): "
              f"{base[('dask', 2)] / base[('local', 2)]:.2f} (target <= 1.5)")
    if ("local", 1) in base and ("local", 2) in base:
        print(f"local 1 -> 2 workers (SLH): {base[('local', 1)] / base[('local', 2)]:.2f}x "
              "(target >= 1.6)")
    for cfg, (bwall, _, _) in baseline.items():
        print(f"this tree / baseline time at {cfg[0]} x{cfg[1]} (SLH): {base[cfg] / bwall:.2f}")


if __name__ == "__main__":
    main()
