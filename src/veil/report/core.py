"""The data model every report section is built from.

A capability contributes to ``veil demo`` with a module
``veil.report.sections.<name>`` exposing ``build(ctx: DemoContext) -> Section``;
:data:`SECTION_MODULES` fixes their order. A section is plain data (text,
numbers, figures as PNG bytes, tables as lists of rows) so it can be saved as
JSON next to the report and re-rendered by ``veil report``.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["Figure", "Table", "Section", "DemoContext", "SECTION_MODULES", "figure_from_matplotlib",
           "layout_problems", "PHONE_WIDTH_IN", "PHONE_DPI", "MIN_FONT_PT"]

#: The phone rendering of every figure: drawn this wide (inches) at this resolution, so that
#: shown 368 CSS pixels wide (a 390 px screen less margins) a point of text is about 1.2 px.
PHONE_WIDTH_IN = 4.3
PHONE_DPI = 170
#: No text of a figure is smaller than this (points), in either rendering.
MIN_FONT_PT = 8.0
#: ... and on the phone rendering no text is smaller than this.
MIN_PHONE_FONT_PT = 9.0

SECTION_MODULES: list[str] = [
    "veil.report.sections.samplers",
    "veil.report.sections.histograms",
    "veil.report.sections.maps",
    "veil.report.sections.visits",
    "veil.report.sections.geo",
    "veil.report.sections.temporal",
    "veil.report.sections.tables",
]


@dataclass
class Table:
    """A small table: column names and rows (lists of JSON-friendly values)."""

    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"columns": self.columns, "rows": self.rows, "caption": self.caption}


@dataclass
class Figure:
    """A picture (PNG bytes) with a caption and the numbers behind it.

    Attributes
    ----------
    title, caption : str
    png : bytes
        The picture for wide screens.
    data : Table, optional
        The numbers behind the picture.
    png_phone : bytes, optional
        The same figure laid out for a phone screen (panels stacked, larger text); the
        HTML report shows it on screens up to 600 CSS pixels wide.
    layout : dict
        Facts measured on each rendering by :func:`figure_from_matplotlib` (size, smallest
        text, every panel's title and labelled ticks, legends over a plotting area); see
        :func:`layout_problems`.
    """

    title: str
    png: bytes
    caption: str = ""
    data: Table | None = None
    png_phone: bytes | None = None
    layout: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {"title": self.title, "png_base64": base64.b64encode(self.png).decode("ascii"),
             "caption": self.caption, "data": self.data.to_dict() if self.data else None}
        if self.png_phone is not None:
            d["png_phone_base64"] = base64.b64encode(self.png_phone).decode("ascii")
        if self.layout:
            d["layout"] = self.layout
        return d


@dataclass
class Section:
    """One capability's part of the report.

    Attributes
    ----------
    id, title : str
    guarantee : str
        The privacy guarantee in plain words (what is protected, what is not).
    parameters : dict
        Privacy and algorithm parameters used.
    results : dict
        Headline utility numbers.
    figures, tables : lists
    how_to : str
        The command that runs this on the user's own data.
    """

    id: str
    title: str
    guarantee: str
    parameters: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    how_to: str = ""

    def to_dict(self) -> dict[str, Any]:
        from ..release import to_jsonable

        return {"id": self.id, "title": self.title, "guarantee": self.guarantee,
                "parameters": to_jsonable(self.parameters), "results": to_jsonable(self.results),
                "figures": [f.to_dict() for f in self.figures],
                "tables": [t.to_dict() for t in self.tables], "how_to": self.how_to}


@dataclass
class DemoContext:
    """What a section builder receives.

    ``rng`` is the demo's generator (seeded only when the user passed
    ``--seed``); ``quick`` asks for small sizes (tests); ``outdir`` is where
    extra data files may be written; ``progress(msg)`` reports a step.
    """

    rng: np.random.Generator
    quick: bool
    outdir: Path
    progress: Callable[[str], None] = lambda msg: None


def _panels(fig) -> list:
    """The plotting axes of a figure (colorbars and invisible axes left out)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison
            and ax.get_label() != "<colorbar>" and not hasattr(ax, "_colorbar")]


