"""The demo report in a real browser (Debian chromium driven by playwright).

Generates the quick demo report, opens ``index.html`` from disk in headless
chromium and checks what a reader would notice: every section present with its
title and an "ok" status, every image decoded (naturalWidth > 0), no console
error, no page error, and no network request other than ``file://`` and
``data:`` URLs (the report must be self-contained). Screenshots of the whole
page at a laptop width (1280 px) and a phone width (390 px) are saved in the
test's tmp folder and copied to ``/tmp/veil-screens/`` for people to look at.

On a phone (issue 17): at both widths every figure fits the screen (no horizontal scrolling of
the page or inside a figure), the phone rendering is the one shown on the 390 px screen and the
wide one on the laptop, the smallest text of every figure is at least 9 CSS pixels as displayed,
and the layout facts measured when each rendering was drawn say every panel is titled, both axes
carry labelled ticks and no legend covers a plotting area. A page with the old rule (figures 640 px
wide in a scrolling box) fails the same checks.

Part of the default suite (and so of CI): ``pip install -e '.[test]'`` installs
playwright (the Python package bundles its driver); the browser is Debian's
chromium at ``/usr/bin/chromium``, installed by the README's test command
(``apt-get install -y chromium``); never ``playwright install``: the test uses the
system browser. Without chromium or playwright the tests FAIL with the reason (a skip
would hide a broken report in CI); ``VEIL_SKIP_BROWSER=1`` skips them on purpose.
About 20 s.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
MIN_TEXT_CSS_PX = 9.0
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENS = Path("/tmp/veil-screens")
WIDTHS = {"laptop": (1280, 800), "phone": (390, 844)}


def _requirements():
    """playwright and Debian's chromium, or a failure saying how to install them.

    A missing browser is a test failure, not a skip: the README's test command (and so CI)
    installs chromium, and a browser test that silently skips would let a broken report land.
    ``VEIL_SKIP_BROWSER=1`` skips on purpose, with the reason, for machines that cannot have a
    browser.
    """
    if os.environ.get("VEIL_SKIP_BROWSER") == "1":
        pytest.skip("VEIL_SKIP_BROWSER=1: the browser test of the report was skipped on request")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[test]' "
                    "(do not run 'playwright install'; the test uses /usr/bin/chromium)")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (the README's test "
                    "command does this as root), or set VEIL_SKIP_BROWSER=1 to skip on purpose")
    return sync_playwright


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The quick demo report (seeded: this is a test, not a release)."""
    sync_playwright = _requirements()
    from veil.report.core import SECTION_MODULES
    from veil.report.demo import run_demo

    out = tmp_path_factory.mktemp("report")
    index = run_demo(out, quick=True, seed=1, progress=False)
    expected = []
    for mod in SECTION_MODULES:
        sid = mod.rsplit(".", 1)[-1]
        data = json.loads((out / "sections" / f"{sid}.json").read_text())
        expected.append((data["id"], data["title"]))
    sections = {sid: json.loads((out / "sections" / f"{sid}.json").read_text())
                for sid, _ in expected}
    return sync_playwright, out, Path(index), expected, sections


@pytest.fixture(scope="module")
def browser(report):
    sync_playwright = report[0]
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


def _open(browser, index: Path, width: int, height: int):
    """Open the report and record console messages, page errors and requests."""
    page = browser.new_page(viewport={"width": width, "height": height})
    log = {"console": [], "pageerror": [], "requests": []}
    page.on("console", lambda m: log["console"].append((m.type, m.text)))
    page.on("pageerror", lambda e: log["pageerror"].append(str(e)))
    page.on("request", lambda r: log["requests"].append(r.url))
    page.goto(index.as_uri(), wait_until="load")
    page.wait_for_load_state("networkidle")
    return page, log


@pytest.mark.parametrize("device", sorted(WIDTHS))
def test_report_renders(browser, report, device, tmp_path):
    _, out, index, expected, sections = report
    width, height = WIDTHS[device]
    page, log = _open(browser, index, width, height)
    try:
        # every section, in order, with its title and an ok status
        ids = page.eval_on_selector_all("section.sec", "els => els.map(e => e.id)")
        assert ids == [sid for sid, _ in expected], f"sections on the page: {ids}"
        for sid, title in expected:
            h2 = page.locator(f"section#{sid} > h2")
            assert h2.count() == 1, f"section {sid} has no title"
            assert h2.is_visible()
            text = " ".join(h2.inner_text().split())
            assert title.replace("`", "").replace("*", "") in text.replace("`", ""), \
                f"section {sid}: title {title!r} not in heading {text!r}"
            assert page.locator(f"section#{sid} .status.failed").count() == 0, \
                f"section {sid} failed in the demo"
        # every image decoded
        imgs = page.eval_on_selector_all(
            "img", "els => els.map(e => [e.complete, e.naturalWidth, e.alt || e.src.slice(0, 40)])")
        assert imgs, "the report has no images"
        broken = [alt for complete, w, alt in imgs if not complete or w <= 0]
        assert not broken, f"images that did not render: {broken}"
        # no errors, no network
        errors = [t for kind, t in log["console"] if kind == "error"]
        assert not errors, f"console errors: {errors}"
        assert not log["pageerror"], f"page errors: {log['pageerror']}"
        remote = [u for u in log["requests"] if not u.startswith(("file://", "data:"))]
        assert not remote, f"network requests: {remote}"
        assert any(u.startswith("file://") for u in log["requests"]), "request log is empty"
        # nothing wider than the viewport (no horizontal scrolling of the page itself)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"page is {overflow} px wider than a {width} px screen"
        # every figure scaled to the screen, the right rendering, readable, titled, ticked
        problems = _figure_problems(page, sections, device)
        assert not problems, "\n".join(problems)
        # screenshots, for people
        shot = tmp_path / f"report-{device}-{width}px.png"
        page.screenshot(path=str(shot), full_page=True)
        top = tmp_path / f"report-{device}-{width}px-top.png"
        page.screenshot(path=str(top), full_page=False)
        assert shot.stat().st_size > 10_000
        SCREENS.mkdir(parents=True, exist_ok=True)
        for f in (shot, top):
            shutil.copy2(f, SCREENS / f.name)
    finally:
        page.close()


