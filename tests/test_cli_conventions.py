"""Issue 17, defect 6: one set of command-line conventions, enforced on every command.

The test walks the whole CLI by Click/Typer introspection (``veil.cli.walk_commands``), so a new
command or option is checked the day it is added. The conventions are written down in
docs/cli.md; every exception is listed here with its reason.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from veil.cli import DEPRECATED_OPTIONS, command, main, walk_commands

#: single-letter long options allowed: k is the standard name of k-anonymity's parameter
ONE_LETTER_LONG = {"--k"}
#: short flags that stand for more than one long name, because the long names mean the same
#: thing for different capabilities (the algorithm to run)
SHORT_GROUPS = {"-m": {"--method", "--mechanism"}}
#: hidden options that are not in DEPRECATED_OPTIONS (with their reason)
OTHER_HIDDEN = {("trajectory", "release"): {"--initial-lonlat"},  # the old (lon, lat) order
                # the old form 'check CONSTRAINTS --table TABLE' (the table is INPUT now)
                ("table", "constraints", "check"): {"--table", "-t"}}
#: a column is named by an option ending in -column; these bare spellings are not used
BARE_COLUMN_NAMES = {"--lat", "--lon", "--user", "--time", "--category", "--t"}
KEBAB = re.compile(r"^--[a-z][a-z0-9]*(-[a-z0-9]+)*$")

LEAVES = dict(walk_commands())


def _exit_code(argv) -> int:
    try:
        main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _options(leaf, hidden: bool | None = False):
    for p in leaf.params:
        if type(p).__name__.endswith("Option") and (hidden is None or bool(p.hidden) == hidden):
            yield p


def test_the_walk_finds_every_capability():
    groups = {path[0] for path in LEAVES}
    assert {"histogram", "map", "visits", "location", "trajectory", "table", "batch", "data",
            "noise", "bench", "demo", "report"} <= groups
    assert len(LEAVES) >= 35


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_option_names(path):
    leaf = LEAVES[path]
    for p in _options(leaf):
        for name in p.opts + p.secondary_opts:
            if name.startswith("--"):
                assert KEBAB.match(name), f"{' '.join(path)}: {name} is not lower-case kebab"
                assert len(name) > 3 or name in ONE_LETTER_LONG, \
                    f"{' '.join(path)}: one-letter long option {name}"
                assert name not in BARE_COLUMN_NAMES, \
                    f"{' '.join(path)}: {name} names a column: spell it {name}-column"
            else:
                assert re.match(r"^-[a-zA-Z]$", name), f"{' '.join(path)}: odd short {name}"
        if "--output" in p.opts:
            assert "-o" in p.opts, f"{' '.join(path)}: --output without -o"


def test_a_short_flag_means_one_thing_everywhere():
    meaning = defaultdict(set)
    where = defaultdict(list)
    for path, leaf in LEAVES.items():
        for p in _options(leaf):
            longs = [n for n in p.opts if n.startswith("--")]
            for s in (n for n in p.opts if not n.startswith("--")):
                meaning[s].update(longs)
                where[s].append(" ".join(path))
    bad = {s: sorted(v) for s, v in meaning.items()
           if len(v) > 1 and v != SHORT_GROUPS.get(s)}
    assert not bad, bad
    assert meaning["-o"] == {"--output"} and meaning["-e"] == {"--epsilon"}
    assert meaning["-c"] == {"--column"}


def test_hidden_options_are_the_listed_deprecated_aliases():
    for path, leaf in LEAVES.items():
        hidden = {n for p in _options(leaf, hidden=True) for n in p.opts}
        allowed = set(DEPRECATED_OPTIONS.get(path, {})) | OTHER_HIDDEN.get(path, set())
        assert hidden == allowed, (path, hidden, allowed)


@pytest.mark.parametrize("path,old,new", [(p, o, n) for p, m in DEPRECATED_OPTIONS.items()
                                          for o, n in m.items()])
def test_a_deprecated_alias_parses_into_its_new_option(path, old, new):
    leaf = LEAVES[path]
    main_opt = next(p for p in _options(leaf) if new in p.opts)
    alias = next(p for p in _options(leaf, hidden=True) if old in p.opts)
    assert alias.name == main_opt.name and not alias.required
    ctx = leaf.make_context(" ".join(path), [], resilient_parsing=True)
    parser = leaf.make_parser(ctx)
    value = "1" if not getattr(main_opt, "is_flag", False) else None
    argv = [old] + ([value] if value else [])
    opts, _, _ = parser.parse_args(argv)
    opts_new, _, _ = parser.parse_args([new] + ([value] if value else []))
    assert opts[main_opt.name] == opts_new[main_opt.name]


def test_deprecated_spellings_still_run_and_warn(tmp_path, capsys):
    """The old --D spelling (in older docs) gives the same answer as --radius, with a warning."""
    outs = []
    for flag in ("--D", "--radius"):
        assert _exit_code(["location", "noise", "--privacy", "D-eps", flag, "200",
                           "--epsilon", "1", "--loss", "distance"]) == 0
        cap = capsys.readouterr()
        outs.append(cap.out)
        assert ("deprecated, use --radius" in cap.err) == (flag == "--D")
    assert outs[0] == outs[1] and '"D": 200.0' in outs[0]


@pytest.mark.parametrize("path", sorted({p[:i] for p in LEAVES for i in range(1, len(p) + 1)}),
                         ids=" ".join)
def test_every_command_and_group_answers_dash_h(path, capsys):
    assert _exit_code([*path, "-h"]) == 0
    out = capsys.readouterr().out
    assert "Usage: veil " + " ".join(path) in " ".join(out.split())
    # flags take no value: Typer's '<bool>' type is not shown
    assert "<bool>" not in out
    assert "-h" in out and "--help" in out


def test_the_conventions_page_lists_every_rule():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    for old, new in {o: n for m in DEPRECATED_OPTIONS.values() for o, n in m.items()}.items():
        assert f"`{old}`" in page and f"`{new}`" in page
    for short in ("-o", "-e", "-c", "-m", "-h"):
        assert f"`{short}`" in page
    assert "tests/test_cli_conventions.py" in page


def test_command_builds_once_per_call():
    assert command() is not command()  # fresh objects: the aliases are never added twice


#: a square-bracketed word in a help text, e.g. ``veil[geotiff]`` or ``[user,]``: Rich reads it
#: as a style tag and drops it from the rendered help unless it is escaped
BRACKETED = re.compile(r"\\?\[[^\]\s]*\]")


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_bracketed_help_text_is_shown(path, capsys):
    """Every ``[...]`` written in a command's or parameter's help reaches the rendered -h
    (regression: ``--geotiff`` said "needs veil" and ``trajectory release`` lost ``[user,]``)."""
    leaf = LEAVES[path]
    texts = [leaf.help or ""] + [getattr(p, "help", None) or "" for p in leaf.params
                                 if not getattr(p, "hidden", False)]
    wanted = {m.group(0).lstrip("\\") for t in texts for m in BRACKETED.finditer(t)}
    # Typer's own '[default: ...]'/'[required]' are added by Typer, never in our texts
    if not wanted:
        return
    assert _exit_code([*path, "-h"]) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    for token in sorted(wanted):
        assert token in shown, f"{' '.join(path)}: {token!r} is not shown in -h"
