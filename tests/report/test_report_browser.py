"""The report in a real headless Chromium (Debian's ``chromium``, driven over the DevTools
protocol): it loads with no console error and no network request, its charts are drawn, the
case table sorts and filters, hostile text stays text, and a screenshot is not blank. At
1,280 px it reads as a person checks it (headers, numbers, the cost line, no sideways
scroll); the screenshots are kept (``$JUDGE_KEEP_SCREENSHOTS``, see chromium_cdp)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml
from report_runs import (
    BIDI,
    END,
    EVIL_CATEGORY,
    LONG_ID,
    SCRIPT,
    STYLE,
    example_runs,
    hostile_runs,
    long_id_run,
)

from judge.app.runs.reporting import ReportRequest, build_report
from judge.app.workspace.workspace import Workspace
from judge.report.html import render_report, write_report

pytest.importorskip("websocket", reason="websocket-client (a dev dependency) is not installed")
from chromium_cdp import (
    FIELD_LOOK,
    NEEDS_CHROMIUM,
    Browser,
    Page,
    browser_defaults,
    browser_session,
    keep_screenshot,
    mid_word_wraps,
    png_pixels,
    region,
    sideways_scrolls,
    spilling,
)

pytestmark = NEEDS_CHROMIUM

READY = "document.documentElement.getAttribute('data-charts')"


browser = pytest.fixture(scope="module", name="browser")(browser_session)


def _write(root: Path, out: Path, request: ReportRequest) -> str:
    write_report(out, render_report(build_report(Workspace.open(root, env={}), request)))
    return out.resolve().as_uri()


@pytest.fixture(scope="module")
def swap_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The example's plain run against the +40 one, with the judge swap: written once (its
    agreement with people bootstraps intervals, seconds of CPU); the page's URL."""
    root, high, plain = example_runs()
    return _write(root, tmp_path_factory.mktemp("report") / "report.html",
                  ReportRequest(run=plain, against=high, compare=(high,)))


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


def test_report_of_a_run_a_diff_and_a_judge_swap(browser: Browser, swap_report: str) -> None:
    url = swap_report
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


def test_sample_viewer_at_1280_px(browser: Browser, swap_report: str, tmp_path: Path) -> None:
    """Each case's input, output and (on demand) prompt are on the page, the page
    fits a 1,280 x 900 window without a horizontal scroll, and a screenshot is kept."""
    url = swap_report
    page = browser.page
    page.send("Emulation.setDeviceMetricsOverride", width=1280, height=900,
              deviceScaleFactor=1, mobile=False)
    page.open(url, READY)
    _assert_quiet(page, url)
    first = page.evaluate(
        "(() => { const c = [...document.querySelectorAll('details.case')]"
        "   .find(d => d.querySelector('details.prompt .prompt-msg'));"
        " const p = c.querySelector('details.prompt');"
        " return {id: c.id, input: c.querySelector('.sample-input').innerText,"
        "  output: c.querySelector('.sample-output').innerText, open: p.open,"
        "  visible: c.querySelector('.prompt-msg pre').checkVisibility(),"
        "  roles: [...p.querySelectorAll('.prompt-msg .sample-label')].map(e => e.textContent)};"
        "})()")
    assert first["input"].strip() and first["output"].strip()
    assert first["open"] is False and first["visible"] is False  # it waits for a click
    assert first["roles"] == ["system", "user"]
    page.click(f"#{first['id']} details.prompt > summary")
    page.pump(0.2)
    opened = page.evaluate(
        f"(() => {{ const p = document.querySelector('#{first['id']} details.prompt');"
        f" const pre = p.querySelector('.prompt-msg:last-child pre');"
        f" return {{open: p.open, visible: pre.checkVisibility(), text: pre.innerText}}; }})()")
    assert opened["open"] is True and opened["visible"] is True
    assert first["output"].strip()[:60] in opened["text"]  # the output, as the judge saw it
    # Every case has its sample block; the page fits 1,280 px, prompt opened or not.
    counts = page.evaluate("({cases: document.querySelectorAll('details.case').length,"
                           " samples: document.querySelectorAll('details.case .sample')"
                           ".length})")
    assert counts["cases"] == counts["samples"] == 16
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    page.pump(0.3)
    widths = page.evaluate("({doc: document.documentElement.scrollWidth,"
                           " body: document.body.scrollWidth, inner: window.innerWidth})")
    assert widths["inner"] == 1280 and widths["doc"] <= 1280 and widths["body"] <= 1280, widths
    _assert_quiet(page, url)
    shot = page.screenshot(1280, 900)
    keep_screenshot(shot, tmp_path / "screenshots", "report-sample-viewer-1280.png")
    assert shot.startswith(b"\x89PNG\r\n\x1a\n") and len(shot) > 1000
    width, height, _ = png_pixels(shot)
    assert (width, height) == (1280, 900)
    # And the case with its prompt opened, where the page has it.
    top = page.evaluate(f"document.getElementById('{first['id']}').getBoundingClientRect().top"
                        f" + window.scrollY")
    data = page.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                     clip={"x": 0, "y": top, "width": 1280, "height": 900, "scale": 1})["data"]
    case_shot = base64.b64decode(data)
    keep_screenshot(case_shot, tmp_path / "screenshots", "report-sample-viewer-case-1280.png")
    assert png_pixels(case_shot)[:2] == (1280, 900)
    page.send("Emulation.clearDeviceMetricsOverride")


