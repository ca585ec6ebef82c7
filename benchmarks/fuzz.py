"""A fuzzing campaign over every non-batch command and the readers; print what it found.

    python benchmarks/fuzz.py                          # this checkout, 100 files per target
    python benchmarks/fuzz.py --cases 300 --baseline /work/main/src

Each target (a reader call or a ``veil`` command) gets ``--cases`` generated files from
``tests/fuzz_files.py`` (the same strategies and properties as ``tests/test_fuzz_commands.py``,
generation only, no shrinking, a fixed hypothesis seed so that both trees see the same
files). A case is ``ok`` (exit 0 / a value), ``refused`` (exit 2 with one line naming the file
or an option, nothing left behind; a ``DataError``/``ParameterError`` for a reader) or a
``FAILURE`` (internal error, traceback, RuntimeWarning, a message naming neither, a partial
output, a wrong value). With ``--baseline SRC`` the same campaign runs against another
source tree (e.g. the main branch) in a subprocess, side by side.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import machine_note, print_table  # noqa: E402


def failure_kind(text: str) -> str:
    """A short class for a failed property (messages differ by file and column names)."""
    import re

    m = re.search(r"internal error: (\w+)", text)
    if m:
        return f"internal error ({m.group(1)})"
    if "left files behind" in text:
        return "a failed command left files behind"
    m = re.search(r"'([^']*encountered[^']*)'", text)
    if m:
        return f"RuntimeWarning: {m.group(1)}"
    if "veil: error:" in text:
        m = re.search(r"veil: error: (?:file [^,:]*[,:] ?)?(?:row \d+, )?(?:column '[^']*': )?"
                      r"([^'\"(\[]{0,60})", text)
        return "message names neither the file nor an option: " + (m.group(1).strip()
                                                                    if m else "")
    return re.sub(r"\d+", "N", text.split("\n")[0])[:100]


def campaign(cases: int, seed: int, targets: list[str] | None) -> dict:
    """Run in the current interpreter (whatever ``veil`` it imports); return the counts."""
    sys.path.insert(0, str(ROOT / "tests"))
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hyp_seed
    from hypothesis import strategies as st

    import test_fuzz_commands as T
    from fuzz_files import file_specs

    out: dict = {}
    names = ["readers", *T.COMMANDS, "report"]
    for target in names:
        if targets and target not in targets:
            continue
        counts: collections.Counter = collections.Counter()
        kinds: dict[str, int] = collections.Counter()
        times: list[float] = []

        def one(check):
            t0 = time.perf_counter()
            try:
                check()
                counts["passed"] += 1
            except AssertionError as exc:
                counts["FAILURE"] += 1
                kinds[failure_kind(str(exc))] += 1
            except Exception as exc:  # noqa: BLE001 - a crash of the check is a failure too
                counts["FAILURE"] += 1
                kinds[f"{type(exc).__name__}: {str(exc)[:100]}"] += 1
            times.append(time.perf_counter() - t0)

        cfg = settings(max_examples=cases, deadline=None, database=None,
                       phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        if target == "readers":
            @hyp_seed(seed)
            @cfg
            @given(spec=file_specs(want=["lat", "lon", "count", "user", "category"]),
                   data=st.data())
            def run(spec, data):
                one(lambda: T._check_reader(spec, data))
        elif target == "report":
            @hyp_seed(seed)
            @cfg
            @given(folder=T.run_folders())
            def run(folder):
                one(lambda: T._check_report(folder))
        else:
            want = T.COMMANDS[target][0]

            @hyp_seed(seed)
            @cfg
            @given(spec=file_specs(want=want), data=st.data())
            def run(spec, data):
                one(lambda: T._check_command(target, spec, data))
        run()
        times.sort()
        out[target] = {"cases": len(times), "passed": counts["passed"],
                       "failures": counts["FAILURE"], "kinds": dict(kinds),
                       "median_ms": 1000 * times[len(times) // 2] if times else float("nan")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=100, help="generated files per target")
    ap.add_argument("--seed", type=int, default=20, help="hypothesis seed (same files per tree)")
    ap.add_argument("--baseline", help="another source tree (its src/ folder) to run beside")
    ap.add_argument("--targets", help="comma-separated subset (readers, report, commands)")
    ap.add_argument("--json", help=argparse.SUPPRESS)  # internal: the subprocess's result file
    args = ap.parse_args()
    targets = args.targets.split(",") if args.targets else None
    if args.json:
        Path(args.json).write_text(json.dumps(campaign(args.cases, args.seed, targets)))
        return
    trees = [("this checkout", str(ROOT / "src"))]
    if args.baseline:
        trees.append(("baseline", str(Path(args.baseline).resolve())))
    results = {}
    for label, src in trees:
        res_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"veil-fuzz-{os.getpid()}.json"
        cmd = [sys.executable, __file__, "--cases", str(args.cases), "--seed", str(args.seed),
               "--json", str(res_file)] + (["--targets", args.targets] if args.targets else [])
        env = {**os.environ, "PYTHONPATH": src}
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True)
        results[label] = (json.loads(res_file.read_text()), time.perf_counter() - t0)
        res_file.unlink()
    print(machine_note())
    print(f"{args.cases} generated files per target, hypothesis seed {args.seed}")
    headers = ["target"]
    for label in results:
        headers += [f"{label}: passed", f"{label}: failures", f"{label}: median ms/case"]
    first = next(iter(results.values()))[0]
    rows = []
    for target in first:
        row = [target]
        for res, _ in results.values():
            r = res.get(target, {})
            row += [r.get("passed", "-"), r.get("failures", "-"), r.get("median_ms", "-")]
        rows.append(row)
    total = ["total"]
    for res, _ in results.values():
        total += [sum(r["passed"] for r in res.values()),
                  sum(r["failures"] for r in res.values()), "-"]
    rows.append(total)
    print_table(headers, rows)
    for label, (res, wall) in results.items():
        distinct = collections.Counter()
        for r in res.values():
            distinct.update(r["kinds"])
        print(f"\n{label}: {len(distinct)} distinct failure messages, wall {wall:.0f} s")
        for msg, n in distinct.most_common(25):
            print(f"  {n:4d}  {msg}")


if __name__ == "__main__":
    main()
