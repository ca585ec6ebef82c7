"""The self-contained HTML report.

:func:`render_report` turns report sections into ONE HTML file: inline CSS,
figures as PNG ``data:`` URIs, no script, no font, no stylesheet and no image
fetched from anywhere, so the file can be mailed, archived or opened offline.
It is readable on a laptop and a phone (fluid layout; every figure comes in two
renderings, and screens up to 600 CSS pixels wide get the one laid out for a phone,
scaled to the screen; only wide tables scroll sideways, inside their box). Each section shows its title, the guarantee in plain
words, the parameters, headline results, figures with captions, the numbers
behind every figure as a collapsible table, and the command to run it on your
own data.

:func:`rebuild_report` re-renders a run folder from the section JSON files
that ``veil demo`` saved (``veil report RUN_DIR``).

A section is given either as a :class:`veil.report.core.Section` or as its
JSON form (``Section.to_dict()``), optionally with ``status`` (``"ok"`` or
``"failed"``), ``error``, ``traceback`` and ``elapsed_s``. Rendering uses only
the JSON form, so a rebuilt report is byte-identical to the original.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import os
import re
import struct
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

from .. import __version__
from ..errors import DataError

__all__ = ["render_report", "rebuild_report", "save_report", "load_run", "write_text_atomic",
           "seed_status", "section_to_dict", "MAX_TABLE_ROWS"]

#: Tables longer than this are cut in the HTML (the JSON keeps every row).
MAX_TABLE_ROWS = 400

_CSS = """
:root{--fg:#1d2126;--muted:#5b6570;--bg:#fff;--panel:#f5f7f9;--line:#d9dee3;--accent:#1f5f99;
--ok:#1e7a3c;--bad:#b3261e;--warnbg:#fff4e5;--warnline:#c77700}
@media (prefers-color-scheme:dark){:root{--fg:#e6e8ea;--muted:#a3abb3;--bg:#15181b;
--panel:#1f2428;--line:#343b42;--accent:#7fb4e6;--ok:#6fcf8a;--bad:#ff8a80;--warnbg:#3a2a10;
--warnline:#e0a040}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.55 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main,header,footer{max-width:62rem;margin:0 auto;padding:0 1rem}
header{padding-top:1.5rem}
h1{font-size:1.9rem;line-height:1.2;margin:.2rem 0 .4rem}
h2{font-size:1.45rem;line-height:1.25;margin:0 0 .6rem}
h3{font-size:1.08rem;margin:1.4rem 0 .5rem}
a{color:var(--accent)}
p{margin:.5rem 0}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em}
code{background:var(--panel);padding:.05em .3em;border-radius:3px}
pre{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:.7rem .9rem;
overflow-x:auto;white-space:pre;margin:.5rem 0}
pre code{background:none;padding:0}
.lead{color:var(--muted);margin:.2rem 0 1rem}
.banner{background:var(--warnbg);border-left:4px solid var(--warnline);padding:.6rem .9rem;
border-radius:4px;margin:1rem 0}
nav.toc{background:var(--panel);border:1px solid var(--line);border-radius:8px;
padding:.6rem 1rem;margin:1rem 0 1.5rem}
nav.toc ol{margin:.3rem 0;padding-left:1.4rem}
nav.toc li{margin:.2rem 0}
section.sec{border-top:2px solid var(--line);padding:1.6rem 0 1rem}
.status{display:inline-block;font-size:.78rem;font-weight:600;padding:.05rem .5rem;
border-radius:999px;vertical-align:middle;margin-left:.4rem;border:1px solid currentColor}
.status.ok{color:var(--ok)}.status.failed{color:var(--bad)}
.meta{color:var(--muted);font-size:.88rem}
.guarantee{background:var(--panel);border-left:4px solid var(--accent);border-radius:4px;
padding:.5rem .9rem;margin:.8rem 0}
.guarantee strong.label{display:block;font-size:.8rem;text-transform:uppercase;
letter-spacing:.04em;color:var(--muted)}
.error{border-left:4px solid var(--bad);background:var(--panel);padding:.6rem .9rem;
border-radius:4px}
.error pre{white-space:pre-wrap;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(11rem,1fr));gap:.6rem;
margin:.6rem 0}
.card{border:1px solid var(--line);border-radius:8px;padding:.5rem .7rem;background:var(--bg)}
.card .k{font-size:.8rem;color:var(--muted);overflow-wrap:anywhere}
.card .v{font-size:1.15rem;font-weight:600;overflow-wrap:anywhere}
figure{margin:1rem 0 1.4rem;max-width:100%}
figure picture{display:block;max-width:100%}
figure img{display:block;max-width:100%;height:auto;background:#fff;border:1px solid var(--line);
border-radius:6px}
figcaption{font-size:.92rem;color:var(--muted);margin-top:.35rem}
figcaption b{color:var(--fg)}
.table-wrap{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.4rem 0;max-width:100%}
table{border-collapse:collapse;font-size:.86rem;min-width:12rem}
caption{caption-side:top;text-align:left;color:var(--muted);padding:.2rem 0}
th,td{border-bottom:1px solid var(--line);padding:.25rem .6rem;text-align:left;
vertical-align:top}
th{background:var(--panel);white-space:nowrap}
td{min-width:4rem;max-width:28rem}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;min-width:0}
table.params td:first-child{color:var(--muted)}
details{margin:.4rem 0}
summary{cursor:pointer;color:var(--accent);padding:.2rem 0}
.more{font-size:.82rem;color:var(--muted)}
footer{color:var(--muted);font-size:.85rem;border-top:1px solid var(--line);margin-top:2rem;
padding-top:.8rem;padding-bottom:2rem}
.card .v.multi{font-size:.95rem;font-weight:600}.card .v.multi .k{font-weight:400}
@media (max-width:600px){body{font-size:15px}h1{font-size:1.5rem}h2{font-size:1.25rem}
main,header,footer{padding:0 .7rem}.cards{grid-template-columns:repeat(2,minmax(0,1fr))}}
@media print{details{display:block}nav.toc{display:none}}
"""


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------

def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file and a rename.

    A failure never leaves a partial file at ``path``.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".veil-tmp-", dir=path.parent)
    except OSError as exc:  # a read-only or full folder: name the file, not a temp
        if exc.errno is None or not exc.strerror:
            raise
        raise OSError(exc.errno, f"cannot write {str(path)!r}: {exc.strerror}") from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.errno is not None and exc.strerror:
            raise OSError(exc.errno, f"cannot write {str(path)!r}: {exc.strerror}") from None
        raise
    return path


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def seed_status(seed: int | None) -> str:
    """The footer's words for the randomness of a run."""
    if seed is None:
        return "OS entropy"
    return f"seed {seed} \u2014 experiments only"


