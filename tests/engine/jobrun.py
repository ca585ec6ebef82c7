"""Run one batch job in its own process, for the tests that kill, interrupt or race jobs.

    python jobrun.py '{"input": ..., "output": ..., "task": ..., ...}'

The JSON object holds :class:`veil.engine.Job` keyword arguments. Exit status 0 and the
result as JSON on stdout; like the ``veil`` command, a veil error or an OSError (no space left,
a read-only folder) prints one line on stderr and exits 2; Ctrl-C exits 130.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))



def _run(spec: dict) -> int:
    import helpers  # registers the test tasks

    helpers.declare_large_totals()
    from veil.engine import Job, run_job
    from veil.errors import VeilError

    try:
        res = run_job(Job(**spec))
    except (VeilError, OSError) as exc:
        print(f"{type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(json.dumps({"users": res.users, "buckets": res.buckets,
                      "buckets_run": res.buckets_run, "rows_out": res.rows_out}))
    return 0


def main() -> int:
    ready = os.environ.get("VEIL_TEST_READY")
    if ready:  # Python's own Ctrl-C handler is installed from here on
        open(ready, "w").close()
    spec = json.loads(sys.argv[1])
    spec.setdefault("progress", False)
    try:  # a Ctrl-C while the imports run counts too
        return _run(spec)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
