"""The report in a real headless Chromium (Debian's ``chromium``, driven over the DevTools
protocol): it loads with no console error and no network request, its charts are drawn, the
case table sorts and filters, hostile text stays text, and a screenshot is not blank."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from report_runs import BIDI, END, EVIL_CATEGORY, SCRIPT, STYLE, example_runs, hostile_runs

from judge.app.reporting import ReportRequest, build_report
from judge.app.workspace import Workspace
from judge.report.html import render_report, write_report

pytest.importorskip("websocket", reason="websocket-client (a dev dependency) is not installed")
from chromium_cdp import CHROMIUM, Browser, Page, png_pixels

pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"{CHROMIUM} is absent: install Debian's chromium (`apt-get install -y chromium`, "
           f"as .ci/run does) to open the reports in a browser")

READY = "document.documentElement.getAttribute('data-charts')"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser()
    try:
        yield b
    finally:
        b.close()


def _write(root: Path, out: Path, request: ReportRequest) -> str:
    write_report(out, render_report(build_report(Workspace.open(root, env={}), request)))
    return out.resolve().as_uri()


def _assert_quiet(page: Page, url: str) -> None:
    assert page.errors() == []
    assert page.requests() == [url]  # the page itself, nothing else
    assert page.dialogs() == []


def _drawn(page: Page) -> dict[str, int]:
    counts: dict[str, int] = page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('.chart')].map(c => [c.id,"
        " c.querySelectorAll('svg.main-svg path, svg.main-svg rect').length]))")
    return counts


def _column(page: Page, index: int) -> list[str]:
    values: list[str] = page.evaluate(
        f"[...document.querySelectorAll('#cases-table tbody tr')].filter(r => !r.hidden)"
        f".map(r => r.cells[{index}].getAttribute('data-sort'))")
    return values


def test_report_of_a_run_a_diff_and_a_judge_swap(browser: Browser, tmp_path: Path) -> None:
    root, high, plain = example_runs()
    url = _write(root, tmp_path / "report.html",
                 ReportRequest(run=plain, against=high, compare=(high,)))
    page = browser.page
    page.open(url, READY)
    _assert_quiet(page, url)
    drawn = _drawn(page)
    assert set(drawn) == {"chart-bands", "chart-categories", "chart-moves", "chart-agree-0",
                          "chart-human-0", "chart-human-1", "chart-people"}
    assert all(n >= 10 for n in drawn.values()), drawn
    assert page.evaluate(READY) == "7"
    # The dumbbell chart has a marker per case on each side.
    assert page.evaluate("document.querySelectorAll('#chart-moves .point').length") == 32

    # Sort by the overall score: a real click on the header, then again for descending.
    header = "#cases-table thead th:nth-child(3)"
    page.click(header)
    up = [int(v) for v in _column(page, 2)]
    assert up == sorted(up) and len(up) == 16 and up[0] < up[-1]
    assert page.evaluate(f"document.querySelector('{header}').getAttribute('aria-sort')") \
        == "ascending"
    page.click(header)
    assert [int(v) for v in _column(page, 2)] == sorted(up, reverse=True)
    page.click("#cases-table thead th:nth-child(1)")
    ids = _column(page, 0)
    assert ids == sorted(ids)

    # Filter: by text, by band, and to the flagged cases.
    page.evaluate("(() => { const f = document.querySelector('#case-filter');"
                  " f.value = 'fix-'; f.dispatchEvent(new Event('input')); })()")
    shown = _column(page, 0)
    assert shown and all("fix-" in i for i in shown) and len(shown) < 16
    assert page.evaluate("document.querySelector('#case-count').textContent") == str(len(shown))
    page.evaluate("(() => { const f = document.querySelector('#case-filter'); f.value = '';"
                  " f.dispatchEvent(new Event('input'));"
                  " document.querySelector('#flagged-filter').click(); })()")
    flagged = _column(page, 0)
    assert 0 < len(flagged) < 16

    # A citation leads to the evidence item it cites, opening the case.
    target = page.evaluate("document.querySelector('.cites a').getAttribute('href')")
    page.evaluate("document.querySelector('.cites a').closest('details').open = false")
    page.evaluate(f"window.location.hash = {json.dumps(target)}")
    page.pump(0.2)
    assert page.evaluate(f"document.getElementById({json.dumps(target[1:])})"
                         f".closest('details').open") is True

    _assert_quiet(page, url)
    width, height, rows = png_pixels(page.screenshot(1280, 1800, scale=0.25))
    assert (width, height) == (320, 450)
    pixels = [row[i:i + 3] for row in rows for i in range(0, len(row), 4)]
    colours = {bytes(p) for p in pixels}
    commonest = max(pixels.count(c) for c in list(colours)[:200])
    assert len(colours) > 50, len(colours)
    assert commonest < 0.9 * len(pixels)


def test_hostile_text_stays_text(browser: Browser, tmp_path: Path) -> None:
    a, b = hostile_runs(tmp_path)
    url = _write(tmp_path, tmp_path / "hostile.html",
                 ReportRequest(run=b, against=a, compare=(a,)))
    page = browser.page
    page.open(url, READY)
    _assert_quiet(page, url)
    # The charts drew although judge and category names hold `</script>`.
    assert all(n >= 5 for n in _drawn(page).values())
    # Hover every point of every chart: hover labels draw the hostile names too.
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    for sel in ("#cases-table tbody tr td a", ".cites a", "summary"):
        page.click(sel)
    page.pump(0.3)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.dialogs() == []
    counts = page.evaluate(
        "({scripts: document.scripts.length,"
        " injected: document.querySelectorAll('img, iframe, object, embed, form, base,"
        " body style, [onerror], [onmouseover], [onclick]').length,"
        " badLinks: [...document.querySelectorAll('a[href]')]"
        "   .filter(a => !a.getAttribute('href').startsWith('#')).length,"
        " pwnedStyle: [...document.querySelectorAll('style')]"
        "   .some(s => s.textContent.includes('PWNED')),"
        " display: getComputedStyle(document.body).display})")
    assert counts == {"scripts": 3, "injected": 0, "badLinks": 0, "pwnedStyle": False,
                      "display": "block"}
    text: str = page.evaluate("document.body.innerText")
    for hostile in (SCRIPT, STYLE, END):
        assert hostile in text  # shown as the characters it holds
    assert "\u202e" not in text and "U+202E" in text and "U+2066" in text
    assert BIDI.replace("\u202e", "U+202E").split(" ")[0] in text
    svg_text: str = page.evaluate(
        "[...document.querySelectorAll('svg text')].map(t => t.textContent).join(' ')")
    assert EVIL_CATEGORY in svg_text  # a category name drawn by plotly, as text
    # The page's policy blocks any inline script but its own two.
    page.evaluate("(() => { const s = document.createElement('script');"
                  " s.textContent = 'window.__cspProbe = 1'; document.body.append(s); })()")
    page.pump(0.2)
    assert page.evaluate("typeof window.__cspProbe") == "undefined"
    assert any("Content Security Policy" in e for e in page.errors())