def test_request_recording_catches_remote_urls(browser, tmp_path):
    """Power check: the same recorder sees a page that asks for a remote resource."""
    html = tmp_path / "remote.html"
    html.write_text('<!doctype html><img src="http://127.0.0.1:9/x.png" alt="remote">')
    page, log = _open(browser, html, 400, 300)
    page.close()
    assert any(u.startswith("http://127.0.0.1:9") for u in log["requests"])


_FIGURES_JS = """els => els.map(f => {
  const img = f.querySelector('img');
  const cap = f.querySelector('figcaption');
  return {id: f.id, scroll: f.scrollWidth, client: f.clientWidth,
          shown: img ? img.getBoundingClientRect().width : 0,
          right: img ? img.getBoundingClientRect().right : 0,
          natural: img ? img.naturalWidth : 0, src: img ? img.currentSrc : '',
          alt: img ? img.alt : '', caption: cap ? cap.innerText : '',
          viewport: document.documentElement.clientWidth};
})"""


def _figure_problems(page, sections: dict, device: str) -> list[str]:
    """What a reader at this width would notice about the figures (empty when all is well)."""
    from veil.report.core import layout_problems

    figs = page.eval_on_selector_all("figure", _FIGURES_JS)
    by_id = {f["id"]: f for f in figs}
    out = []
    if not figs:
        return ["no figure on the page"]
    for sid, sec in sections.items():
        for i, meta in enumerate(sec.get("figures") or [], 1):
            f = by_id.get(f"{sid}-fig{i}")
            if f is None:
                out.append(f"{sid} figure {i} is not on the page")
                continue
            name = f"{sid} figure {i}"
            if f["scroll"] > f["client"] + 1:
                out.append(f"{name} scrolls sideways ({f['scroll']} px in {f['client']} px)")
            if f["shown"] > f["viewport"] + 1 or f["right"] > f["viewport"] + 1:
                out.append(f"{name} is wider than the screen ({f['shown']:.0f} px, ends at "
                           f"{f['right']:.0f} px of {f['viewport']})")
            key = "png_phone_base64" if device == "phone" else "png_base64"
            want = meta.get(key) or meta["png_base64"]
            if not f["src"].endswith(want[-200:]):
                out.append(f"{name}: the {device} screen shows the wrong rendering")
            # the facts of the rendering actually shown
            phone = bool(meta.get("png_phone_base64")) and \
                f["src"].endswith(meta["png_phone_base64"][-200:])
            layout = (meta.get("layout") or {}).get("phone" if phone else "wide")
            if not layout:
                out.append(f"{name}: no layout facts were recorded")
                continue
            for p in layout_problems(layout, phone=phone):
                out.append(f"{name} ({device} rendering): {p}")
            if f["natural"]:
                px = layout["min_font_pt"] * layout["dpi"] / 72 * f["shown"] / f["natural"]
                if px < MIN_TEXT_CSS_PX:
                    out.append(f"{name}: smallest text is {px:.1f} CSS px as shown, below "
                               f"{MIN_TEXT_CSS_PX:g}")
            title = meta.get("title") or ""
            if not title or f"Figure {i}. {title}" not in " ".join(f["caption"].split()) \
                    or f["alt"] != title:
                out.append(f"{name} has no title in its caption and alt text")
    return out


def test_figure_checks_catch_the_old_phone_layout(browser, report, tmp_path):
    """Power check: the report as it was (figures forced to 640 px in a scrolling box), and the
    wide rendering merely scaled down to a phone, fail the same checks on a 390 px screen."""
    _, out, index, expected, sections = report
    doc = index.read_text(encoding="utf-8")
    no_phone = doc.replace('<source media="(max-width: 600px)"',
                           '<source media="(max-width: 1px)"')
    old = no_phone.replace("</style>", "@media (max-width:600px){figure{overflow-x:auto}"
                           "figure img{max-width:none;width:640px}}</style>")
    found = {}
    for name, text in (("old", old), ("scaled", no_phone)):
        bad = tmp_path / f"{name}.html"
        bad.write_text(text, encoding="utf-8")
        page, _ = _open(browser, bad, *WIDTHS["phone"])
        try:
            found[name] = _figure_problems(page, sections, "phone")
        finally:
            page.close()
    assert any("scrolls sideways" in p for p in found["old"])
    assert any("wrong rendering" in p for p in found["old"])
    assert any("smallest text" in p for p in found["scaled"])
    assert not any("scrolls sideways" in p for p in found["scaled"])