def _labelled_ticks(ax, which: str, renderer) -> int:
    """Visible, non-empty tick labels of one axis that lie along the plotting area."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    box = ax.get_window_extent(renderer)
    lo, hi = (box.x0, box.x1) if which == "x" else (box.y0, box.y1)
    tol = 0.01 * (hi - lo) + 1.0
    n = 0
    for t in (*axis.get_majorticklabels(), *axis.get_minorticklabels()):
        if not (t.get_visible() and t.get_text().strip()):
            continue
        bb = t.get_window_extent(renderer)
        c = (bb.x0 + bb.x1) / 2 if which == "x" else (bb.y0 + bb.y1) / 2
        n += lo - tol <= c <= hi + tol
    return n


def _layout_facts(fig, dpi: float) -> dict[str, Any]:
    """Measure what a reader sees: titles, labelled ticks, text size, legends over the data."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = _panels(fig)
    sup = fig.get_suptitle() if hasattr(fig, "get_suptitle") else ""
    facts_panels = []
    for ax in panels:
        title = ax.get_title() or ax.get_title("left") or ax.get_title("right")
        facts_panels.append({"title": title, "xticks": _labelled_ticks(ax, "x", renderer),
                             "yticks": _labelled_ticks(ax, "y", renderer)})
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    over = 0
    for leg in legends:
        lb = leg.get_window_extent(renderer)
        for ax in panels:
            ab = ax.get_window_extent(renderer)
            w = min(lb.x1, ab.x1) - max(lb.x0, ab.x0)
            h = min(lb.y1, ab.y1) - max(lb.y0, ab.y0)
            over += w > 0.5 and h > 0.5
    sizes = [t.get_fontsize() for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and t.get_figure() is not None]
    return {"dpi": dpi, "suptitle": sup, "panels": facts_panels, "legends": len(legends),
            "legends_over_plot_area": over, "min_font_pt": float(min(sizes)) if sizes else None}


def layout_problems(layout: dict[str, Any], *, phone: bool = False) -> list[str]:
    """What is wrong with a rendering, from its measured facts (empty list when fine).

    Every panel has a title (or the figure a suptitle), at least two labelled ticks on each
    axis, no legend overlaps a plotting area, and no text is smaller than
    :data:`MIN_FONT_PT` (:data:`MIN_PHONE_FONT_PT` on the phone rendering).

    Examples
    --------
    >>> layout_problems({"panels": [{"title": "", "xticks": 1, "yticks": 5}],
    ...                  "legends_over_plot_area": 1, "min_font_pt": 6.0, "suptitle": ""})
    ['panel 1 has no title', 'panel 1: 1 labelled x tick(s), fewer than 2', 'a legend covers a plotting area (1 overlap(s))', 'smallest text 6 pt, below 8 pt']
    """
    out = []
    if not layout.get("panels"):
        out.append("no panel was measured")
    for i, p in enumerate(layout.get("panels") or [], 1):
        if not (p.get("title") or layout.get("suptitle")):
            out.append(f"panel {i} has no title")
        for ax in ("x", "y"):
            if p.get(f"{ax}ticks", 0) < 2:
                out.append(f"panel {i}: {p.get(f'{ax}ticks', 0)} labelled {ax} tick(s), "
                           "fewer than 2")
    if layout.get("legends_over_plot_area"):
        out.append(f"a legend covers a plotting area ({layout['legends_over_plot_area']} "
                   "overlap(s))")
    floor = MIN_PHONE_FONT_PT if phone else MIN_FONT_PT
    if layout.get("min_font_pt") is not None and layout["min_font_pt"] < floor - 1e-9:
        out.append(f"smallest text {layout['min_font_pt']:g} pt, below {floor:g} pt")
    return out


def _legend_columns(labels: list[str], width_in: float, fontsize: float) -> int:
    """As many legend columns as fit the width (one at least)."""
    longest = max((len(str(t)) for t in labels), default=1)
    per_col = (0.55 * fontsize * longest + 3.2 * fontsize) / 72.0  # text + handle, inches
    return max(1, min(len(labels), int(width_in / per_col)))


def _move_legends_outside(fig, width_in: float, fontsize: float) -> None:
    """Replace the legends of every axes by one figure legend below the plots.

    A legend outside every plotting area can never cover data; constrained layout leaves
    room for it. Entries with the same label are shown once.
    """
    handles, labels = [], []
    for leg in list(fig.legends):
        handles += list(getattr(leg, "_veil_handles", []))
        labels += list(getattr(leg, "_veil_labels", []))
        leg.remove()
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
        leg.remove()
    seen: dict[str, Any] = {}
    for h, lab in zip(handles, labels):
        seen.setdefault(lab, h)
    if not seen:
        return
    labs = list(seen)
    leg = fig.legend([seen[x] for x in labs], labs, loc="outside lower center",
                     ncols=_legend_columns(labs, width_in, fontsize), frameon=False,
                     fontsize=fontsize)
    leg._veil_handles, leg._veil_labels = [seen[x] for x in labs], labs


def _wrap(text: str, width_in: float, fontsize: float) -> str:
    import textwrap

    chars = max(12, int(width_in * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) for line in str(text).split("\n"))


