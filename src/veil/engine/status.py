"""What state a batch job's output is in: progress, what is missing, checksum verification.

Read-only: it takes no lock and changes nothing, so it can run beside a live job.

Examples
--------
>>> import tempfile, pathlib
>>> job_status(pathlib.Path(tempfile.mkdtemp()) / "nothing")["state"]
'absent'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..validation import exact
from .fsutil import sha256_file
from .job import read_manifest
from .lock import LOCK, _flock_holders, process_alive
from .runner import (MARKERS, PARTS, STAGING, STATE, _marker_name, _part_name, _read_json,
                     _resolved, verify_output, work_dir_for)

__all__ = ["job_status", "format_status", "ranges"]


def ranges(ids: list[int]) -> str:
    """``[1, 2, 3, 7, 9, 10]`` -> ``'1-3, 7, 9-10'``.

    >>> ranges([1, 2, 3, 7, 9, 10])
    '1-3, 7, 9-10'
    """
    out: list[str] = []
    ids = sorted(ids)
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ", ".join(out)


def _holder(work: Path) -> dict[str, Any] | None:
    """The live process holding the job lock, if any (from the kernel's lock table)."""
    path = work / LOCK
    if not path.exists():
        return None
    pids = _flock_holders(path)
    rec = _read_json(path) or {}
    if pids:
        return {"pid": pids[0], "host": rec.get("host"), "since": rec.get("since")}
    if rec and not rec.get("released") and process_alive(rec):
        return rec
    return None


def job_status(output: str | Path, work_dir: str | Path | None = None) -> dict[str, Any]:
    """Describe the job writing ``output``.

    Returns a dict with ``state`` one of ``absent`` (no job), ``foreign`` (a folder that is
    not a veil output), ``complete`` (every part matches the manifest), ``damaged`` (a
    completed output whose parts do not match), ``running`` (a live process holds the job)
    or ``interrupted`` (resumable with ``--resume``), and the details behind it.
    """
    out = _resolved(output)
    work = work_dir_for(out, work_dir)
    st: dict[str, Any] = {"output": str(output), "work": str(work),
                          "staging_left": (work / STAGING).is_dir()}
    man = read_manifest(out, advice="restore the folder from a copy (its parts cannot be "
                                    "checked without it), or remove it") \
        if out.is_dir() else None
    if man is not None:
        problems = verify_output(out, man) if man.get("status") == "complete" else \
            ["the manifest is not a complete veil job"]
        st.update(state="damaged" if problems else "complete", problems=problems,
                  task=man.get("job", {}).get("task"), epsilon=man.get("epsilon_per_user"),
                  epsilon_unit=man.get("epsilon_unit"), buckets=man.get("buckets"),
                  done=len(man.get("parts", {})) if not problems else
                  len(man.get("parts", {})) - len(problems),
                  users=man.get("users"), seeded=man.get("seeded"))
        return st
    state = _read_json(work / STATE) if work.is_dir() else None
    if not isinstance(state, dict) or "staging" not in state:
        nonempty = out.is_dir() and any(os.scandir(out))
        st["state"] = "foreign" if nonempty else "absent"
        st["holder"] = _holder(work) if work.is_dir() else None
        return st
    buckets = int(state["staging"]["buckets"])
    per = state["staging"]["per_bucket"]
    done, missing, damaged = [], [], []
    for b in range(buckets):
        marker = _read_json(work / MARKERS / _marker_name(b))
        part = work / PARTS / _part_name(b)
        if not isinstance(marker, dict) or marker.get("job_id") != state.get("job_id"):
            missing.append(b)
            continue
        try:
            good = (not part.is_symlink() and marker.get("rows_in") == per[str(b)]["rows"]
                    and (sha256_file(part) == marker.get("sha256") if marker.get("sha256")
                         else not os.path.lexists(part) and marker.get("rows_out") == 0))
        except OSError:
            good = False
        (done if good else damaged).append(b)
    holder = _holder(work)
    st.update(state="running" if holder else "interrupted", holder=holder, task=state.get("task"),
              epsilon=state.get("epsilon"), epsilon_unit=state.get("epsilon_unit"),
              buckets=buckets, done=len(done), missing=missing, damaged=damaged,
              phase=state.get("phase"), seeded=state.get("seeded"), runs=state.get("runs"))
    return st


def format_status(st: dict[str, Any]) -> list[str]:
    """The lines ``veil batch status`` prints."""
    lines = [f"output   {st['output']}"]
    state = st["state"]
    if state == "absent":
        return lines + ["state    no veil job writes this output (nothing to resume)"]
    if state == "foreign":
        return lines + ["state    a folder that is not a veil output (no manifest, no job state)"]
    eps = st.get("epsilon")
    unit = st.get("epsilon_unit") or "per user"
    seeded = " [seeded: experiments only]" if st.get("seeded") else ""
    lines.append(f"job      {st.get('task')}, epsilon {exact(eps)} {unit}, {st.get('buckets')} "
                 f"buckets{seeded}" if eps is not None else f"job      {st.get('task')}")
    if state in ("complete", "damaged"):
        n = st.get("buckets") or 0
        if state == "complete":
            empty = n - st["done"]
            lines.append(f"state    complete: {st['done']} part(s) verified against their "
                         f"SHA-256 in the manifest ({n} buckets"
                         f"{f', {empty} without a published row' if empty else ''}); "
                         f"{st.get('users')} users")
        else:
            lines.append(f"state    DAMAGED: {len(st['problems'])} problem(s) in a completed "
                         "output")
            lines += [f"         {p}" for p in st["problems"]]
        if st.get("staging_left"):
            lines.append(f"work     raw staging left in {st['work']}: run the job's command with "
                         "--resume to remove it")
        return lines
    holder = st.get("holder")
    if state == "running":
        lines.append(f"state    running (pid {holder.get('pid')} on host {holder.get('host')} "
                     f"since {holder.get('since')})")
    else:
        what = "publishing" if st.get("phase") == "committing" else "running buckets"
        lines.append(f"state    interrupted while {what}: run the same command with --resume")
    lines.append(f"parts    {st['done']}/{st['buckets']} done and verified (SHA-256)")
    if st["missing"]:
        lines.append(f"missing  {len(st['missing'])} bucket(s): {ranges(st['missing'])}")
    if st["damaged"]:
        lines.append(f"damaged  {len(st['damaged'])} bucket(s), redone on resume: "
                     f"{ranges(st['damaged'])}")
    lines.append(f"work     {st['work']} (private: staging with raw rows, unpublished parts, "
                 "the noise key; removed when the job completes)")
    return lines
