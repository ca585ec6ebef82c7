"""A value the library refuses is reported with the name of the option the user typed.

The library names its parameters in its messages, which is right for a library caller but
not on the command line: ``veil histogram publish ... --k 0`` said "k must be >= 1, got 0",
``--records-bound -3`` "records_bound must be > 0", a missing ``--count-bound``
"count_bound is required", ``veil trajectory risk --tries 0`` "n_knowledge must be >= 1".
Each command now declares how the library's parameters map to its options
(``veil.cli.common.options_named``) and the message names the option, the rest of it
unchanged.

Each case: exit status 2, one line ``veil: error: ...`` on stderr that names the option and
not the library's name (as a word of its own: ``k`` inside ``--k`` does not count), and
nothing written (no output, no sidecar).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli_cases import beijing_model, beijing_tracks, beijing_train, run_main, write_csv


# ----------------------------------------------------------------------------- inputs

def _values(d: Path) -> Path:
    return write_csv(d / "v.csv", ["v"], [[i] for i in range(1, 13)])


def _pings(d: Path) -> Path:
    return write_csv(d / "pings.csv", ["user", "lat", "lon", "t"],
                     [["u1", 0.10, 0.20, 1], ["u1", 0.15, 0.30, 2], ["u1", 0.80, 1.70, 3],
                      ["u2", 0.40, 1.10, 4], ["u2", 0.45, 1.15, 5], ["u3", 0.90, 0.10, 6],
                      ["u3", 0.20, 1.90, 7], ["u4", 0.55, 0.95, 8]])


def _checkins(d: Path) -> Path:
    return write_csv(d / "checkins.csv", ["user", "category"],
                     [["u1", "Bar"], ["u1", "Park"], ["u1", "Park"], ["u2", "Bar"],
                      ["u2", "Gym"], ["u3", "Gym"], ["u3", "Park"]])


def _histogram(d: Path) -> Path:
    p = d / "hist.json"
    p.write_text(json.dumps({"Bar": 3, "Park": 2, "Gym": 4}))
    return p


def _target(d: Path) -> Path:
    p = d / "target.json"
    p.write_text(json.dumps({"Bar": 1, "Park": 2, "Gym": 1}))
    return p


def _counts(d: Path) -> Path:
    return write_csv(d / "counts.csv", ["bin", "count"], [["a", 3], ["b", 0], ["c", 5]])


def _table(d: Path) -> Path:
    return write_csv(d / "table.csv", ["age", "sex", "x"],
                     [[1, "F", "a"], [1, "F", "b"], [2, "M", "c"], [2, "M", "d"],
                      [3, "F", "e"], [3, "M", "f"]])


def _points(d: Path) -> Path:
    return write_csv(d / "pts.csv", ["id", "lat", "lon", "t"],
                     [["p1", 48.85, 2.35, 0], ["p2", 48.86, 2.36, 10], ["p3", 48.84, 2.34, 20]])


# ----------------------------------------------------------------------------- commands

def hist(*extra):
    def build(d):
        return (["histogram", "publish", _values(d), "-c", "v", "-e", "1", "--bins", "0:12:12",
                 "-o", d / "out.csv", *extra], ["out.csv", "out.csv.meta.json"])
    return build


def hist_evaluate(*extra):
    def build(d):
        pub = write_csv(d / "published.csv", ["bin", "count"], [["a", 2.5], ["b", 1], ["c", 4]])
        return ["histogram", "evaluate", pub, "--true", _counts(d), *extra], []
    return build


def map_publish(*extra, grid=("--grid", "4x4")):
    def build(d):
        return (["map", "publish", _pings(d), "--user-column", "user", "--bbox", "0,0,1,2",
                 *grid, "-e", "1", "-o", d / "out.csv", *extra], ["out.csv", "out.csv.meta.json"])
    return build


def traj_model(*extra):
    def build(d):
        return (["trajectory", "model", beijing_train(d), "--grid", "beijing:5", "-o",
                 d / "model.npz", *extra], ["model.npz"])
    return build


def traj_release(*extra):
    def build(d, capsys):
        model = beijing_model(d, capsys)
        return (["trajectory", "release", beijing_tracks(d), "--model", model, "-o",
                 d / "out.csv", *extra], ["out.csv", "out.csv.meta.json"])
    return build


def traj_risk(*extra):
    def build(d):
        return (["trajectory", "risk", beijing_tracks(d), "--grid", "beijing:5", "-o",
                 d / "risk.json", *extra], ["risk.json"])
    return build


def visits(problem, *extra):
    def build(d):
        argv = ["visits", problem, _histogram(d), "--categories", "Bar,Park,Gym", "-o",
                d / "out.json"]
        if problem == "hide":
            argv += ["-s", "Park"]
        else:
            argv += ["--target", _target(d)]
        return [*argv, *extra], ["out.json", "out.json.meta.json"]
    return build


def visits_checkins(*extra):
    def build(d):
        return (["visits", "hide", _checkins(d), "-s", "Park", "--categories", "Bar,Park,Gym",
                 "-o", d / "out.csv", *extra], ["out.csv", "out.csv.meta.json"])
    return build


def location(command, *extra):
    def build(d):
        if command == "obfuscate":
            return (["location", "obfuscate", _points(d), "-e", "0.01", "-o", d / "out.csv",
                     *extra], ["out.csv", "out.csv.meta.json", "key"])
        return ["location", command, "-o", d / "out.json", *extra], ["out.json"]
    return build


def batch(task, *extra):
    def build(d, capsys):
        if task == "trajectories":
            return (["batch", "trajectories", beijing_tracks(d), "-o", d / "out", "--model",
                     beijing_model(d, capsys), *extra], ["out"])
        return (["batch", "counts", _checkins(d), "-o", d / "out", "--categories",
                 "Bar,Park,Gym", *extra], ["out"])
    return build


def noise_counts(*extra):
    def build(d):
        return (["noise", "counts", _counts(d), "-c", "count", "-e", "1", "-o", d / "out.csv",
                 *extra], ["out.csv", "out.csv.meta.json"])
    return build


def table_anonymize(*extra):
    def build(d):
        return (["table", "anonymize", _table(d), "--qi", "age,sex", "--k", "2", "-o",
                 d / "out.csv", *extra], ["out.csv", "out.csv.meta.json"])
    return build


# (id, build, option the message must name, the library's name it must not show, the
#  message's text after the option, unchanged from the library's)
CASES = [
    # histogram publish: the examples of the defect report
    ("histogram-k", hist("-m", "structurefirst", "--count-bound", "20", "--k", "0"),
     "--k", "k", " must be >= 1, got 0"),
    ("histogram-k-sort-and-group", hist("-m", "sort-and-group", "--k", "-1"),
     "--k", "k", " must be >= 1, got -1"),
    ("histogram-branching", hist("-m", "boost", "--branching", "1"),
     "--branching", "branching", " must be >= 2, got 1"),
    ("histogram-records-bound", hist("-m", "dawa", "--records-bound", "-3"),
     "--records-bound", "records_bound", " must be > 0, got -3.0"),
    ("histogram-records-bound-nan", hist("--records-bound", "nan"),
     "--records-bound", "records_bound", " must be a number > 0, got NaN"),
    ("histogram-count-bound", hist("-m", "structurefirst", "--count-bound", "0"),
     "--count-bound", "count_bound", " must be > 0, got 0.0"),
    ("histogram-count-bound-required", hist("-m", "structurefirst"),
     "--count-bound", "count_bound", " is required: a public upper bound F"),
    ("histogram-seed", hist("-m", "identity", "--seed", "-1"),
     "--seed", "seed", " must be a non-negative integer, got -1"),
    ("histogram-evaluate-workload", hist_evaluate("--workload", "bogus"),
     "--workload", "workload", " must be one of 'prefix', 'random', 'point', got 'bogus'"),
    # map publish
    ("map-max-points", map_publish("-m", "identity", "--max-points", "0"),
     "--max-points", "max_points", " must be >= 1, got 0"),
    ("map-height", map_publish("--max-points", "2", "-m", "quadtree", "--height", "-1"),
     "--height", "height", " must be >= 0, got -1"),
    ("map-height-with-auto", map_publish("--max-points", "2", "--height", "2"),
     "--height", "height", " applies to --method quadtree, not 'auto'"),
    ("map-branching", map_publish("--max-points", "2", "-m", "hb2d", "--branching", "0"),
     "--branching", "branching", " must be >= 2, got 0"),
    ("map-scale", map_publish("--max-points", "2", "--scale", "-1"),
     "--scale", "scale", " must be > 0, got -1.0"),
    ("map-cell-size", map_publish("--max-points", "2", "-m", "identity", "--cell-size", "0",
                                  grid=()),
     "--cell-size", "cell size", " must be > 0, got 0.0"),
    ("map-start", map_publish("--max-points", "2", "-m", "identity", "--time-column", "t",
                              "--start", "nan"),
     "--start", "time window start", " must be a finite number, got nan"),
    # trajectory model, release, risk
    ("trajectory-model-prior-weight", traj_model("--prior-weight", "2"),
     "--prior-weight", "prior_weight", " must be in [0, 1), got 2.0"),
    ("trajectory-model-smoothing", traj_model("--smoothing", "-1"),
     "--smoothing", "smoothing", " must be finite and >= 0, got -1.0"),
    ("trajectory-model-prior-scale", traj_model("--prior-weight", "0.1", "--prior-scale", "0"),
     "--prior-scale", "scale_m", " must be > 0, got 0.0"),
    ("trajectory-model-empty-rows", traj_model("--empty-rows", "bogus"),
     "--empty-rows", "empty_rows", " must be one of 'self', 'uniform', got 'bogus'"),
    ("trajectory-release-epsilon", traj_release("-e", "0", "-d", "0.1"),
     "--epsilon", "epsilon", " must be > 0, got 0.0"),
    ("trajectory-release-delta", traj_release("-e", "1", "-d", "2"),
     "--delta", "delta", " must lie in (0, 1), got 2.0"),
    ("trajectory-risk-tries", traj_risk("--tries", "0"),
     "--tries", "n_knowledge", " must be >= 1, got 0"),
    ("trajectory-risk-k", traj_risk("--k", "0"),
     "--k", "k", " must be >= 1, got 0"),
    ("trajectory-risk-tolerance", traj_risk("--attack", "frequency", "--tolerance", "-1"),
     "--tolerance", "tolerance", " must be a finite number >= 0, got -1.0"),
    # visits
    ("visits-hide-redistribute", visits("hide", "--redistribute", "-1"),
     "--redistribute", "r", " must be >= 0, got -1"),
    ("visits-hide-resample-size", visits("hide", "--resample-size", "0"),
     "--resample-size", "resample size", " must be >= 1, got 0"),
    ("visits-hide-resample-mix", visits_checkins("--resample-size", "5", "--resample-mix", "2"),
     "--resample-mix", "resample mix", " must lie in [0, 1], got 2.0"),
    ("visits-hide-method", visits("hide", "--method", "bogus"),
     "--method", "method", " must be one of 'auto', 'lho', 'convex', got 'bogus'"),
    ("visits-resemble-quality-bound", visits("resemble", "--quality-bound", "-1"),
     "--quality-bound", "quality_bound", " must be finite and >= 0, got -1.0"),
    ("visits-resemble-distance", visits("resemble", "--quality-bound", "0.5",
                                        "--distance", "bogus"),
     "--distance", "quality_distance", " must be one of 'js', 'kl', 'l1', 'l2', 'chi2', "
                                       "'hellinger', got 'bogus'"),
    ("visits-avoid-privacy-threshold", visits("avoid", "--quality-bound", "0.5",
                                              "--privacy-threshold", "2"),
     "--privacy-threshold", "privacy_threshold", "=2.0 exceeds the largest possible js distance"),
    # location
    ("location-grid-step", location("obfuscate", "--region", "48.83,2.33,48.87,2.37",
                                    "--grid-step", "0"),
     "--grid-step", "grid_step", " must be > 0, got 0.0"),
    ("location-cell", location("obfuscate", "--consistent-window", "60", "--time-column", "t",
                               "--key-file", "KEY", "--cell", "0"),
     "--cell", "cell_m", " must be > 0, got 0.0"),
    ("location-noise-loss-power", location("noise", "-e", "1", "--loss", "power:0"),
     "--loss power:P", "p", " must be > 0, got 0.0"),
    ("location-noise-loss-threshold", location("noise", "-e", "1", "--loss", "threshold:-1"),
     "--loss threshold:DELTA", "delta", " must be > 0, got -1.0"),
    # batch
    ("batch-counts-epsilon", batch("counts", "-e", "0"),
     "--epsilon", "epsilon", " must be > 0, got 0.0"),
    ("batch-counts-workers", batch("counts", "-e", "1", "--workers", "0"),
     "--workers", "workers", " must be >= 1, got 0"),
    ("batch-counts-buckets", batch("counts", "-e", "1", "--buckets", "0"),
     "--buckets", "buckets", " must be >= 1, got 0"),
    ("batch-trajectories-delta", batch("trajectories", "-e", "1", "-d", "0"),
     "--delta", "delta", " must lie in (0, 1), got 0.0"),
    ("batch-trajectories-on-invalid", batch("trajectories", "-e", "1", "-d", "0.1",
                                            "--on-invalid", "bogus"),
     "--on-invalid", "on_invalid", " must be one of 'error', 'drop', got 'bogus'"),
    # noise, table
    ("noise-counts-seed", noise_counts("--seed", "-1"),
     "--seed", "seed", " must be a non-negative integer, got -1"),
    ("table-anonymize-seed", table_anonymize("--seed", "-1"),
     "--seed", "seed", " must be a non-negative integer, got -1"),
]


def _word(name: str) -> re.Pattern:
    """``name`` as a word of its own (not inside ``--name`` or another word)."""
    return re.compile(r"(?<![-\w])" + re.escape(name) + r"(?![-\w])")


@pytest.mark.parametrize("build, option, library_name, rest",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_refused_value_names_the_option(tmp_path, capsys, build, option, library_name,
                                          rest):
    d = tmp_path / "work"
    d.mkdir()
    built = build(d, capsys) if build.__code__.co_argcount == 2 else build(d)
    argv, outputs = built
    argv = [str(d / "key") if a == "KEY" else a for a in argv]
    before = sorted(p.name for p in d.iterdir())
    capsys.readouterr()
    code, out, err = run_main(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2, (code, err)
    assert len(lines) == 1 and lines[0].startswith("veil: error: "), err
    message = lines[0][len("veil: error: "):]
    assert message.startswith(option + rest), message   # the option, then the library's text
    assert not _word(library_name).search(message), message
    for name in outputs:
        assert not (d / name).exists(), f"{name} was written"
    assert sorted(p.name for p in d.iterdir()) == before


def test_the_cases_cover_the_command_groups():
    groups = {c[0].split("-")[0] for c in CASES}
    assert groups == {"histogram", "map", "trajectory", "visits", "location", "batch", "noise",
                      "table"}


# ----------------------------------------------------------------------------- the mechanism

def test_only_a_message_whose_subject_is_the_name_is_reworded():
    from veil.cli.common import option_subject

    names = {"k": "--k", "records_bound": "--records-bound", "resample size": "--resample-size"}
    assert option_subject("k must be >= 1, got 0", names) == "--k must be >= 1, got 0"
    assert option_subject("k: not an integer", names) == "--k: not an integer"
    assert option_subject("k, the number of buckets, is 0", names) == (
        "--k, the number of buckets, is 0")
    assert option_subject("k=0 is too small", names) == "--k=0 is too small"
    assert option_subject("'k' must be >= 1", names) == "'--k' must be >= 1"
    assert option_subject("resample size must be >= 1, got 0", names) == (
        "--resample-size must be >= 1, got 0")
    # never inside another word, never later in the message
    assert option_subject("keys must differ", names) is None
    assert option_subject("records_bounds must be > 0", names) is None
    assert option_subject("the bound k must be >= 1", names) is None
    assert option_subject("column 'k' is missing", names) is None


def test_other_errors_and_other_subjects_pass_unchanged():
    from veil.cli.common import options_named
    from veil.errors import DataError, ParameterError

    with pytest.raises(DataError, match=r"^k must"):
        with options_named({"k": "--k"}):
            raise DataError("k must be read from the file")
    with pytest.raises(ParameterError, match=r"^--k must be >= 1, got 0$"):
        with options_named({"k": "--k"}):
            raise ParameterError("k must be >= 1, got 0")
    with pytest.raises(ParameterError, match=r"^n must be >= 1$"):
        with options_named({"k": "--k"}):
            raise ParameterError("n must be >= 1")


def test_a_subclass_keeps_its_class():
    from veil.cli.common import options_named
    from veil.tables.constraints import ConstraintSyntaxError

    with pytest.raises(ConstraintSyntaxError, match=r"^--constraints: bad$"):
        with options_named({"constraint": "--constraints"}):
            raise ConstraintSyntaxError("bad")


def test_library_messages_keep_the_parameter_names():
    """Library callers pass the parameters by name: the library's text is unchanged."""
    from veil.errors import ParameterError
    from veil.histograms import publish

    with pytest.raises(ParameterError, match=r"^records_bound must be > 0"):
        publish(counts=[1, 2, 3], epsilon=1.0, method="dawa", records_bound=-3)