def _relayout_for_phone(fig) -> None:
    """Stack the panels in one column, narrow the figure and enlarge small text."""
    from matplotlib.gridspec import GridSpec
    from matplotlib.text import Text

    panels = _panels(fig)
    specs = [ax.get_subplotspec() for ax in panels]
    rows = 1
    if specs and all(sp is not None for sp in specs):
        gridspecs = {id(sp.get_gridspec()) for sp in specs}
        g = specs[0].get_gridspec()
        rows = g.nrows
        if len(gridspecs) == 1 and g.ncols > 1:
            order = sorted(panels, key=lambda a: (a.get_subplotspec().rowspan.start,
                                                  a.get_subplotspec().colspan.start))
            gs = GridSpec(len(order), 1, figure=fig)
            for k, ax in enumerate(order):
                ax.set_subplotspec(gs[k])
            rows = len(order)
    square = any(ax.get_aspect() != "auto" for ax in panels)
    per_row = PHONE_WIDTH_IN * (0.95 if square else 0.7)
    fig.set_size_inches(PHONE_WIDTH_IN, per_row * rows + 0.9)
    title_pt = max(MIN_PHONE_FONT_PT, 10.0)
    for ax in panels:
        # every stacked panel is read on its own: show its tick labels even on shared axes
        ax.tick_params(axis="both", which="both", labelbottom=True, labelleft=True,
                       labelsize=max(MIN_PHONE_FONT_PT, _tick_size(ax)))
        if ax.get_title():
            ax.set_title(_wrap(ax.get_title(), PHONE_WIDTH_IN, title_pt), fontsize=title_pt)
        if ax.get_xlabel():
            ax.set_xlabel(_wrap(ax.get_xlabel(), PHONE_WIDTH_IN, MIN_PHONE_FONT_PT + 0.5))
        if ax.get_ylabel():
            ax.set_ylabel(_wrap(ax.get_ylabel(), per_row * 0.9, MIN_PHONE_FONT_PT + 0.5))
    for t in fig.findobj(Text):
        if t.get_text().strip() and t.get_fontsize() < MIN_PHONE_FONT_PT:
            t.set_fontsize(MIN_PHONE_FONT_PT)
    _move_legends_outside(fig, PHONE_WIDTH_IN, MIN_PHONE_FONT_PT)


def _tick_size(ax) -> float:
    labels = ax.xaxis.get_majorticklabels() or ax.yaxis.get_majorticklabels()
    return float(labels[0].get_fontsize()) if labels else MIN_PHONE_FONT_PT


def _png_px(png: bytes) -> dict[str, int]:
    import struct

    w, h = struct.unpack(">II", png[16:24])
    return {"width_px": int(w), "height_px": int(h)}


def _png(fig, dpi: float) -> bytes:
    """PNG bytes of the figure with a 256-colour palette (plots need no more; about a third
    of the size of matplotlib's RGBA output, so the report stays small with two renderings).
    Pillow is a dependency of matplotlib."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white")
    im = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    pal = im.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    pal.save(out, format="PNG", optimize=True)
    return out.getvalue()


def figure_from_matplotlib(fig, title: str, caption: str = "", data: Table | None = None,
                           dpi: int = 110, phone: bool = True) -> Figure:
    """Render a matplotlib figure for wide screens and for phones, then close it.

    Both renderings get the same treatment, so that a reader never has to guess: legends are
    moved below the plots (outside every plotting area: they never cover data), no text is
    smaller than :data:`MIN_FONT_PT`, and layout is constrained (nothing is clipped). The
    phone rendering stacks side-by-side panels in one column, is
    :data:`PHONE_WIDTH_IN` inches wide at :data:`PHONE_DPI` dpi and has text of at least
    :data:`MIN_PHONE_FONT_PT` points, so that it is readable when scaled to a 390 px screen
    (the HTML report picks it on narrow screens). What was measured on each rendering is
    kept in :attr:`Figure.layout` and checked by :func:`layout_problems` in the tests.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0, 1, 2], [1, 3, 2], label="a line")
    >>> _ = ax.set_title("A title")
    >>> _ = ax.legend()
    >>> f = figure_from_matplotlib(fig, "Example")
    >>> f.png[1:4] == b"PNG" and f.png_phone[1:4] == b"PNG"
    True
    >>> layout_problems(f.layout["wide"]), layout_problems(f.layout["phone"], phone=True)
    ([], [])
    """
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    try:
        fig.set_layout_engine("constrained")
        for t in fig.findobj(Text):
            if t.get_text().strip() and t.get_fontsize() < MIN_FONT_PT:
                t.set_fontsize(MIN_FONT_PT)
        for ax in _panels(fig):
            if _tick_size(ax) < MIN_FONT_PT:
                ax.tick_params(axis="both", which="both", labelsize=MIN_FONT_PT)
        _move_legends_outside(fig, float(fig.get_size_inches()[0]), 8.5)
        png = _png(fig, dpi)
        layout = {"wide": {**_layout_facts(fig, dpi), **_png_px(png)}}
        png_phone = None
        if phone:
            _relayout_for_phone(fig)
            png_phone = _png(fig, PHONE_DPI)
            layout["phone"] = {**_layout_facts(fig, PHONE_DPI), **_png_px(png_phone)}
    finally:
        plt.close(fig)
    return Figure(title=title, png=png, caption=caption, data=data, png_phone=png_phone,
                  layout=layout)
