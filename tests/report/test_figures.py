"""Issue 17: figures readable on a phone. Every figure is rendered twice (wide, phone), legends
are moved out of the plotting areas, small text is enlarged, and the layout facts measured on
each rendering say whether every panel is titled and ticked (with power checks: figures that
break each rule are caught)."""

from __future__ import annotations

import base64
import struct

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.ticker import NullLocator  # noqa: E402

from veil.report.core import (MIN_PHONE_FONT_PT, PHONE_DPI, PHONE_WIDTH_IN, _layout_facts,  # noqa: E402
                              figure_from_matplotlib, layout_problems)


def _size(png: bytes) -> tuple[int, int]:
    return struct.unpack(">II", png[16:24])


def _crowded(legend_loc="upper right"):
    fig, ax = plt.subplots(figsize=(6, 4))
    x = np.linspace(0, 1, 50)
    for k in range(4):
        ax.plot(x, np.full_like(x, 0.9) - 0.05 * k, label=f"series {k}")  # data under the legend
    ax.set_title("Crowded")
    ax.legend(loc=legend_loc)
    return fig


def test_legend_inside_the_plot_is_detected_and_moved_out():
    raw = _crowded()
    before = _layout_facts(raw, 100)
    assert before["legends_over_plot_area"] >= 1          # power: the measure sees it
    assert any("legend covers" in p for p in layout_problems(before))
    f = figure_from_matplotlib(_crowded(), "Crowded")
    for k in ("wide", "phone"):
        assert f.layout[k]["legends"] == 1 and f.layout[k]["legends_over_plot_area"] == 0
        assert layout_problems(f.layout[k], phone=k == "phone") == []
    plt.close(raw)


def test_untitled_and_unticked_panels_are_reported():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.xaxis.set_major_locator(NullLocator())
    f = figure_from_matplotlib(fig, "No title")
    probs = layout_problems(f.layout["wide"])
    assert "panel 1 has no title" in probs
    assert any("labelled x tick" in p for p in probs)
    assert not any("labelled y tick" in p for p in probs)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    fig.suptitle("A figure title covers its panels")
    assert layout_problems(figure_from_matplotlib(fig, "t").layout["wide"]) == []


def test_phone_rendering_stacks_panels_and_enlarges_text():
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), sharey=True)
    for i, ax in enumerate(axes):
        ax.bar(["a", "b", "c"], [1, 2, 3])
        ax.set_title(f"panel {i}", fontsize=6)
        ax.tick_params(labelsize=5)
    f = figure_from_matplotlib(fig, "Three panels")
    ww, wh = _size(f.png)
    pw, ph = _size(f.png_phone)
    assert ww > 2 * wh and ph > 2 * pw                   # side by side -> stacked
    assert pw == pytest.approx(PHONE_WIDTH_IN * PHONE_DPI, rel=0.15)
    assert f.layout["phone"]["min_font_pt"] >= MIN_PHONE_FONT_PT
    assert f.layout["wide"]["min_font_pt"] >= 8
    # every stacked panel shows its own y tick labels (shared axes hid them side by side)
    assert all(p["yticks"] >= 2 for p in f.layout["phone"]["panels"])
    assert layout_problems(f.layout["phone"], phone=True) == []
    # power: the phone rule rejects the wide rendering's 8 pt text
    assert any("smallest text" in p for p in layout_problems({**f.layout["wide"],
                                                              "min_font_pt": 8.0}, phone=True))


def test_html_offers_the_phone_rendering_to_narrow_screens():
    from veil.report.html import _figure_html

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    ax.set_title("t")
    d = figure_from_matplotlib(fig, "A figure").to_dict()
    html = _figure_html(d, "s", 1)
    assert '<picture><source media="(max-width: 600px)"' in html
    assert f'srcset="data:image/png;base64,{d["png_phone_base64"]}"' in html
    assert f'src="data:image/png;base64,{d["png_base64"]}"' in html
    old = {k: v for k, v in d.items() if k != "png_phone_base64"}  # a section saved before
    assert "<picture>" not in _figure_html(old, "s", 1) and "<img " in _figure_html(old, "s", 1)
    broken = {**d, "png_phone_base64": base64.b64encode(b"not a png").decode()}
    assert "<picture>" not in _figure_html(broken, "s", 1)
