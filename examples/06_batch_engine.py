"""Run a per-user batch job with the engine: hide every user's sensitive visits.

Shows :mod:`veil.engine` end to end: synthetic check-ins
(:func:`veil.datasets.synthetic.synthetic_checkins`) are written to a Parquet
file in a temporary folder with :func:`veil.io.write_table`, then the
registered task ``visits-hide`` (sensitive location hiding for every user,
exact, no privacy budget spent) runs over them with
:class:`veil.engine.Job` / :func:`veil.engine.run_job`. The output folder holds
atomic Parquet parts, their checksummed markers and a ``manifest.json``; the
script reads the parts back with DuckDB and checks that no sensitive visit is
left. Everything is removed at the end unless ``--keep`` is given.

Run::

    PYTHONPATH=src python examples/06_batch_engine.py [--users 300] [--keep] [--seed N]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import duckdb

import veil
from veil.datasets.synthetic import synthetic_checkins, synthetic_city
from veil.engine import Job, run_job
from veil.io import write_table


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=300, help="synthetic users")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed for experiments only (data and bucket streams reproducible)")
    args = ap.parse_args(argv)
    rng = veil.make_rng(seed=args.seed)

    city = synthetic_city(n_pois=800, rng=rng)
    checkins = synthetic_checkins(city, n_users=args.users, mean_per_user=30, rng=rng)
    tree = city.categories
    categories = [str(c) for c in tree.leaf_names]                 # the public domain
    sensitive = [str(c) for c in tree.leaf_names[tree.sensitive_leaf_mask()]]

    tmp = Path(tempfile.mkdtemp(prefix="veil-example-"))
    src = write_table(checkins.to_arrow(), tmp / "checkins.parquet")
    n_sens = int(tree.sensitive_leaf_mask()[checkins.category].sum())
    print(f"wrote {len(checkins):,} check-ins of {args.users} users to {src.name} "
          f"({n_sens:,} at {len(sensitive)} sensitive categories)")

    job = Job(input=src, output=tmp / "out", task="visits-hide", user_column="user",
              params={"categories": categories, "sensitive": sensitive, "distance": "js"},
              buckets=4, workers=1, seed=args.seed, ledger=tmp / "ledger.json",
              progress=False)
    res = run_job(job)
    print(f"job visits-hide: {res.users} users in {res.buckets} buckets, {res.rows_in:,} rows "
          f"in -> {res.rows_out:,} rows out in {res.seconds:.2f} s "
          f"(per-user epsilon {res.epsilon_per_user:g}: deterministic, no budget spent)")

    parts = str(tmp / "out" / "part-*.parquet")
    con = duckdb.connect()
    q = con.execute(f"""
        SELECT count(DISTINCT user) AS users,
               sum(sanitized) AS visits,
               sum(CASE WHEN list_contains(?::VARCHAR[], category) THEN sanitized ELSE 0
                   END) AS sensitive_left,
               count(*) / count(DISTINCT user) AS rows_per_user
        FROM read_parquet('{parts}')""", [sensitive]).fetchone()
    con.close()
    # the published parts hold user, category, sanitized only (every category of the domain for
    # every published user); users whose visits are all sensitive are left out of them
    print(f"output: {q[0]} users, {int(q[1]):,} visits, sensitive visits left {int(q[2])}, "
          f"{int(q[3])} rows per user (the whole domain), users left out {args.users - q[0]}")
    print(f"files: {', '.join(sorted(p.name for p in (tmp / 'out').iterdir()))[:200]}")
    if args.keep:
        print(f"kept {tmp}")
    else:
        import shutil

        shutil.rmtree(tmp)
    print("ok: batch job done")


if __name__ == "__main__":
    main()
