"""Every `veil ...` command shown in README.md and docs/*.md is EXECUTED (doc examples do not rot).

tests/test_docs_commands.py extracts the commands (fenced blocks other than python/json/yaml/toml,
backslash continuations joined) and checks that they name real sub-commands and options; this file
runs each of them as `python -m veil ...` in a scratch workspace:

* one workspace per documentation page, `<tmp>/<page>/repo` (the working directory of the
  commands) with `<tmp>/<page>/shared` -> the real shared folder ($VEIL_SHARED, else
  `<repo root>/../shared`), so the documented `../shared/data/...` paths resolve;
* the input files a page's commands expect are made before its first command, with veil's own
  generator (`veil data synth`) or by hand as the page describes them; files the page itself
  shows (`$ cat hist.csv`, the `# constraints.txt` block) are written from the page's text, and
  the page's own setup lines (`echo ... > user.json`) are run where they appear;
* a page's commands run in document order in the same workspace (later commands read what
  earlier ones wrote, e.g. `histogram evaluate ages.csv` after `publish -o ages.csv`); running
  one test alone first runs the earlier commands of its page;
* the deliberate errors of docs/io.md must exit with status 2 and print exactly the one-line
  message the page shows; every other command must exit 0 and leave the files it names with
  `-o/--output/--plot`;
* commands that cannot run here are listed in NOT_RUN with the reason (and must still match a
  documented line); those that take more than ~20 s on a loaded 2-core machine run in the slow
  suite (`python -m pytest -m slow`); commands that need ../shared are skipped (with the reason)
  only when that folder is absent.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_docs_commands import DOCS, ROOT, _commands, doc_lines  # noqa: E402

_ENV_SHARED = os.environ.get("VEIL_SHARED")
SHARED = Path(_ENV_SHARED) if _ENV_SHARED else ROOT.parent / "shared"

# Documented lines that are not runnable here: {substring of the line: why}.
NOT_RUN = {
    "--scheduler tls://scheduler:8786": "needs a running Dask cluster at tls://scheduler:8786, and "
                                        "the line is a placeholder (literal `...` for the options)",
    "veil --debug COMMAND ...": "a placeholder (COMMAND ...), not a runnable command",
}

# Deliberate errors shown in docs/io.md: exit status 2 and the documented one-line message.
ERRORS = ("noise counts bad.csv", "-e 0 -o out.csv", "-o nodir/out.csv", "--bogus",
          # docs/guarantees.md: the ledger refusing a second release and one beyond the total
          "--epsilon 0.5 -o ages2.csv", "-o noisy.csv --spend-again",
          # docs/io.md: no command writes over one of its inputs, even with --force
          "-o hist.csv --force")

# More than ~20 s each on this loaded 2-core machine (measured): the slow suite runs them.
SLOW = {
    "veil bench histograms --quick": "about 70 s",
    "veil bench tables": "about 25 s",
    "veil bench temporal": "about 5.5 min",
    "veil bench visits --adversary": "about 10 min",
}

OUTPUT_OPTIONS = ("-o", "--output", "--plot")


def _steps(text: str):
    """A page's runnable lines in document order: ('veil', command) with the same extraction as
    test_docs_commands, and ('shell', line) for its setup lines `echo '...' > FILE`."""
    for line in doc_lines(text):
        if line.startswith("veil ") or line == "veil":
            yield "veil", line.split("#", 1)[0].strip()
        elif re.fullmatch(r"""echo (['"]).*\1 > [\w.-]+""", line):
            yield "shell", line


def _listing(text: str, name: str) -> str:
    """The content of file NAME as the page shows it: after `$ cat NAME` (up to the next prompt)
    or in a fenced block whose first line is `# NAME`."""
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        cat = raw.strip() == f"$ cat {name}"
        block = raw.strip() == f"# {name}" and i > 0 and lines[i - 1].startswith("```")
        if cat or block:
            body = []
            for nxt in lines[i + 1:]:
                if nxt.startswith("```") or (cat and nxt.startswith("$ ")):
                    break
                body.append(nxt)
            return "\n".join(body) + "\n"
    raise AssertionError(f"the page does not show {name}")


def _documented_output(text: str, line: str) -> str:
    """The line the page prints right after `$ LINE` (the expected message of an error example)."""
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        s = raw.strip()
        if s.startswith("$ ") and s[2:].split("#", 1)[0].strip() == line:
            return lines[i + 1].strip()
    raise AssertionError(f"no output shown after `{line}`")


def _runnable(line: str) -> str:
    """`veil bench tables [--quick] [--output results.json]` -> with the optional parts."""
    return re.sub(r"\[(--[^\[\]]*)\]", r"\1", line)


def _not_run(line: str):
    return next((why for key, why in NOT_RUN.items() if key in line), None)


def _slow(line: str) -> bool:
    return any(key in line for key in SLOW)


def _is_error(line: str) -> bool:
    return any(key in line for key in ERRORS)


def _needs_shared(line: str) -> bool:
    """Reads the shared real data: a ../shared path, the Foursquare tree or a benchmark."""
    return (any(s in line for s in ("../shared", "--taxonomy foursquare"))
            or line.startswith("veil bench "))


def _outputs(args: str):
    tokens = shlex.split(args)
    for i, tok in enumerate(tokens):
        if tok in OUTPUT_OPTIONS and i + 1 < len(tokens):
            yield tokens[i + 1]
        elif tok.startswith("--output="):
            yield tok.split("=", 1)[1]


# ----------------------------------------------------------------------------- page inputs
def _geo_inputs(page):
    # "a CSV/Parquet of points (columns lat, lon; others kept)"
    page.synth("points", "-o", "points.csv", "--users", "100")
    # the Parquet example snaps to a public box over Beijing: points inside it
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    pq.write_table(pa.table({"id": np.arange(50), "lat": rng.uniform(39.85, 39.95, 50),
                             "lon": rng.uniform(116.25, 116.45, 50)}),
                   page.repo / "points.parquet")
    # pings with a time column `t` in seconds (user, t, lat, lon); key.bin is created by the command
    page.synth("trajectories", "-o", "pings.csv", "--users", "5", "--steps", "24")


def _histogram_inputs(page):
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng(2)
    n = 5000
    people = pa.table({"age": rng.integers(0, 100, n),
                       "income": np.round(rng.lognormal(10.5, 1.0, n))})
    pcsv.write_csv(people, page.repo / "people.csv")
    pq.write_table(people, page.repo / "people.parquet")
    # an existing histogram: one count per row in bin order
    pcsv.write_csv(pa.table({"count": rng.integers(0, 400, 64)}), page.repo / "counts.csv")
    # the true counts of the bins of ages.csv (--bins 0:100:20), in the same bin order
    true = np.histogram(people["age"].to_numpy(), bins=np.linspace(0, 100, 21))[0]
    pcsv.write_csv(pa.table({"count": true}), page.repo / "true_counts.csv")


def _io_inputs(page):
    hist = _listing(page.text, "hist.csv")
    (page.repo / "hist.csv").write_text(hist)
    # "file bad.csv, row 2, column 'count': 'many' is not a number"
    rows = hist.splitlines()
    rows[2] = rows[2].split(",")[0] + ",many"
    (page.repo / "bad.csv").write_text("\n".join(rows) + "\n")


def _tables_inputs(page):
    # people.csv is made by the page's own `veil data synth census` line
    (page.repo / "constraints.txt").write_text(_listing(page.text, "constraints.txt"))


INPUTS = {"geo.md": _geo_inputs, "histograms.md": _histogram_inputs, "io.md": _io_inputs,
          "tables.md": _tables_inputs}
# README.md, engine.md and visits.md make their inputs with their own lines (veil data synth,
# echo ... > user.json); benchmarks.md and temporal.md read ../shared only.


# ----------------------------------------------------------------------------- workspace
class _Page:
    def __init__(self, base: Path, doc: Path):
        self.doc, self.text = doc, doc.read_text()
        self.dir = base / doc.stem
        self.repo = self.dir / "repo"
        self.repo.mkdir(parents=True)
        if SHARED.is_dir():
            (self.dir / "shared").symlink_to(SHARED.resolve(), target_is_directory=True)
        self.env = {k: v for k, v in os.environ.items() if k != "VEIL_SHARED"}  # ../shared only
        self.env.update(PYTHONPATH=str(ROOT / "src"), VEIL_LEDGER=str(self.dir / "ledger.json"))
        self.steps = list(_steps(self.text))
        self.commands = [i for i, (kind, _) in enumerate(self.steps) if kind == "veil"]
        self.results = {}
        if doc.name in INPUTS:
            INPUTS[doc.name](self)

    def veil(self, args: str, timeout: float):
        return subprocess.run([sys.executable, "-m", "veil", *shlex.split(args)], cwd=self.repo,
                              env=self.env, capture_output=True, text=True, timeout=timeout)

    def synth(self, *args):
        out = self.veil(shlex.join(["data", "synth", *args, "--seed", "1"]), timeout=300)
        assert out.returncode == 0, out.stderr

    def _run_step(self, i: int):
        kind, line = self.steps[i]
        if kind == "shell":
            out = subprocess.run(["bash", "-c", line], cwd=self.repo, env=self.env,
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
        else:
            args = _runnable(line).removeprefix("veil").strip()
            out = self.veil(args, timeout=1800 if _slow(line) else 600)
        self.results[i] = out
        return out

    def run(self, k: int):
        """Run the page's k-th command, after the earlier lines of the page not run yet (setup
        lines and fast commands, in document order)."""
        target = self.commands[k]
        for i in range(target):
            kind, line = self.steps[i]
            skip = kind == "veil" and (_not_run(line) or _slow(line)
                                       or (_needs_shared(line) and not SHARED.is_dir()))
            if i in self.results or skip:
                continue
            self._run_step(i)
        return self.results[target] if target in self.results else self._run_step(target)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    base = tmp_path_factory.mktemp("docs")
    made = {}

    def get(doc_name: str) -> _Page:
        if doc_name not in made:
            made[doc_name] = _Page(base, next(d for d in DOCS if d.name == doc_name))
        return made[doc_name]

    return get


# ----------------------------------------------------------------------------- tests
CASES = [(doc.name, k, line) for doc in DOCS
         for k, line in enumerate(line for kind, line in _steps(doc.read_text()) if kind == "veil")]


def _param(doc, k, line):
    sub = "-".join(t for t in shlex.split(_runnable(line))[1:3] if not t.startswith("-"))
    return pytest.param(doc, k, line, id=f"{doc}:{k}:{sub or 'veil'}",
                        marks=[pytest.mark.slow] if _slow(line) else [])


def test_runs_exactly_the_checked_commands():
    for doc in DOCS:
        text = doc.read_text()
        assert [line for kind, line in _steps(text) if kind == "veil"] == list(_commands(text))
    assert len(CASES) >= 50


def test_lists_match_documented_lines():
    """NOT_RUN, SLOW and ERRORS cannot go stale: each entry matches a documented command."""
    lines = [line for _, _, line in CASES]
    for key in [*NOT_RUN, *SLOW]:
        assert any(key in line for line in lines), f"{key!r} matches no documented command"
    for key in ERRORS:
        assert sum(key in line for line in lines) == 1, f"{key!r} must match one documented line"


@pytest.mark.parametrize("doc, k, line", [_param(*c) for c in CASES])
def test_documented_command_runs(page, doc, k, line):
    why = _not_run(line)
    if why:
        pytest.skip(f"not run: {why}")
    if _needs_shared(line) and not SHARED.is_dir():
        pytest.skip(f"needs the shared data folder {SHARED} (absent; set VEIL_SHARED)")
    p = page(doc)
    out = p.run(k)
    if _is_error(line):
        assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
        assert out.stdout == ""
        assert out.stderr.strip() == _documented_output(p.text, line)
        assert not list(p.repo.glob("out.csv*")) and not list(p.repo.glob(".veil-tmp*"))
    else:
        assert out.returncode == 0, \
            f"{doc}: `{line}` exited {out.returncode}:\n{out.stderr[-3000:]}"
        for name in _outputs(_runnable(line)):
            assert (p.repo / name).exists(), f"{doc}: `{line}` did not write {name}"