def test_hostile_long_samples_stay_text_and_fit(browser: Browser, tmp_path: Path) -> None:
    """A case whose input is markup and whose output is one 8,000-character word: shown as
    text, nothing runs, and the page still fits 1,280 px."""
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({
        "id": "hostile", "rubric": "task-evaluation",
        "cases": [{"id": "case-000", "input": f"{SCRIPT} {STYLE} {BIDI}",
                   "output": END + "x" * 8000}]}))
    _, b = hostile_runs(tmp_path, suite_path="suite.yaml")
    url = _write(tmp_path, tmp_path / "samples.html", ReportRequest(run=b))
    page = browser.page
    page.send("Emulation.setDeviceMetricsOverride", width=1280, height=900,
              deviceScaleFactor=1, mobile=False)
    page.open(url, READY)
    _assert_quiet(page, url)
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    page.pump(0.3)
    shown = page.evaluate("({input: document.querySelector('.sample-input').textContent,"
                          " output: document.querySelector('.sample-output').textContent,"
                          " width: document.documentElement.scrollWidth,"
                          " pwned: typeof window.__pwned, scripts: document.scripts.length})")
    assert SCRIPT in shown["input"] and shown["output"].startswith(END)
    assert shown["output"].endswith("… [truncated]")
    assert (shown["pwned"], shown["scripts"]) == ("undefined", 3)
    assert shown["width"] <= 1280, shown["width"]
    _assert_quiet(page, url)
    page.send("Emulation.clearDeviceMetricsOverride")


# Every cell whose text is a number (a score, a count, a share, a statistic with its
# interval, a signed move) or the dash of an unknown one.
_NUMERIC_CELLS = r"""[...document.querySelectorAll('td')].filter(td =>
  /^([+\-\u2212]?\d[\d.,]*%?( \[.*\])?|\u2014)$/.test(td.textContent.trim()))"""


def _at_1280(page: Page, url: str) -> None:
    page.send("Emulation.setDeviceMetricsOverride", width=1280, height=900,
              deviceScaleFactor=1, mobile=False)
    page.open(url, READY)
    _assert_quiet(page, url)


def test_the_report_at_1280_px_reads_as_a_person_checks_it(browser: Browser, swap_report: str,
                                                          tmp_path: Path) -> None:
    """No header wraps inside a word or spills out of its cell, numbers sit right, the cost
    line says what the CLI says, nothing scrolls sideways, nothing is loaded; kept as a
    screenshot of the whole page."""
    url = swap_report
    page = browser.page
    _at_1280(page, url)
    assert mid_word_wraps(page, "th") == []
    assert spilling(page, "th") == []
    # The long category ids did wrap, between their words: the check had something to check.
    lines = page.evaluate(
        "[...document.querySelectorAll('#cases-table th.words')].map(th => {"
        " const r = document.createRange(); r.selectNodeContents(th);"
        " return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; })")
    assert len(lines) == 3 and max(lines) > 1, lines
    numbers = page.evaluate(f"{_NUMERIC_CELLS}.map(td => [td.textContent.trim(),"
                            f" getComputedStyle(td).textAlign])")
    assert len(numbers) > 300 and {align for _, align in numbers} == {"right"}, \
        [n for n in numbers if n[1] != "right"][:5]
    assert page.evaluate("[...document.querySelectorAll('th.num')]"
                         ".every(th => getComputedStyle(th).textAlign === 'right')")
    # The fake judge has no price: its paid calls cost an unknown amount, as `judge show` says.
    assert page.evaluate("document.getElementById('run-cost').textContent") == "cost unknown"
    # The filter's field and menu are drawn by the pages' stylesheet.
    assert browser_defaults(page, "#cases input[type=search], #cases select", FIELD_LOOK) == []
    text = page.evaluate("document.body.innerText")
    assert "$0.0000" not in text and text.count("cost unknown") == 1 + 14  # run + each call
    assert sideways_scrolls(page) == []
    # A desktop browser's window of 1,280 px may spend 16 of them on a vertical scrollbar.
    page.send("Emulation.setDeviceMetricsOverride", width=1280 - 16, height=900,
              deviceScaleFactor=1, mobile=False)
    page.pump(0.3)
    assert sideways_scrolls(page) == [] and mid_word_wraps(page, "th") == []
    page.send("Emulation.setDeviceMetricsOverride", width=1280, height=900,
              deviceScaleFactor=1, mobile=False)
    page.pump(0.3)
    cases = region(page, "#cases")
    assert png_pixels(cases)[0] == 1280
    keep_screenshot(cases, tmp_path / "screenshots", "report-cases-1280.png")
    keep_screenshot(region(page, "#people"), tmp_path / "screenshots", "report-people-1280.png")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    page.pump(0.2)
    assert sideways_scrolls(page) == []
    _assert_quiet(page, url)
    page.send("Emulation.clearDeviceMetricsOverride")


def test_long_ids_are_cut_with_an_ellipsis_and_whole_in_their_title(
        browser: Browser, tmp_path: Path) -> None:
    run = long_id_run(tmp_path)
    url = _write(tmp_path, tmp_path / "long.html", ReportRequest(run=run))
    page = browser.page
    _at_1280(page, url)
    ids = page.evaluate(
        "[...document.querySelectorAll('#cases-table td.id .clip')].map(a => ({"
        " title: a.title, text: a.textContent, cut: a.scrollWidth > a.clientWidth,"
        " overflow: getComputedStyle(a).textOverflow, height: a.offsetHeight}))")
    assert [i["text"] for i in ids] == [f"{LONG_ID}{n}" for n in range(4)]
    assert all(i["cut"] and i["overflow"] == "ellipsis" and i["title"] == i["text"]
               for i in ids), ids
    assert sideways_scrolls(page) == [] and spilling(page, "th") == []
    assert mid_word_wraps(page, "th") == []
    _assert_quiet(page, url)
    keep_screenshot(region(page, "#cases"), tmp_path / "screenshots",
                    "report-long-ids-1280.png")
    page.send("Emulation.clearDeviceMetricsOverride")
