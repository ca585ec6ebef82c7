"""Every `veil ...` command shown in README.md and docs/*.md names a real sub-command and only
real options (doc examples do not rot). The README tour is also executed (tests/test_readme.py),
and tests/test_docs_run.py executes every command extracted here (with `doc_lines`/`_commands`)."""

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(text: str):
    """Fenced code blocks (any language but python/json), parsed line by line."""
    lang, buf = None, []
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            if lang is None:
                lang, buf = line.strip()[3:].strip(), []
            else:
                if lang not in ("python", "json", "yaml", "toml"):
                    yield "\n".join(buf)
                lang = None
        elif lang is not None:
            buf.append(line)


def doc_lines(text: str):
    """Every line of those blocks in document order, backslash continuations joined, stripped
    and without a leading `$ ` prompt (commands, setup lines such as `echo ... > file`, output)."""
    for block in _blocks(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            yield line.strip().removeprefix("$ ")


def _commands(text: str):
    for line in doc_lines(text):
        if line.startswith("veil ") or line == "veil":
            yield line.split("#", 1)[0].strip()


def _click_root():
    from veil.cli import command

    return command()  # with the options every command gets (--quiet, --json, aliases)


def _resolve(root, tokens):
    cmd, ctx_opts, i = root, {o for p in root.params for o in p.opts}, 0
    while hasattr(cmd, "commands") and i < len(tokens):
        tok = tokens[i]
        if tok.startswith("-"):
            i += 1
            continue
        if tok not in cmd.commands:
            return None, tok, ctx_opts
        cmd = cmd.commands[tok]
        ctx_opts |= {o for p in cmd.params for o in p.opts}
        i += 1
    return cmd, None, ctx_opts


# Lines that show an error on purpose or a placeholder command.
ILLUSTRATIONS = {"--bogus"}


CASES = [(doc.name, line) for doc in DOCS for line in _commands(doc.read_text())]


def test_docs_show_commands():
    assert len(CASES) >= 20


@pytest.mark.parametrize("doc, line", CASES, ids=[f"{d}:{i}" for i, (d, _) in enumerate(CASES)])
def test_documented_command_exists(doc, line):
    root = _click_root()
    try:
        tokens = shlex.split(line)[1:]
    except ValueError:
        pytest.fail(f"{doc}: cannot parse {line!r}")
    tokens = [t for t in tokens if t not in ("[", "]") and not t.startswith("[")]
    bogus = [t for t in tokens if t in ILLUSTRATIONS]
    tokens = [t for t in tokens if t not in ILLUSTRATIONS]
    if "COMMAND" in tokens:  # `veil --debug COMMAND ...`: check the root options only
        tokens = tokens[:tokens.index("COMMAND")]
    cmd, unknown, opts = _resolve(root, tokens)
    assert unknown is None, f"{doc}: `{line}` names no sub-command {unknown!r}"
    used = {t.split("=", 1)[0] for t in tokens if t.startswith("--")}
    missing = sorted(u for u in used if u not in opts and u != "--help")
    assert not missing, f"{doc}: `{line}` uses unknown option(s) {missing}"
    for b in bogus:  # an intentional error example must really be an error
        assert b not in opts
