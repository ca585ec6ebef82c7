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

__all__ = ["Figure", "Table", "Section", "DemoContext", "SECTION_MODULES", "figure_from_matplotlib"]

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
    """A picture (PNG bytes) with a caption and the numbers behind it."""

    title: str
    png: bytes
    caption: str = ""
    data: Table | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "png_base64": base64.b64encode(self.png).decode("ascii"),
                "caption": self.caption, "data": self.data.to_dict() if self.data else None}


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


def figure_from_matplotlib(fig, title: str, caption: str = "", data: Table | None = None,
                           dpi: int = 110) -> Figure:
    """Render a matplotlib figure to PNG bytes and close it."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return Figure(title=title, png=buf.getvalue(), caption=caption, data=data)