def section_to_dict(section: Any) -> dict[str, Any]:
    """The JSON form of a section (a :class:`Section` or an existing dict)."""
    from ..release import to_jsonable

    d = to_jsonable(section.to_dict() if hasattr(section, "to_dict") else dict(section))
    d.setdefault("status", "ok")
    return d


_SEP = " \u00b7 "


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


_CODE_RE = re.compile(r"`([^`]+)`")
_BOLD_RE = re.compile(r"\*\*([^*]+)\*\*")
_EM_RE = re.compile(r"(?<![*\w])\*([^*\s](?:[^*]*[^*\s])?)\*(?![*\w])")


def _inline(text: str) -> str:
    """Escape, then render `code`, **bold** and *italic* (the only markup section text may use)."""
    parts = _CODE_RE.split(_esc(text))  # odd items are code spans: no markup inside them
    for i, p in enumerate(parts):
        if i % 2:
            parts[i] = f"<code>{p}</code>"
        else:
            p = _BOLD_RE.sub(lambda m: f"<strong>{m.group(1)}</strong>", p)
            parts[i] = _EM_RE.sub(lambda m: f"<em>{m.group(1)}</em>", p)
    return "".join(parts)


def _paragraphs(text: str) -> str:
    paras = [p.strip() for p in re.split(r"\n\s*\n", str(text or "")) if p.strip()]
    return "".join(f"<p>{_inline(' '.join(p.split()))}</p>" for p in paras)


