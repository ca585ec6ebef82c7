"""File-level privacy audits: run the actual ``veil`` commands on neighbouring input files.

The audits of :mod:`veil.audit.core` check library functions. What an observer sees is what
the *commands* write: the released value and everything beside it (the ``.meta.json``
sidecar, a manifest, part markers, the status lines on the console). A bug anywhere on that
path (a sidecar that records a true total, a manifest with the input's row count, a CLI
flag that skips the noise) is invisible to a function-level audit. This module runs the
command line itself, in-process (``veil.cli.main``), on two neighbouring input files, and:

1. **audits the written value** with the DP ratio audit (:func:`veil.audit.dp_ratio_audit`,
   exact Clopper-Pearson bounds, family-wise alpha): the value column is read back from the
   written file;
2. **checks every other artefact is identical** across the neighbours, run with the same
   ``--seed`` at the same path: it may depend only on public parameters. Two kinds of fields
   are declared instead, with the reason they may differ: wall-clock times, and checksums of
   the released parts (recomputed from the parts and checked).

Each neighbour runs with its own veil state folder (its own ledger), as two separate worlds
would: the ledger's notes then depend on the input alone.

Samples per run: commands that release one value per row with independent noise
(``noise counts``, ``location obfuscate``, ``batch counts``: one histogram per user) are
audited on files of ``R`` *replicas*: row (or user) ``i`` of file A and row ``i`` of file B
are neighbouring inputs of the per-row mechanism, so one run gives ``R`` paired draws.
Commands that release one value per file (``histogram publish``, ``trajectory release``) give
one draw per run, so their fast audits are small (a few hundred runs) and their slow ones
larger. :data:`TRUE_NEIGHBOURS` variants of the replica commands audit files that differ in
one row only (one draw per run).

Canaries: :func:`broken_twin` makes a deliberately broken twin of a command (a sidecar that
records a data-dependent value; an under-noised value: epsilon secretly multiplied). The same
audit must FAIL on them.

Examples
--------
>>> spec = noise_counts_spec(replicas=2000)
>>> result = audit_command(spec, n=2000, seed=1)
>>> result.passed, result.ratio.eps_lower_bound <= spec.claimed_epsilon
(True, True)
>>> twin, runner = broken_twin(spec, "data-dependent-sidecar")
>>> bad = audit_command(twin, n=2000, seed=1, runner=runner)
>>> bad.passed, bad.differences[0].split(":")[0]
(False, '/out.csv.meta.json/input_summary/input_sum')
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError
from .core import AuditResult, Event, dp_ratio_audit, events_lr_levels, events_threshold

__all__ = [
    "RunOutput", "CommandSpec", "FileAuditResult", "run_command", "audit_command",
    "broken_twin", "noise_counts_spec", "histogram_publish_spec", "location_obfuscate_spec",
    "trajectory_release_spec", "batch_counts_spec", "FILE_AUDITS", "TRUE_NEIGHBOURS",
]


# ---------------------------------------------------------------------------- running
@dataclass
class RunOutput:
    """What one command run wrote: new or changed files (name -> bytes), console, exit code."""

    code: int
    files: dict[str, bytes]
    stdout: str
    stderr: str


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for p in folder.rglob("*"):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(folder))] = (st.st_mtime_ns, st.st_size)
    return out


def run_command(argv: Sequence[str], folder: Path) -> RunOutput:
    """Run ``veil ARGV`` in-process with ``folder`` as the working directory."""
    from ..cli import main

    folder = Path(folder)
    before = _snapshot(folder)
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in argv])
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(cwd)
    after = _snapshot(folder)
    files = {name: (folder / name).read_bytes() for name, st in after.items()
             if before.get(name) != st}
    return RunOutput(code, files, out.getvalue(), err.getvalue())


# ---------------------------------------------------------------------------- specs
Extract = Callable[[RunOutput], tuple[np.ndarray, dict[str, Any]]]


@dataclass(frozen=True)
class CommandSpec:
    """How to audit one command on one pair of neighbouring inputs.

    Attributes
    ----------
    name : str
        The command (``"noise counts"``).
    argv : callable ``seed -> list of str``
        The command line (relative file names; ``--seed`` so both neighbours draw the same
        noise, ``--spend-again`` and ``--force`` so repeated runs are allowed).
    write_input : callable ``(folder, side) -> None``
        Writes neighbour ``side`` (``"a"`` or ``"b"``) into ``folder``.
    extract : callable ``RunOutput -> (values, artefacts)``
        The audited values of one run (first axis: draws) and every other artefact,
        normalized (declared volatile fields replaced after their check).
    events : sequence of Event
        Fixed before sampling.
    claimed_epsilon : float
        What the command claims for this pair of neighbours.
    per_run : int
        Draws per run.
    budget : list of str
        Options of ``veil budget set`` that declare room for every run of the audit.
    epsilon : float
        The ``--epsilon`` the command is run with (the claim may be a function of it).
    setup : callable ``folder -> None``, optional
        Writes public inputs (a mobility model).
    """

    name: str
    argv: Callable[[int], list[str]]
    write_input: Callable[[Path, str], None]
    extract: Extract
    events: Sequence[Event]
    claimed_epsilon: float
    per_run: int
    budget: list[str]
    input_name: str
    epsilon: float
    setup: Callable[[Path], None] | None = None
    outputs: tuple[str, ...] = ()
    description: str = ""


@dataclass
class FileAuditResult:
    """Outcome of :func:`audit_command`: the ratio audit of the value, and the artefacts."""

    name: str
    ratio: AuditResult
    artefacts_identical: bool
    differences: list[str]
    runs: int
    seconds: float
    artefacts: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.ratio.passed and self.artefacts_identical

    def __bool__(self) -> bool:
        return self.passed

    def summary(self) -> str:
        art = ("artefacts identical across neighbours" if self.artefacts_identical else
               f"artefacts DIFFER: {'; '.join(self.differences[:3])}")
        return (f"{'PASS' if self.passed else 'FAIL'} {self.name}: value {self.ratio.summary()}; "
                f"{art} ({', '.join(self.artefacts)}); {self.runs} runs per side, "
                f"{self.seconds:.1f} s")


def _workspace() -> Path:
    """A scratch folder, in memory when /dev/shm exists (the audit runs fsync-heavy writes)."""
    shm = Path("/dev/shm")
    roomy = shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 1 << 30
    base = shm if roomy else None  # containers often mount a 64 MB /dev/shm
    return Path(tempfile.mkdtemp(prefix="veil-file-audit-", dir=base))


@contextlib.contextmanager
def _env(**values: str | None):
    old = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'A' if k in a else 'B'}")
            else:
                out += _diff(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diff(x, y, f"{path}[{i}]")]
    if a != b:
        ra, rb = repr(a), repr(b)
        return [f"{path or '/'}: {ra[:60]} != {rb[:60]}"]
    return []


def audit_command(spec: CommandSpec, *, n: int, seed: int = 0, alpha: float = 1e-6,
                  runner: Callable[[Sequence[str], Path], RunOutput] | None = None,
                  workdir: str | os.PathLike | None = None) -> FileAuditResult:
    """Run ``spec``'s command on both neighbours until ``n`` draws per side; audit the files.

    Parameters
    ----------
    spec : CommandSpec
    n : int
        Draws per side for the ratio audit.
    seed : int
        Seeds the runs (``--seed`` of each pair) and the audit: an experiment.
    alpha : float
        Family-wise error of the ratio audit.
    runner : callable
        Runs one command line in a folder (a broken twin substitutes its own).
    workdir : path, optional
        Scratch folder (default: a new one, in memory when possible; removed afterwards).
    """
    from ..validation import check_int

    n = check_int(n, "n", minimum=10)
    runner = runner or run_command
    base = Path(workdir) if workdir is not None else _workspace()
    own = workdir is None
    t0 = time.perf_counter()
    try:
        # both neighbours run at the same path (one after the other), each with its own ledger
        folder = base / "run"
        folder.mkdir(parents=True, exist_ok=True)
        homes = {s: base / f"home-{s}" for s in ("a", "b")}
        if spec.setup is not None:
            spec.setup(folder)
        for s in homes:
            spec.write_input(folder, s)
            with _env(VEIL_HOME=str(homes[s]), VEIL_LEDGER=None):
                r = run_command(["budget", "set", spec.input_name, *spec.budget], folder)
            if r.code != 0:
                raise DataError(f"file audit of {spec.name}: `veil budget set` failed: "
                                f"{r.stderr.strip()}")
        runs = math.ceil(n / spec.per_run)
        seeds = np.random.SeedSequence(seed).generate_state(runs, dtype=np.uint32)
        values: dict[str, list[np.ndarray]] = {"a": [], "b": []}
        differences: list[str] = []
        names: set[str] = set()
        for s in seeds:
            arts = {}
            for side in homes:
                spec.write_input(folder, side)
                for name in spec.outputs:  # a fresh output each run
                    p = folder / name
                    if p.is_dir():
                        shutil.rmtree(p)
                with _env(VEIL_HOME=str(homes[side]), VEIL_LEDGER=None):
                    out = runner(spec.argv(int(s)), folder)
                if out.code != 0:
                    raise DataError(f"file audit of {spec.name}: the command exited "
                                    f"{out.code} on neighbour {side.upper()}: "
                                    f"{out.stderr.strip()[-500:]}")
                v, art = spec.extract(out)
                values[side].append(np.asarray(v))
                arts[side] = art
                names |= set(art)
            if len(differences) < 20:
                differences += _diff(arts["a"], arts["b"])
        va = np.concatenate(values["a"])[:n]
        vb = np.concatenate(values["b"])[:n]
        ratio = dp_ratio_audit(lambda m, g: va[:m], lambda m, g: vb[:m], spec.events,
                               claimed_epsilon=spec.claimed_epsilon, n=n, alpha=alpha,
                               seed=seed)
        return FileAuditResult(spec.name, ratio, not differences, differences, runs,
                               time.perf_counter() - t0, sorted(names))
    finally:
        if own:
            shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------- helpers
def _read_table(data: bytes, name: str):
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    if name.endswith(".parquet"):
        return pq.read_table(pa.BufferReader(data))
    return pcsv.read_csv(pa.BufferReader(data))


def _json(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"))


_TIMING = re.compile(r"\d+(\.\d+)? s \([\d,]+ users/s\)")


def _console(out: RunOutput) -> dict[str, str]:
    """The console lines (status and notes), with the declared wall-clock timings masked."""
    return {"stdout": _TIMING.sub("<timing>", out.stdout),
            "stderr": _TIMING.sub("<timing>", out.stderr)}


#: The declared outputs of a sidecar are audited as one categorical value with this many
#: classes (a digest of their canonical JSON, fixed before sampling).
OUTPUT_CLASSES = 8


def _take_outputs(meta: dict) -> tuple[dict, int | None]:
    """The sidecar without its declared outputs (its ``derived`` fields, see
    :attr:`veil.release.Release.derived`), and their class: a digest of their canonical JSON
    modulo :data:`OUTPUT_CLASSES`; None when the sidecar declares none.

    They are outputs of the mechanism's DP steps (a partition, a pick on a noisy total), so
    they are audited *with* the value (events on the class), not required to be identical;
    the ``derived`` list itself stays in the sidecar and is compared like any public field.
    """
    import zlib

    from ..release import split_outputs

    public, taken = split_outputs(meta)
    if not taken:
        return public, None
    blob = json.dumps(taken, sort_keys=True, default=str).encode()
    return public, zlib.crc32(blob) % OUTPUT_CLASSES


def _output_events(column: int) -> list[Event]:
    """Events ``{class == j}`` on column ``column`` of the draws (see :func:`_take_outputs`)."""
    return [Event(f"outputs_class=={j}", (lambda x, j=j: x[:, column] == j))
            for j in range(OUTPUT_CLASSES)]


def _sidecar_and_table(out: RunOutput, data_name: str, meta_name: str, value_cols: list[str],
                       *, outputs: bool = False) -> tuple[Any, dict[str, Any]] | tuple[
                           Any, dict[str, Any], int]:
    """The data table and the artefacts that must be identical across neighbours.

    With ``outputs=True`` also the class of the sidecar's declared outputs (-1 when none),
    which the caller audits with the value; otherwise a sidecar that declares outputs is an
    error (the audit would not cover them).
    """
    if data_name not in out.files or meta_name not in out.files:
        raise DataError(f"the command did not write {data_name} and {meta_name}; it wrote "
                        f"{sorted(out.files)}")
    table = _read_table(out.files[data_name], data_name)
    rest = {c: table.column(c).to_pylist() for c in table.column_names if c not in value_cols}
    meta = _json(out.files[meta_name])
    meta, cls = _take_outputs(meta) if isinstance(meta, dict) else (meta, None)
    art = {data_name + " (other columns)": rest, meta_name: meta, **_console(out),
           "files": sorted(out.files)}
    if outputs:
        return table, art, -1 if cls is None else cls
    if cls is not None:
        raise DataError(f"{meta_name} declares outputs {meta.get('derived')} that this audit "
                        "does not cover")
    return table, art


def _count_events(x: int) -> list[Event]:
    from .core import events_points

    return (events_points(range(x - 4, x + 6))
            + events_threshold(lambda z: z, [x - 2.5 + i for i in range(7)], "z"))


# ---------------------------------------------------------------------------- noise counts
def noise_counts_spec(*, replicas: int = 20_000, epsilon: float = 1.0, true_count: int = 10,
                      true_neighbours: bool = False) -> CommandSpec:
    """``veil noise counts``: neighbours differ by 1 in the count column (sensitivity 1).

    With ``true_neighbours`` the files differ in one row only and each run gives one draw
    (that row); otherwise every one of the ``replicas`` rows differs and is one draw.
    """
    rows = 200 if true_neighbours else replicas

    def write(folder: Path, side: str) -> None:
        counts = np.full(rows, true_count)
        if side == "b":
            if true_neighbours:
                counts[0] += 1
            else:
                counts += 1
        labels = [f"bin{i}" for i in range(rows)]
        (folder / "in.csv").write_text("bin,count\n" + "".join(
            f"{b},{c}\n" for b, c in zip(labels, counts.tolist())))

    def extract(out: RunOutput):
        table, art = _sidecar_and_table(out, "out.csv", "out.csv.meta.json", ["count"])
        v = table.column("count").to_numpy()
        return (v[:1] if true_neighbours else v), art

    return CommandSpec(
        name="noise counts" + (" (true neighbours)" if true_neighbours else ""),
        argv=lambda s: ["noise", "counts", "in.csv", "-c", "count", "-e", str(epsilon), "-o",
                        "out.csv", "--seed", str(s), "--spend-again", "--force"],
        write_input=write, extract=extract, events=_count_events(true_count),
        claimed_epsilon=epsilon, per_run=1 if true_neighbours else rows,
        budget=["--total", "1e12"], input_name="in.csv", epsilon=epsilon,
        description=f"{rows} rows of count {true_count} vs {true_count + 1}")


# ---------------------------------------------------------------------------- histogram publish
def _leaf_discriminant(counts, hist_a, edges, leaf_measure: str) -> float:
    """The most powerful linear statistic of privtree's published leaf estimates for a +1 in
    the leaf holding bin 3: ``(M (z - z_A))_l / M_ll`` with ``z`` the published leaf totals,
    ``z_A`` side A's true ones and ``M`` the measurement's information matrix (``A^T A`` of
    HDMM's strategy over the leaves, or GreedyH's), all public given the published leaves.
    The leaf estimate alone is the least-squares estimate of that leaf, but with HDMM's
    strategy its noise is several times a direct measurement's (prefix strategies measure
    prefixes well, not single leaves): a 4x under-noised twin then stayed under the claim. The
    discriminant uses the whole published vector (0 in A, 1 in B, plus noise)."""
    from ..histograms.privtree import leaf_information, leaf_measurement
    from ..histograms.workload import RangeWorkload

    n = int(edges[-1])
    m = edges.size - 1
    w = RangeWorkload.from_spec("prefix", n)   # the command's default workload
    z = np.add.reduceat(counts, edges[:-1]) - np.add.reduceat(hist_a.astype(np.float64),
                                                              edges[:-1])
    strategy = leaf_measurement(w, edges, leaf_measure)[1]  # the strategy the sidecar names
    M = leaf_information(leaf_measure, strategy, m)
    leaf = int(np.searchsorted(edges, 3, side="right") - 1)
    return float((M @ z)[leaf] / M[leaf, leaf])


def histogram_publish_spec(*, epsilon: float = 0.5, method: str | None = None,
                           records: int = 400, released: str = "counts") -> CommandSpec:
    """``veil histogram publish``: neighbours differ by one record (in bin 3 of 16).

    One draw per run. ``method=None`` audits the default (auto). ``released="counts"``: the
    noisy count of bin 3 (auto is then given a public ``--records-bound``, so it spends
    nothing on the total); ``released="noisy-total"``: auto without a bound, whose sidecar
    publishes the DP total it paid ``AUTO_TOTAL_FRACTION`` of epsilon for
    (``parameters.auto_noisy_total``): that total is the audited value, and only the sidecar
    fields computed from it (the rule's text, in ``parameters.auto_rule`` and its note) are
    left out of the artefacts, which must otherwise be identical.
    """
    if released not in ("counts", "noisy-total"):
        raise ParameterError(f"released must be 'counts' or 'noisy-total', got {released!r}")
    g = np.random.default_rng(12345)
    ages = g.integers(0, 80, records)
    bins = np.linspace(0, 80, 17)
    extra_age = 17  # falls in bin 3 ([15, 20))
    hist_a = np.histogram(ages, bins=bins)[0]

    def write(folder: Path, side: str) -> None:
        vals = ages.tolist() + ([extra_age] if side == "b" else [])
        (folder / "people.csv").write_text("age\n" + "".join(f"{v}\n" for v in vals))

    def extract(out: RunOutput):
        # the sidecar's declared outputs (a DAWA partition, auto's noisy total and pick) are
        # audited with the count: column 1 holds their class
        meta_doc = _json(out.files["out.csv.meta.json"]) if "out.csv.meta.json" in out.files \
            else {}
        params = meta_doc.get("parameters", {})
        total = params.get("auto_noisy_total")
        table, art, cls = _sidecar_and_table(out, "out.csv", "out.csv.meta.json", ["count"],
                                             outputs=True)
        if released == "counts":
            # the bucket holding bin 3 under the published partition (bin 3 alone when none
            # is published): a partition method spreads a bucket's estimate over its bins, so
            # the extra record moves the bucket's sum by 1 and one bin's value by 1/width only
            edges = np.asarray(params.get("edges") or np.arange(17), dtype=np.int64)
            lo, hi = int(edges[edges <= 3].max()), int(edges[edges > 3].min())
            counts = table.column("count").to_numpy().astype(np.float64)
            if params.get("leaf_measure") is not None:
                stat = _leaf_discriminant(counts, hist_a, edges, params["leaf_measure"])
            else:
                stat = float(counts[lo:hi].sum() - hist_a[lo:hi].sum())  # 0 in A, 1 in B
            return np.array([[stat, cls]]), art
        if total is None:
            raise DataError("auto without --records-bound wrote no auto_noisy_total")
        return np.array([[float(total), cls]]), art

    argv = ["histogram", "publish", "people.csv", "-c", "age", "--bins", "0:80:16", "-e",
            str(epsilon), "-o", "out.csv"]
    if method is not None:
        argv += ["--method", method]
    claimed = epsilon
    if released == "noisy-total":
        from ..histograms.api import AUTO_TOTAL_FRACTION

        claimed = epsilon * AUTO_TOTAL_FRACTION  # what the total alone was paid
    if released == "counts":
        if method in (None, "auto"):
            argv += ["--records-bound", str(4 * records)]  # public: no noisy total drawn
        events = events_threshold(lambda z: z[:, 0], [-3 + 0.5 * i for i in range(15)],
                                  "bin3_bucket")
    else:
        if method not in (None, "auto"):
            raise ParameterError("released='noisy-total' audits the auto method")
        # discrete Laplace of scale 1 / (epsilon x AUTO_TOTAL_FRACTION): 100 at epsilon 0.5
        events = events_threshold(lambda z: z[:, 0],
                                  [records - 200.5 + 25 * i for i in range(17)], "total")
    if released == "counts":  # a DP structure or pick in the sidecar is audited with the count
        events = [*events, *_output_events(1)]
    return CommandSpec(
        name="histogram publish" + (f" --method {method}" if method else "")
        + (" (noisy total)" if released == "noisy-total" else ""),
        argv=lambda s: [*argv, "--seed", str(s), "--spend-again", "--force"],
        write_input=write, extract=extract, events=events, claimed_epsilon=claimed, per_run=1,
        budget=["--total", "1e12"], input_name="people.csv", epsilon=epsilon,
        description=f"{records} records vs one more in bin 3")


# ---------------------------------------------------------------------------- location obfuscate
def location_obfuscate_spec(*, replicas: int = 20_000, epsilon: float = 0.01,
                            distance_m: float = 100.0, true_neighbours: bool = False
                            ) -> CommandSpec:
    """``veil location obfuscate``: one point moved by ``distance_m`` metres north.

    Geo-indistinguishability claims ``epsilon * distance_m`` for this pair. Events: the
    likelihood-ratio level sets of planar Laplace and thresholds along the displacement, in
    a local metric plane around the point.
    """
    from ..geo.geometry import LocalProjection

    lat0, lon0 = 45.0, 7.0
    proj = LocalProjection(lat0, lon0)
    q = proj.points_to_latlon(np.array([[0.0, distance_m]]))[0]  # (lat, lon) of B's point
    rows = 200 if true_neighbours else replicas
    claimed = epsilon * distance_m

    def write(folder: Path, side: str) -> None:
        pts = np.tile([lat0, lon0], (rows, 1))
        if side == "b":
            if true_neighbours:
                pts[0] = q
            else:
                pts[:] = q
        (folder / "in.csv").write_text("id,lat,lon\n" + "".join(
            f"{i},{a!r},{b!r}\n" for i, (a, b) in enumerate(pts.tolist())))

    def extract(out: RunOutput):
        table, art = _sidecar_and_table(out, "out.csv", "out.csv.meta.json", ["lat", "lon"])
        xy = proj.points_to_plane(np.column_stack([table.column("lat").to_numpy(),
                                                   table.column("lon").to_numpy()]))
        return (xy[:1] if true_neighbours else xy), art

    def llr(z):  # ln p_A(z) - ln p_B(z) for planar Laplace centred at (0,0) and (0,d)
        return epsilon * (np.hypot(z[:, 0], z[:, 1] - distance_m) - np.hypot(z[:, 0], z[:, 1]))

    events = (events_lr_levels(llr, [-0.9 * claimed, -0.5 * claimed, 0.0, 0.5 * claimed,
                                     0.9 * claimed])
              + events_threshold(lambda z: z[:, 1], [-100.0, 0.0, 50.0, 100.0, 200.0], "north"))
    return CommandSpec(
        name="location obfuscate" + (" (true neighbours)" if true_neighbours else ""),
        argv=lambda s: ["location", "obfuscate", "in.csv", "-e", str(epsilon), "-o", "out.csv",
                        "--seed", str(s), "--spend-again", "--force"],
        write_input=write, extract=extract, events=events, claimed_epsilon=claimed,
        per_run=1 if true_neighbours else rows, budget=["--total-per-metre", "1e12"],
        input_name="in.csv", epsilon=epsilon,
        description=f"{rows} points, {distance_m:g} m apart, epsilon {epsilon:g} per metre")


# ---------------------------------------------------------------------------- trajectory release
def _track_model(folder: Path) -> None:
    """A public 6 x 6 grid model (written as model.npz) in which every step lands in cell 14
    or cell 15, each with probability 1/2.

    After the first fix, every prior is uniform over these two adjacent cells, so the
    delta-location set is exactly ``{14, 15}`` and its sensitivity hull is their segment:
    the two neighbours of :func:`trajectory_release_spec` are then the *worst-case* pair of
    PIM's guarantee (K-norm distance 1), where the privacy loss can reach epsilon. (With a
    random-walk model the set spans several cells, the pair is only a fraction of the hull
    apart, and a 4x under-noised twin stayed under the claim: the slow audit could not fail.)
    """
    from ..geo.temporal import MarkovModel, TemporalGrid

    g = TemporalGrid(lon_min=116.30, lat_min=39.85, lon_max=116.36, lat_max=39.90, nx=6, ny=6)
    m = np.zeros((36, 36))
    m[:, [14, 15]] = 0.5
    MarkovModel(grid=g, matrix=m).save(folder / "model.npz")


def trajectory_release_spec(*, epsilon: float = 1.0, delta: float = 0.01) -> CommandSpec:
    """``veil trajectory release`` (PIM): three fixes; neighbours differ in the cell of the
    last one: the two cells of its delta-location set (see :func:`_track_model`), the pair
    where PIM's claim is tight. One draw per run: the released point of the last timestamp,
    where the claim is epsilon."""
    from ..geo.temporal import TemporalGrid

    g = TemporalGrid(lon_min=116.30, lat_min=39.85, lon_max=116.36, lat_max=39.90, nx=6, ny=6)
    cells = {"a": [14, 15, 14], "b": [14, 15, 15]}
    centres = g.centers_m

    def write(folder: Path, side: str) -> None:
        latlon = g.to_latlon(centres[cells[side]])
        (folder / "track.csv").write_text("time,lat,lon\n" + "".join(
            f"{60 * i},{la!r},{lo!r}\n" for i, (la, lo) in enumerate(latlon.tolist())))

    def extract(out: RunOutput):
        table, art = _sidecar_and_table(out, "out.csv", "out.csv.meta.json", ["lon", "lat"])
        last = g.to_metres(table.column("lat").to_numpy()[-1:], table.column("lon").to_numpy()[-1:])
        earlier = np.column_stack([table.column("lon").to_numpy()[:-1],
                                   table.column("lat").to_numpy()[:-1]]).round(7).tolist()
        art["out.csv (earlier points)"] = earlier  # same noise, same data: identical
        return np.asarray(last).reshape(1, 2), art

    xa, xb = centres[14], centres[15]
    axis = (xb - xa) / np.linalg.norm(xb - xa)
    mid = (xa + xb) / 2
    proj = lambda z: (z - mid) @ axis  # noqa: E731 - position along the A -> B axis (metres)
    step = float(np.linalg.norm(xb - xa))
    # few events: one draw per run, and the family's Bonferroni share sets the largest bound
    # a small audit can reach
    events = events_threshold(proj, [step * t for t in (-1, -0.5, 0, 0.5, 1)], "along")
    return CommandSpec(
        name="trajectory release",
        argv=lambda s: ["trajectory", "release", "track.csv", "-e", str(epsilon), "-d",
                        str(delta), "--model", "model.npz", "-o", "out.csv", "--seed", str(s),
                        "--spend-again", "--force"],
        write_input=write, extract=extract, events=events, claimed_epsilon=epsilon, per_run=1,
        budget=["--total", "1e12"], input_name="track.csv", epsilon=epsilon,
        setup=_track_model, description="3 fixes, the last in either cell of its delta-set")


# ---------------------------------------------------------------------------- batch counts
_TIME = "<wall-clock time>"


def batch_counts_spec(*, users: int = 5000, epsilon: float = 1.0, visits: int = 6,
                      max_records: int | None = None) -> CommandSpec:
    """``veil batch counts``: every user has one more check-in in category ``a`` in B.

    Each user's noisy count of ``a`` is one draw (users are released independently). With
    ``max_records = m`` (user level), A's users have one check-in (in ``b``) and B's have
    ``m - 1`` more, all in ``a``: nearly all of a bounded user's contribution differs, and
    the claim stays ``epsilon`` per user.
    """
    def write(folder: Path, side: str) -> None:
        lines = ["person,cat"]
        for u in range(users):
            if max_records is None:
                lines += [f"u{u},a"] * (visits + (1 if side == "b" else 0)) + [f"u{u},b"] * 2
            else:
                lines += [f"u{u},b"] + ([f"u{u},a"] * (max_records - 1) if side == "b" else [])
        (folder / "c.csv").write_text("\n".join(lines) + "\n")

    def extract(out: RunOutput):
        import hashlib

        import pyarrow as pa

        parts = sorted(n for n in out.files if n.startswith("out/part-") and
                       n.endswith(".parquet"))
        tables = [_read_table(out.files[p], p) for p in parts]
        t = pa.concat_tables(tables).sort_by([("user", "ascending"), ("category", "ascending")])
        is_a = np.asarray(t.column("category").to_pylist()) == "a"
        values = t.column("noisy_count").to_numpy()[is_a]
        art: dict[str, Any] = {"parts (other columns)": {c: t.column(c).to_pylist()
                                                         for c in t.column_names
                                                         if c != "noisy_count"}}
        for name in sorted(out.files):
            if name.endswith(".json") and name.startswith("out/part-"):
                marker = _json(out.files[name])
                part = name[:-5] + ".parquet"
                # a checksum of the released part is a function of the value: check, mask
                if marker.get("sha256") != hashlib.sha256(out.files[part]).hexdigest():
                    raise DataError(f"{name}: sha256 does not match {part}")
                marker["sha256"] = "<sha256 of the part, checked>"
                art[name] = marker
        man = _json(out.files["out/_manifest.json"])
        for p, info in man.get("parts", {}).items():
            if info.get("sha256") != hashlib.sha256(out.files["out/" + p]).hexdigest():
                raise DataError(f"manifest: sha256 of {p} does not match the part")
            info["sha256"] = "<sha256 of the part, checked>"
        for k in ("started", "finished"):
            if k in man:
                man[k] = _TIME
        art["out/_manifest.json"] = man
        art.update(_console(out))
        art["files"] = sorted(out.files)
        return values, art

    argv = ["batch", "counts", "c.csv", "-o", "out", "--categories", "a,b", "-e", str(epsilon),
            "--user-column", "person", "--category-column", "cat", "--quiet", "--buckets", "4"]
    if max_records is not None:
        argv += ["--max-records", str(max_records)]
    if max_records is None:
        events = _count_events(visits)
        what = f"{visits} vs {visits + 1} check-ins in 'a'"
    else:
        events = events_threshold(lambda z: z, [max_records * (t / 4) for t in range(-4, 9)],
                                  "a")
        what = f"0 vs {max_records - 1} check-ins in 'a' (at most {max_records} kept)"
    return CommandSpec(
        name="batch counts" + (f" --max-records {max_records}" if max_records else ""),
        argv=lambda s: [*argv, "--seed", str(s), "--spend-again"],
        write_input=write, extract=extract, events=events,
        claimed_epsilon=epsilon, per_run=users, budget=["--total", "1e12"],
        input_name="c.csv", epsilon=epsilon, outputs=("out",),
        description=f"{users} users, {what}")


# ---------------------------------------------------------------------------- map publish
def map_publish_spec(*, epsilon: float = 1.0, side_cells: int = 8, per_cell: int = 3
                     ) -> CommandSpec:
    """``veil map publish`` (record level, Identity): every cell holds ``per_cell`` points
    in one file and one more in the other; each cell is one draw (parallel composition
    over disjoint cells), like the replicas of ``noise counts``."""
    lat0, lon0, lat1, lon1 = 40.7, -74.0, 40.8, -73.9
    h, w = (lat1 - lat0) / side_cells, (lon1 - lon0) / side_cells
    cells = [(lat0 + (r + 0.5) * h, lon0 + (c + 0.5) * w)
             for r in range(side_cells) for c in range(side_cells)]

    def write(folder: Path, side: str) -> None:
        k = per_cell + (1 if side == "b" else 0)
        (folder / "pts.csv").write_text("lat,lon\n" + "".join(
            f"{la:.6f},{lo:.6f}\n" for la, lo in cells for _ in range(k)))

    def extract(out: RunOutput):
        table, art = _sidecar_and_table(out, "out.csv", "out.csv.meta.json", ["count"])
        return table.column("count").to_numpy(), art

    argv = ["map", "publish", "pts.csv", "--protects", "record", "--bbox",
            f"{lat0},{lon0},{lat1},{lon1}", "--grid", f"{side_cells}x{side_cells}",
            "--method", "identity", "-e", str(epsilon), "-o", "out.csv"]
    return CommandSpec(
        name="map publish", argv=lambda s: [*argv, "--seed", str(s), "--spend-again", "--force"],
        write_input=write, extract=extract, events=_count_events(per_cell),
        claimed_epsilon=epsilon, per_run=side_cells * side_cells, budget=["--total", "1e12"],
        input_name="pts.csv", epsilon=epsilon,
        description=f"{side_cells}x{side_cells} cells of {per_cell} points vs {per_cell + 1}")


#: The file audits, by command: a spec factory, the draws per side of the fast (CI) audit
#: and of the slow one. Commands with one draw per run get small fast audits.
FILE_AUDITS: dict[str, tuple[Callable[[], CommandSpec], int, int]] = {
    "noise counts": (lambda: noise_counts_spec(replicas=20_000), 20_000, 200_000),
    "histogram publish": (lambda: histogram_publish_spec(), 60, 2000),
    "histogram publish (noisy total)": (lambda: histogram_publish_spec(released="noisy-total"),
                                        60, 2000),
    "location obfuscate": (lambda: location_obfuscate_spec(replicas=20_000), 20_000, 200_000),
    "trajectory release": (lambda: trajectory_release_spec(), 80, 2000),
    "batch counts": (lambda: batch_counts_spec(users=5000), 5000, 100_000),
    "map publish": (lambda: map_publish_spec(), 64 * 40, 64 * 600),
}

#: Slow variants: files that differ in one row only (one draw per run), the user-level
#: batch release, and the histogram's other mechanisms.
TRUE_NEIGHBOURS: dict[str, tuple[Callable[[], CommandSpec], int]] = {
    "noise counts": (lambda: noise_counts_spec(true_neighbours=True), 1500),
    "location obfuscate": (lambda: location_obfuscate_spec(true_neighbours=True), 1500),
    "batch counts --max-records": (lambda: batch_counts_spec(users=5000, max_records=4),
                                   100_000),
    "histogram publish --method identity": (lambda: histogram_publish_spec(method="identity"),
                                            2000),
    "histogram publish --method dawa": (lambda: histogram_publish_spec(method="dawa"), 1000),
    "histogram publish --method coarse": (lambda: histogram_publish_spec(method="coarse"),
                                          1000),
    "histogram publish --method privtree": (lambda: histogram_publish_spec(method="privtree"),
                                            1000),
}


# ---------------------------------------------------------------------------- canaries
def broken_twin(spec: CommandSpec, kind: str, *, factor: float = 4.0
                ) -> tuple[CommandSpec, Callable | None]:
    """A deliberately broken twin of a command: ``(spec, runner)`` for :func:`audit_command`.

    ``kind``:

    - ``"data-dependent-sidecar"``: after the real command runs, its sidecar (or manifest)
      also records the input's number of rows and the sum of its numbers, as a buggy
      command would. The artefact check must FAIL.
    - ``"under-noised"``: the command is run with ``factor`` x the epsilon it claims (the
      default 4; the fast audits of one-draw-per-run commands use a larger factor). The
      ratio audit must FAIL.
    - ``"data-dependent-output"``: the sidecar records the input's number of rows as a
      *declared output* (listed in its ``derived`` fields), as a mechanism that passed the
      data off as a DP output would. The artefact check then passes; the ratio audit, which
      audits the declared outputs with the value, must FAIL.
    """
    if kind == "under-noised":
        def argv(s: int, _orig=spec.argv) -> list[str]:
            a = list(_orig(s))
            i = a.index("-e")
            a[i + 1] = str(factor * float(a[i + 1]))
            return a
        return replace(spec, name=spec.name + f" [under-noised x{factor:g} twin]",
                       argv=argv), None
    if kind not in ("data-dependent-sidecar", "data-dependent-output"):
        raise ParameterError(f"kind must be 'under-noised', 'data-dependent-sidecar' or "
                             f"'data-dependent-output', got {kind!r}")

    def runner(argv: Sequence[str], folder: Path) -> RunOutput:
        out = run_command(argv, folder)
        text = (folder / spec.input_name).read_text()
        nums = [float(t) for t in re.findall(r"-?\d+(?:\.\d+)?", text)]
        leak = {"input_rows": text.count("\n") - 1, "input_sum": math.fsum(nums)}
        for name in list(out.files):
            if name.endswith((".meta.json", "_manifest.json")):
                doc = _json(out.files[name])
                if kind == "data-dependent-output":
                    doc.setdefault("parameters", {})["input_rows"] = leak["input_rows"]
                    doc["derived"] = sorted({*doc.get("derived", []), "parameters.input_rows"})
                else:
                    doc["input_summary"] = leak
                data = json.dumps(doc).encode()
                (folder / name).write_bytes(data)
                out.files[name] = data
        return out

    return replace(spec, name=spec.name + f" [{kind.replace('-', ' ')} twin]"), runner
