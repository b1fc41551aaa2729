"""The report and the review page share one stylesheet, inlined, that loads nothing; each
page's policy lets exactly its own style and scripts apply. Checked as text here; the pages
are drawn in Chromium by test_report_browser.py and tests/server/test_review_browser.py."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

from report_runs import END, hostile_runs

from judge.app.runs.reporting import ReportRequest, build_report
from judge.app.workspace.workspace import Workspace
from judge.report.html import render_report
from judge.report.page_assets import ASSETS, STYLESHEET, asset_text, csp_hash
from judge.report.review_page import review_csp, review_html

ASSET_DIR = Path(__file__).resolve().parents[2] / "judge" / "report" / ASSETS


def _styles(page: str) -> list[str]:
    return re.findall(r"<style>(.*?)</style>", page, flags=re.S)


def _policy(page: str) -> dict[str, str]:
    found = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert found is not None
    rules = (r.strip().split(" ", 1) for r in html_lib.unescape(found.group(1)).split(";"))
    return {name: value for name, value in rules}


def test_one_stylesheet_inlined_in_both_pages(tmp_path: Path) -> None:
    assert sorted(p.name for p in ASSET_DIR.glob("*.css")) == [STYLESHEET]
    sheet = asset_text(STYLESHEET)
    _, run = hostile_runs(tmp_path)
    report = render_report(build_report(Workspace.open(tmp_path, env={}), ReportRequest(run=run)))
    review = review_html(run)
    assert _styles(report) == _styles(review) == [sheet]
    # Nothing it could fetch: no import, no url(), so it asks nothing of any network.
    assert not re.search(r"@import|url\(|//", sheet.replace("/*", "").replace("*/", ""))


def test_each_page_lets_only_its_own_style_and_scripts_apply(tmp_path: Path) -> None:
    _, run = hostile_runs(tmp_path)
    report = _policy(render_report(build_report(Workspace.open(tmp_path, env={}),
                                                ReportRequest(run=run))))
    review = _policy(review_html(run))
    for rules in (report, review):
        assert rules["default-src"] == "'none'" and rules["object-src"] == "'none'"
        assert rules["base-uri"] == "'none'" and rules["form-action"] == "'none'"
        assert "unsafe" not in rules["script-src"]
    assert report["connect-src"] == "'none'" and review["connect-src"] == "'self'"
    # The review page has no plotly, which writes styles of its own: its style is by hash.
    assert review["style-src"] == csp_hash(asset_text(STYLESHEET))
    assert review["script-src"] == csp_hash(asset_text("review.js"))
    header = review_csp()
    assert header.startswith(review_csp(header=False)) and "frame-ancestors 'none'" in header


def test_category_headers_break_between_the_words_of_an_id(tmp_path: Path) -> None:
    """A long category id gets a line-break chance at each camelCase hump or underscore, and
    nowhere else; a hostile one is still escaped text."""
    _, run = hostile_runs(tmp_path)
    page = render_report(build_report(Workspace.open(tmp_path, env={}), ReportRequest(run=run)))
    heads = re.findall(r'<th data-type="number" class="num u words"[^>]*>(.*?)</th>', page)
    assert len(heads) == 3 and {"agent<wbr>Performance", "process<wbr>Compliance"} < set(heads)
    (evil,) = (h for h in heads if h.startswith("cat"))
    assert "<" not in evil.replace("<wbr>", "")  # no markup of its own
    assert evil.replace("<wbr>", "") == html_lib.escape(f"cat{END}", quote=False)
