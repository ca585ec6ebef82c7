"""Legal-looking but extreme option values get a clear one-line error naming the option.

Each was an internal error or a message naming an internal quantity or function:
``veil map publish --memory-limit 0`` (DuckDB's ParserException, "internal error", exit 1),
``--resolution 1e308`` / ``--grid-step 1e308`` (OverflowError), ``veil trajectory model
--grid beijing:99999999`` (MemoryError, 71 PiB), ``veil data synth --rows 10**23`` (numpy's
"Maximum allowed dimension exceeded"), ``--count-bound 1e308`` ("sensitivity must be finite
and > 0, got inf"), ``veil location noise --radius 1e308`` ("core must be finite and >= 0,
got nan"), ``--initial-latlon 91,0`` (a message naming ``TemporalGrid.cell_of``). One was
accepted: ``veil location noise --region-diameter 1e308`` (metres; now at most the Earth's
circumference, like ``--radius``).

Each case: exit status 2, one line ``veil: error: ...`` on stderr naming the option (and
the stated bound where there is one), and nothing written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_cases import beijing_model, beijing_tracks, beijing_train, run_main, write_csv

# ----------------------------------------------------------------------------- inputs

def _pings(d: Path) -> Path:
    return write_csv(d / "pings.csv", ["user", "lat", "lon"],
                     [["u1", 0.10, 0.20], ["u1", 0.15, 0.30], ["u2", 0.40, 1.10],
                      ["u3", 0.90, 0.10], ["u4", 0.55, 0.95]])


def _points(d: Path) -> Path:
    return write_csv(d / "pts.csv", ["id", "lat", "lon"],
                     [["p1", 48.85, 2.35], ["p2", 48.86, 2.36], ["p3", 48.84, 2.34]])


def _values(d: Path) -> Path:
    return write_csv(d / "v.csv", ["v"], [[i] for i in range(1, 13)])


# ----------------------------------------------------------------------------- commands

def map_publish(*extra):
    def build(d, capsys):
        return (["map", "publish", _pings(d), "--user-column", "user", "--max-points", "5",
                 "--bbox", "0,0,1,2", "--grid", "4x4", "-e", "1", "-o", d / "out.csv", *extra],
                ["out.csv", "out.csv.meta.json"])
    return build


def obfuscate(*extra):
    def build(d, capsys):
        return (["location", "obfuscate", _points(d), "-e", "0.01", "-o", d / "out.csv", *extra],
                ["out.csv", "out.csv.meta.json"])
    return build


def traj_model(*extra):
    def build(d, capsys):
        return (["trajectory", "model", beijing_train(d), "-o", d / "model.npz", *extra],
                ["model.npz"])
    return build


def traj_release(*extra):
    def build(d, capsys):
        model = beijing_model(d, capsys)
        return (["trajectory", "release", beijing_tracks(d), "--model", model, "-e", "1", "-d",
                 "0.1", "-o", d / "out.csv", *extra], ["out.csv", "out.csv.meta.json"])
    return build


def synth(*extra):
    def build(d, capsys):
        return ["data", "synth", "census", "-o", d / "out.csv", *extra], ["out.csv"]
    return build


def hist(*extra):
    def build(d, capsys):
        return (["histogram", "publish", _values(d), "-c", "v", "-e", "1", "--bins", "0:12:12",
                 "-o", d / "out.csv", *extra], ["out.csv", "out.csv.meta.json"])
    return build


def noise(*extra):
    def build(d, capsys):
        return (["location", "noise", "--privacy", "D-eps", "-e", "1", "-o", d / "out.json",
                 *extra], ["out.json"])
    return build


# (id, build, the option the message must name, a text the message must hold)
CASES = [
    # 1. DuckDB's ParserException was reported as an internal error (exit 1)
    *[(f"map-memory-limit-{v or 'empty'}", map_publish("--memory-limit", v), "--memory-limit",
       "e.g. 500MB") for v in ("0", "nan", "2", "", "1PB")],
    # 2. OverflowError: math range error
    ("obfuscate-resolution", obfuscate("--resolution", "1e308"), "--resolution", "4.0075e+07"),
    ("obfuscate-grid-step", obfuscate("--grid-step", "1e308", "--region", "48.8,2.3,48.9,2.4"),
     "--grid-step", "4.0075e+07"),
    ("trajectory-release-resolution", traj_release("--resolution", "1e308"), "--resolution",
     "4.0075e+07"),
    # 3. MemoryError (71 PiB)
    ("trajectory-model-grid-beijing", traj_model("--grid", "beijing:99999999"), "--grid",
     "1000000"),
    ("trajectory-model-grid-box", traj_model("--grid", "39.8,116.2,40,116.5,2000,2000"),
     "--grid", "1000000"),
    # 4. numpy: Maximum allowed dimension exceeded
    ("synth-rows", synth("--rows", str(10 ** 23)), "--rows", "10,000,000"),
    ("synth-users", synth("--users", str(10 ** 23)), "--users", "10,000,000"),
    # 5. sensitivity must be finite and > 0, got inf
    ("histogram-count-bound", hist("-m", "structurefirst", "--count-bound", "1e308"),
     "--count-bound", "2**53"),
    ("histogram-count-bound-optimized", hist("-m", "optimized-structurefirst", "--count-bound",
                                             "1e308"), "--count-bound", "2**53"),
    # 6. core must be finite and >= 0, got nan
    ("noise-radius", noise("--radius", "1e308"), "--radius", "4.0075e+07"),
    # 6b. accepted: a longest displacement of 1e308 metres gave normal output
    ("noise-region-diameter", noise("--radius", "200", "--region-diameter", "1e308"),
     "--region-diameter", "4.0075e+07"),
    # 7. a message naming TemporalGrid.cell_of
    *[(f"trajectory-initial-latlon-{v}", traj_release("--initial-latlon", v),
       "--initial-latlon", "inside the model's grid") for v in ("91,0", "0,0", "nan,nan")],
]


@pytest.mark.parametrize("build,option,text", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_extreme_value_is_refused_naming_the_option(tmp_path, capsys, build, option, text):
    d = tmp_path / "work"
    d.mkdir()
    argv, outputs = build(d, capsys)
    before = sorted(p.name for p in d.iterdir())
    capsys.readouterr()
    code, out, err = run_main(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2, (code, err)
    assert len(lines) == 1 and lines[0].startswith("veil: error: "), err
    message = lines[0][len("veil: error: "):]
    assert message.startswith(option + " must"), message
    assert text in message, message
    assert "internal" not in message and "cell_of" not in message, message
    for name in outputs:
        assert not (d / name).exists(), f"{name} was written"
    assert sorted(p.name for p in d.iterdir()) == before


@pytest.mark.parametrize("value", ["500MB", "2GB", "1.5GiB", "16MB", "1 gb"])
def test_memory_limits_duckdb_accepts_still_run(tmp_path, capsys, value):
    d = tmp_path / "work"
    d.mkdir()
    argv, outputs = map_publish("--memory-limit", value, "--seed", "1")(d, capsys)
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    assert all((d / name).exists() for name in outputs)


def test_the_largest_grid_and_count_bound_are_accepted(tmp_path, capsys):
    from veil.geo.temporal.grid import MAX_PARSED_CELLS, TemporalGrid

    assert TemporalGrid.parse("beijing:1000").n_cells == MAX_PARSED_CELLS
    d = tmp_path / "work"
    d.mkdir()
    argv, outputs = hist("-m", "structurefirst", "--count-bound", str(2 ** 53), "--seed",
                         "1")(d, capsys)
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