def _slug(x: Any) -> str:
    s = re.sub(r"[^A-Za-z0-9_-]+", "-", str(x)).strip("-")
    return s or "section"


def _is_num(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        return True
    return isinstance(v, str) and v in ("nan", "inf", "-inf")


def _fmt(v: Any, *, depth: int = 0) -> str:
    """A compact human form of a JSON value (floats to 4 significant digits)."""
    if v is None:
        return "\u2014"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10_000 else str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        if 1e3 <= abs(v) < 1e12:
            return f"{v:,.0f}"  # 11,450 rather than 1.145e+04
        if v != 0 and abs(v) < 1e-4:
            return f"{v:.3e}"
        return f"{v:.4g}"
    if isinstance(v, Mapping):
        if depth > 1:
            return _esc(json.dumps(v))[:200]
        return "; ".join(f"{k}: {_fmt(x, depth=depth + 1)}" for k, x in v.items())
    if isinstance(v, list | tuple):
        items = [_fmt(x, depth=depth + 1) for x in v[:12]]
        more = f", \u2026 ({len(v)} values)" if len(v) > 12 else ""
        return "[" + ", ".join(items) + more + "]"
    return str(v)


_UNITS = {"_m": " (m)", "_s": " (s)", "_ms": " (ms)", "_km": " (km)", "_mb": " (MB)"}


def _label(key: Any) -> str:
    """A reader's label for a snake_case key: ``pim_mean_error_m`` -> ``pim mean error (m)``."""
    k = str(key)
    if "_" not in k:
        return k
    for suffix, unit in _UNITS.items():
        if k.endswith(suffix) and len(k) > len(suffix):
            return k[: -len(suffix)].replace("_", " ") + unit
    return k.replace("_", " ")


def _card_value(v: Any) -> str:
    if isinstance(v, Mapping):  # several numbers: one per line, not one bold run-on line
        return ('<div class="v multi">' + "".join(
            f"<div><span class=\"k\">{_esc(_label(k))}</span> {_esc(_fmt(x, depth=1))}</div>"
            for k, x in v.items()) + "</div>")
    return f'<div class="v">{_esc(_fmt(v))}</div>'


def _png_size(png: bytes) -> tuple[int, int] | None:
    if len(png) >= 24 and png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR":
        w, h = struct.unpack(">II", png[16:24])
        return int(w), int(h)
    return None


def _table_html(t: Mapping[str, Any] | None, *, cls: str = "", note_json: str = "") -> str:
    if not t:
        return ""
    cols = list(t.get("columns") or [])
    rows = list(t.get("rows") or [])
    shown = rows[:MAX_TABLE_ROWS]
    out = ['<div class="table-wrap"><table' + (f' class="{cls}"' if cls else "") + ">"]
    if t.get("caption"):
        out.append(f"<caption>{_inline(t['caption'])}</caption>")
    out.append("<thead><tr>" + "".join(f'<th scope="col">{_esc(c)}</th>' for c in cols)
               + "</tr></thead><tbody>")
    for r in shown:
        cells = []
        for v in (r if isinstance(r, list | tuple) else [r]):
            klass = ' class="num"' if _is_num(v) else ""
            cells.append(f"<td{klass}>{_esc(_fmt(v))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    if len(rows) > len(shown):
        out.append(f'<p class="more">First {len(shown)} of {len(rows)} rows; '
                   f"every row is in {_esc(note_json or 'the saved section JSON')}.</p>")
    return "".join(out)


#: Screens up to this many CSS pixels wide get the phone rendering of each figure.
PHONE_MAX_CSS_PX = 600


def _decode_png(b64: Any) -> bytes:
    try:
        return base64.b64decode(b64 or "", validate=True)
    except (binascii.Error, ValueError, TypeError):
        return b""


def _figure_html(f: Mapping[str, Any], sid: str, i: int) -> str:
    title = f.get("title") or f"Figure {i}"
    png = _decode_png(f.get("png_base64"))
    size = _png_size(png)
    if size is None:
        img = '<p class="error">This figure could not be shown (its PNG data is missing or damaged).</p>'
    else:
        w, h = size
        b64 = base64.b64encode(png).decode("ascii")
        img = (f'<img src="data:image/png;base64,{b64}" width="{w}" height="{h}" '
               f'alt="{_esc(title)}">')
        phone = _decode_png(f.get("png_phone_base64"))
        psize = _png_size(phone)
        if psize is not None:  # narrow screens get the figure laid out for them
            pw, ph = psize
            pb64 = base64.b64encode(phone).decode("ascii")
            img = (f'<picture><source media="(max-width: {PHONE_MAX_CSS_PX}px)" '
                   f'srcset="data:image/png;base64,{pb64}" width="{pw}" height="{ph}">'
                   f"{img}</picture>")
    cap = f"<figcaption><b>Figure {i}. {_inline(title)}</b>"
    if f.get("caption"):
        cap += " " + _inline(f["caption"])
    cap += "</figcaption>"
    data = f.get("data")
    numbers = ""
    if data:
        n = len(data.get("rows") or [])
        numbers = (f"<details><summary>Numbers behind figure {i} ({n} rows)</summary>"
                   + _table_html(data, note_json=f"sections/{sid}.json") + "</details>")
    return f'<figure id="{_slug(sid)}-fig{i}">{img}{cap}</figure>{numbers}'


def _section_html(s: Mapping[str, Any], number: int) -> str:
    sid = _slug(s.get("id", number))
    status = s.get("status", "ok")
    title = s.get("title") or s.get("id") or f"Section {number}"
    out = [f'<section class="sec" id="{sid}">',
           f'<h2>{number}. {_inline(title)}<span class="status {"failed" if status == "failed" else "ok"}">'
           f'{"failed" if status == "failed" else "ok"}</span></h2>']
    meta_bits = []
    if isinstance(s.get("elapsed_s"), int | float):
        meta_bits.append(f"built in {s['elapsed_s']:.2f} s")
    if s.get("module"):
        meta_bits.append(f"module <code>{_esc(s['module'])}</code>")
    if meta_bits:
        out.append('<p class="meta">' + _SEP.join(meta_bits) + "</p>")
    if status == "failed":
        out.append('<div class="error"><p><strong>This part of the demo failed.</strong> '
                   "The rest of the report is unaffected.</p>"
                   f"<pre><code>{_esc(s.get('error') or 'unknown error')}</code></pre>")
        if s.get("traceback"):
            out.append("<details><summary>Traceback</summary>"
                       f"<pre><code>{_esc(s['traceback'])}</code></pre></details>")
        out.append("</div>")
    if s.get("warnings"):
        ws = list(s["warnings"])
        out.append(f"<details><summary>{len(ws)} warning{'s' if len(ws) != 1 else ''} while "
                   "building this part</summary><ul>"
                   + "".join(f"<li><code>{_esc(w)}</code></li>" for w in ws) + "</ul></details>")
    if s.get("guarantee"):
        out.append('<div class="guarantee"><strong class="label">What is guaranteed</strong>'
                   f"{_paragraphs(s['guarantee'])}</div>")
    params = s.get("parameters") or {}
    if params:
        out.append("<h3>Parameters</h3>")
        out.append(_table_html({"columns": ["parameter", "value"],
                                "rows": [[_label(k), v] for k, v in params.items()]},
                                cls="params"))
    results = s.get("results") or {}
    if results:
        out.append('<h3>Results</h3><div class="cards">')
        for k, v in results.items():
            out.append(f'<div class="card"><div class="k">{_esc(_label(k))}</div>'
                       f'{_card_value(v)}</div>')
        out.append("</div>")
    figs = s.get("figures") or []
    if figs:
        out.append("<h3>Figures</h3>")
        out.extend(_figure_html(f, sid, i) for i, f in enumerate(figs, 1))
    tables = s.get("tables") or []
    if tables:
        out.append("<h3>Tables</h3>")
        out.extend(_table_html(t, note_json=f"sections/{sid}.json") for t in tables)
    if s.get("how_to"):
        out.append("<h3>Run it on your data</h3>"
                   f"<pre><code>{_esc(str(s['how_to']).strip())}</code></pre>")
    out.append("</section>")
    return "\n".join(out)


def _headline(s: Mapping[str, Any]) -> str:
    if s.get("status") == "failed":
        return "failed"
    res = s.get("results") or {}
    for k, v in res.items():  # the first plain number that is not a test's p-value
        if not isinstance(v, Mapping | list | tuple) and "p-value" not in str(k) \
                and "p_value" not in str(k):
            return f"{_label(k)}: {_fmt(v)}"
    return ""


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------

def render_report(sections: Iterable[Any], title: str = "veil report",
                  meta: Mapping[str, Any] | None = None) -> str:
    """Render sections into one self-contained HTML document.

    Parameters
    ----------
    sections : iterable of Section or dict
        In display order. Dicts are the JSON form (``Section.to_dict()``) with
        optional ``status`` (``"ok"``/``"failed"``), ``error``, ``traceback``,
        ``elapsed_s`` and ``module``.
    title : str
    meta : dict, optional
        Run information: ``veil_version``, ``seed`` (None for OS entropy),
        ``created`` (ISO time), ``elapsed_s``, ``quick``, ``intro`` (text
        shown under the title), ``data`` (where the data came from).

    Returns
    -------
    str
        The HTML document. It references no external resource.

    Examples
    --------
    >>> from veil.report.core import Section
    >>> doc = render_report([Section("x", "Example", "Nothing is protected.")], "demo", {})
    >>> doc.startswith("<!DOCTYPE html>") and "Example" in doc
    True
    """
    meta = dict(meta or {})
    secs = [section_to_dict(s) for s in sections]
    version = meta.get("veil_version", __version__)
    seed = meta.get("seed")
    seed_words = seed_status(seed)
    n_failed = sum(s.get("status") == "failed" for s in secs)

    head = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta name="generator" content="veil {_esc(version)}">',
            f"<title>{_esc(title)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>"]
    hdr = ["<header>", f"<h1>{_esc(title)}</h1>"]
    bits = []
    if meta.get("created"):
        bits.append(f"generated {_esc(meta['created'])}")
    bits.append(f"veil {_esc(version)}")
    if isinstance(meta.get("elapsed_s"), int | float):
        bits.append(f"{meta['elapsed_s']:.1f} s")
    if meta.get("quick"):
        bits.append("quick mode (small sizes)")
    hdr.append('<p class="lead">' + _SEP.join(bits) + "</p>")
    if meta.get("intro"):
        hdr.append(_paragraphs(meta["intro"]))
    if seed is not None:
        hdr.append(f'<div class="banner"><strong>Seeded run (seed {_esc(seed)}).</strong> '
                   "Every random draw in this report can be reproduced by anyone who knows the "
                   "seed, so the noisy outputs shown here protect nothing. Seeds are for "
                   "experiments and tests only; a normal run draws its randomness from the "
                   "operating system.</div>")
    if n_failed:
        hdr.append(f'<div class="banner"><strong>{n_failed} of {len(secs)} sections failed.</strong> '
                   "Their error messages are shown in place.</div>")
    hdr.append("</header>")

    body = ["<main>"]
    if secs:
        body.append('<nav class="toc" aria-label="Contents"><strong>Contents</strong><ol>')
        for s in secs:
            hl = _headline(s)
            body.append(f'<li><a href="#{_slug(s.get("id"))}">{_inline(s.get("title") or s.get("id"))}</a>'
                        + (f' <span class="meta">\u2014 {_esc(hl)}</span>' if hl else "") + "</li>")
        body.append("</ol></nav>")
    else:
        body.append("<p>This run produced no sections.</p>")
    body.extend(_section_html(s, i) for i, s in enumerate(secs, 1))
    body.append("</main>")

    line = f"veil {_esc(version)}{_SEP}randomness: {_esc(seed_words)}"
    if meta.get("data"):
        line += f"{_SEP}data: {_esc(meta['data'])}"
    foot = ["<footer>", f"<p>{line}</p>"]
    foot.append("<p>This file is self-contained: it loads nothing from the network. The "
                "numbers behind every figure are in the tables under it and in "
                "<code>sections/*.json</code> beside this file. What each guarantee means, and "
                "where it stops, is explained in <code>docs/guarantees.md</code> of veil."
                "</p></footer>")
    return "\n".join(head + hdr + body + foot + ["</body>", "</html>", ""])


def _load_json(path: Path) -> Any:
    from ..io.read import read_json

    return read_json(path, what="the section file (rerun the job that wrote it)")


_SECTION_NAME = re.compile(r"[A-Za-z0-9_-]+")


def _inside(run: Path, p: Path, what: str) -> Path:
    """``p`` if it resolves inside ``run`` (symlinks followed); else a DataError.

    A run folder may have been copied from elsewhere: its ``meta.json`` and its section
    files are data, and a name such as ``../../secret`` or a symlink to ``/etc/passwd``
    must not make ``veil report`` read (and embed in the report) a file outside the folder.
    """
    real = p.resolve()
    if real != run and run not in real.parents:
        how = "is a symbolic link that leads" if p.is_symlink() else "resolves to"
        raise DataError(f"{what} {how} outside the run folder ({str(real)!r}); refusing to "
                        f"read it", path=str(p))
    return real


def _check_table(t: Any, where: str, path: Path) -> None:
    if not t:  # an empty or missing table is shown as nothing
        return
    if not isinstance(t, dict):
        raise DataError(f"{where} must be a table object (columns, rows), got "
                        f"{type(t).__name__}; rerun the job that wrote it", path=str(path))
    for key in ("columns", "rows"):
        if t.get(key) and not isinstance(t[key], list):
            raise DataError(f"{where}.{key} must be a list, got {type(t[key]).__name__}; "
                            f"rerun the job that wrote it", path=str(path))


def _check_section(d: dict, path: Path) -> None:
    """The types the renderer relies on (a damaged or hand-edited file fails by name)."""
    def need(ok: bool, field: str, what: str) -> None:
        if not ok:
            raise DataError(f"{field} must be {what}; rerun the job that wrote it",
                            path=str(path))

    for key in ("parameters", "results"):
        need(not d.get(key) or isinstance(d[key], dict), key, "an object")
    for key in ("figures", "tables", "warnings"):
        need(not d.get(key) or isinstance(d[key], list), key, "a list")
    for i, f in enumerate(d.get("figures") or []):
        need(isinstance(f, dict), f"figures[{i}]", "an object")
        png = f.get("png_base64")
        need(png is None or isinstance(png, str), f"figures[{i}].png_base64", "text")
        _check_table(f.get("data"), f"figures[{i}].data", path)
    for i, t in enumerate(d.get("tables") or []):
        _check_table(t, f"tables[{i}]", path)


def load_run(run_dir: str | os.PathLike) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read the sections and run information saved in ``run_dir``.

    The order comes from ``meta.json`` when present (as written by
    ``veil demo``), else from the file names in ``sections/``. Only files inside the
    run folder are read: a section name must be a plain name (letters, digits, ``-`` and
    ``_``), and a symbolic link that leads out of the folder is refused.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> run = pathlib.Path(tempfile.mkdtemp())
    >>> (run / "sections").mkdir()
    >>> _ = (run / "sections" / "x.json").write_text(json.dumps({"id": "x", "title": "X"}))
    >>> _ = (run / "meta.json").write_text(json.dumps({"sections": ["../../etc/passwd"]}))
    >>> load_run(run)
    Traceback (most recent call last):
    ...
    veil.errors.DataError: file .../meta.json: section name '../../etc/passwd' is not a plain name (letters, digits, - and _ only); rerun the job that wrote the folder
    """
    run = Path(run_dir)
    if not run.is_dir():
        raise DataError("not a folder; give the folder a `veil demo` (or bench) run wrote",
                        path=str(run))
    run = run.resolve()
    meta_path = run / "meta.json"
    meta = {}
    if meta_path.is_file():
        meta = _load_json(_inside(run, meta_path, "meta.json"))
    if not isinstance(meta, dict):
        raise DataError("expected a JSON object", path=str(meta_path))
    sec_dir = run / "sections"
    if isinstance(meta.get("sections"), list) and meta["sections"]:
        names = [e.get("id") if isinstance(e, dict) else e for e in meta["sections"]]
        for n in names:
            if not isinstance(n, str) or not _SECTION_NAME.fullmatch(n):
                raise DataError(f"section name {n!r} is not a plain name (letters, digits, "
                                f"- and _ only); rerun the job that wrote the folder",
                                path=str(meta_path))
        paths = [sec_dir / f"{n}.json" for n in names]
    else:
        paths = sorted(sec_dir.glob("*.json")) if sec_dir.is_dir() else []
    if not paths:
        raise DataError("no report data found: expected sections/*.json (written by "
                        "`veil demo`)", path=str(run))
    sections = []
    for p in paths:
        if not p.is_file():
            if p.is_symlink():
                _inside(run, p, "the section file")
            raise DataError("section file listed in meta.json is missing", path=str(p))
        d = _load_json(_inside(run, p, "the section file"))
        if not isinstance(d, dict) or "id" not in d or "title" not in d:
            raise DataError("not a report section (needs at least 'id' and 'title')", path=str(p))
        _check_section(d, p)
        sections.append(d)
    return sections, meta


def save_report(run_dir: str | os.PathLike, sections: Iterable[Any], *,
                title: str = "veil report", meta: Mapping[str, Any] | None = None) -> Path:
    """Save sections as a run folder and render it: what ``veil report RUN_DIR`` reads back.

    Writes ``RUN_DIR/sections/<id>.json`` for every section (ids made unique
    by a ``-2``, ``-3``... suffix), ``RUN_DIR/meta.json`` (``meta`` plus the
    title and the section order) and ``RUN_DIR/index.html``, each atomically.
    Benchmarks and batch jobs call this to make their results reportable.

    Returns
    -------
    pathlib.Path
        The written ``index.html``.

    Examples
    --------
    >>> from veil.report.core import Section
    >>> save_report("run", [Section("x", "X", "none")], title="bench")  # doctest: +SKIP
    PosixPath('run/index.html')
    """
    run = Path(run_dir)
    if run.exists() and not run.is_dir():
        raise DataError("exists and is not a folder", path=str(run))
    dicts, used = [], set()
    for s in sections:
        d = section_to_dict(s)
        d["id"] = unique_id(str(d.get("id") or "section"), used)
        dicts.append(d)
        write_text_atomic(run / "sections" / f"{d['id']}.json", json.dumps(d, indent=1))
    meta = {**dict(meta or {}), "title": title}
    meta.setdefault("veil_version", __version__)
    meta["sections"] = [{"id": d["id"], "status": d.get("status", "ok")} for d in dicts]
    write_text_atomic(run / "meta.json", json.dumps(meta, indent=1))
    return write_text_atomic(run / "index.html", render_report(dicts, title, meta))


def unique_id(sid: str, used: set[str]) -> str:
    """``sid`` made unique against ``used`` (and added to it): ``x``, ``x-2``, ``x-3``..."""
    base, out, k = _slug(sid), _slug(sid), 2
    while out in used:
        out, k = f"{base}-{k}", k + 1
    used.add(out)
    return out


def rebuild_report(run_dir: str | os.PathLike) -> Path:
    """Re-render ``RUN_DIR/index.html`` from ``RUN_DIR/sections/*.json`` and ``meta.json``.

    Returns the path of the written ``index.html`` (written atomically).

    Examples
    --------
    >>> rebuild_report("report")  # doctest: +SKIP
    PosixPath('report/index.html')
    """
    from ..errors import DataError

    index = Path(run_dir) / "index.html"
    if index.is_symlink():  # replaced silently before; every other output refuses a link
        raise DataError("is a symbolic link; veil never writes over a link: remove it",
                        path=str(index))
    sections, meta = load_run(run_dir)
    doc = render_report(sections, title=str(meta.get("title", "veil report")), meta=meta)
    return write_text_atomic(index, doc)
