"""In a real headless Chromium: the HTML report and the review page of one
run holding a trace case and a conversation case show the trace as a collapsible span tree
(each span a node holding its children, in tree order; a click folds its subtree) and the
conversation as turns in order, with exactly the items the judge cited highlighted
(class ``cited``) and every span on the way to a cited one open."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import load_fake_server, run_judge
from report_runs import END, SCRIPT
from test_review_browser import READY as REVIEW_READY
from test_review_browser import TOKEN, Served
from test_review_transcripts import _api

from judge.app.runs.reporting import ReportRequest, build_report
from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.report.html import render_report, write_report

pytest.importorskip("websocket", reason="websocket-client (a dev dependency) is not installed")
from chromium_cdp import NEEDS_CHROMIUM, Browser, Page, browser_session

pytestmark = NEEDS_CHROMIUM

REPORT_READY = "document.documentElement.getAttribute('data-charts')"
T = "4bf92f3577b34da6a3ce929d0e0e4736"
# span -> (parent, attributes): an agent whose planner chain holds an LLM call and a tool
# call that itself calls a tool, then a final LLM call and a failed tool call.
TREE: dict[str, tuple[str | None, dict[str, str]]] = {
    "a1": (None, {"openinference.span.kind": "AGENT", "input.value": "Plan a day in Lyon.",
                  "output.value": "Morning: Vieux Lyon; lunch: a bouchon."}),
    "a2": ("a1", {"openinference.span.kind": "CHAIN", "output.value": "plan drafted"}),
    "a3": ("a2", {"openinference.span.kind": "LLM", "llm.model_name": "m",
                  "llm.input_messages.0.message.role": "user",
                  "llm.input_messages.0.message.content": "Plan a day in Lyon.",
                  "llm.output_messages.0.message.role": "assistant",
                  "llm.output_messages.0.message.content": f"Search first. {SCRIPT}"}),
    "a4": ("a2", {"openinference.span.kind": "TOOL", "tool.name": "search",
                  "input.value": "Lyon sights", "output.value": "Vieux Lyon, Fourviere"}),
    "a5": ("a4", {"openinference.span.kind": "TOOL", "tool.name": "fetch",
                  "input.value": "https://example.org/lyon", "output.value": END}),
    "a6": ("a1", {"openinference.span.kind": "LLM", "llm.model_name": "m",
                  "llm.output_messages.0.message.role": "assistant",
                  "llm.output_messages.0.message.content": "Morning: Vieux Lyon."}),
    "a7": ("a1", {"openinference.span.kind": "TOOL", "tool.name": "book"}),
}
ORDER = ["a2", "a3", "a4", "a5", "a6", "a7"]  # tree order, the root not an item
TURNS = [{"role": "user", "content": "Where is my parcel?"},
         {"role": "assistant", "content": "Let me check.",
          "tool_calls": [{"id": "c1", "name": "track", "arguments": {"parcel": "P-1"}}]},
         {"role": "tool", "tool_call_id": "c1", "name": "track", "content": SCRIPT},
         {"role": "assistant", "content": "It arrives tomorrow. " + END}]


def _sid(name: str) -> str:
    return f"{int(name[1:], 16):016x}"


def _trace_line() -> str:
    spans = []
    for n, (name, (parent, attrs)) in enumerate(TREE.items()):
        span: dict[str, Any] = {
            "traceId": T, "spanId": _sid(name), "name": name, "kind": 1,
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + n * 1_000_000),
            "endTimeUnixNano": str(1_700_000_000_000_000_000 + n * 1_000_000 + 500_000),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
            "status": {"code": 2, "message": "booking refused"} if name == "a7" else {}}
        if parent:
            span["parentSpanId"] = _sid(parent)
        spans.append(span)
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A workspace with one run over a collected trace case and a conversation case, its
    report written, the review app served; with what the judge cited in each case."""
    root = tmp_path_factory.mktemp("transcripts")
    (root / "trace.jsonl").write_text(_trace_line())
    proc = run_judge(["suite", "collect", "otel", "trace.jsonl", "-o", "suite.yaml", "--id",
                      "trip"], root)
    assert proc.returncode == 0, proc.stderr
    suite = yaml.safe_load((root / "suite.yaml").read_text(encoding="utf-8"))
    suite["cases"].append({"id": "parcel", "input": "A customer asks where a parcel is.",
                           "conversation": TURNS})
    (root / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    fake = load_fake_server().start_in_thread(latency_ms=0, seed=3)
    try:
        ws = Workspace.open(root, {"model": ["hosted_vllm/fake-judge"],
                                   "api_base": f"{fake.base_url}/v1"}, env={})
        report = run_suite(ws, RunRequest(suite=root / "suite.yaml", check=False))
    finally:
        fake.stop()
    assert report.run.status == "complete"
    out = root / "report.html"
    write_report(out, render_report(build_report(Workspace.open(root, env={}),
                                                 ReportRequest(run=report.run.id))))
    served = Served(root)
    try:
        cases = _api(served.base, report.run.id)["cases"]
        assert [c["status"] for c in cases] == ["scored", "scored"]
        cited = {c["id"]: {e for cat in c["categories"] for e in cat["evidence"]}
                 for c in cases}
        yield {"root": root, "run": report.run.id, "base": served.base, "cited": cited,
               "report": out.resolve().as_uri()}
    finally:
        served.stop()


browser = pytest.fixture(scope="module", name="browser")(browser_session)


def _tree(page: Page, scope: str) -> list[dict[str, Any]]:
    """Every span node under ``scope`` in document order: id, the span node holding it,
    level, open, cited, visible."""
    rows: list[dict[str, Any]] = page.evaluate(
        f"[...document.querySelectorAll({json.dumps(scope + ' .span-tree details.span')})]"
        ".map(d => { const up = d.parentElement.closest('details.span');"
        " return {id: d.getAttribute('data-id'), parent: up ? up.getAttribute('data-id') : null,"
        " level: d.getAttribute('data-level'), open: d.open,"
        " cited: d.classList.contains('cited'),"
        " shade: getComputedStyle(d.querySelector(':scope > summary')).backgroundColor,"
        " visible: d.querySelector(':scope > summary').checkVisibility()}; })")
    return rows


def _turns(page: Page, scope: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = page.evaluate(
        f"[...document.querySelectorAll({json.dumps(scope + ' .conversation .turn')})]"
        ".map(d => ({id: d.getAttribute('data-id'), cited: d.classList.contains('cited'),"
        " text: (d.querySelector('pre') || {}).textContent || ''}))")
    return rows


def _span_ids(case_evidence: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Span name -> the id the pages show (``group:span-…``)."""
    by_span = {i["spanId"]: f"{g}:{i['id']}" for g, items in case_evidence.items()
               for i in items if "spanId" in i}
    return {name: by_span[_sid(name)] for name in ORDER}


def _check_tree(page: Page, scope: str, judged: dict[str, Any]) -> dict[str, str]:
    suite = yaml.safe_load((judged["root"] / "suite.yaml").read_text(encoding="utf-8"))
    ids = _span_ids(suite["cases"][0]["evidence"])
    rows = _tree(page, scope)
    assert [r["id"] for r in rows] == [ids[n] for n in ORDER]  # every span, in tree order
    parents = {r["id"]: r["parent"] for r in rows}
    for name in ORDER:  # nested: each span inside its parent's node (the root is no item)
        parent = TREE[name][0]
        assert parents[ids[name]] == (ids[parent] if parent in ids else None), name
    assert [r["level"] for r in rows] == ["0", "1", "1", "2", "0", "0"]
    cited = judged["cited"]["trip"]
    assert {r["id"] for r in rows if r["cited"]} == {i for i in cited if i in parents}
    assert any(r["cited"] for r in rows), cited  # the test means something: a span is cited
    shades = {r["cited"]: {x["shade"] for x in rows if x["cited"] == r["cited"]} for r in rows}
    assert len(shades[True]) == 1 and not shades[True] & shades[False], shades  # only those
    holding = {p for r in rows if r["cited"] for p in _ancestors(r["id"], parents)}
    assert {r["id"] for r in rows if r["open"]} == {r["id"] for r in rows if r["cited"]} | holding
    return ids


def _ancestors(row: str, parents: dict[str, str | None]) -> list[str]:
    out, up = [], parents[row]
    while up is not None:
        out.append(up)
        up = parents[up]
    return out


def _fold(page: Page, scope: str, ids: dict[str, str]) -> None:
    """A real click on a span's summary folds its subtree; a second click unfolds it."""
    planner = f"{scope} details.span[data-id={json.dumps(ids['a2'])}]"
    page.evaluate(f"document.querySelector({json.dumps(planner)}).open = true;"
                  f"document.querySelector({json.dumps(planner)}).querySelectorAll"
                  f"('details.span').forEach(d => d.open = true)")
    page.pump(0.1)
    visible = {r["id"]: r["visible"] for r in _tree(page, scope)}
    assert all(visible[ids[n]] for n in ("a2", "a3", "a4", "a5"))
    page.click(f"{planner} > summary")
    page.pump(0.2)
    visible = {r["id"]: r["visible"] for r in _tree(page, scope)}
    assert visible[ids["a2"]] and visible[ids["a6"]]
    assert not any(visible[ids[n]] for n in ("a3", "a4", "a5"))  # the whole subtree folded
    page.click(f"{planner} > summary")
    page.pump(0.2)
    visible = {r["id"]: r["visible"] for r in _tree(page, scope)}
    assert all(visible[ids[n]] for n in ORDER)


def _check_turns(page: Page, scope: str, judged: dict[str, Any]) -> None:
    turns = _turns(page, scope)
    assert [t["id"] for t in turns] == ["turn:1", "turn:2", "turn:3", "turn:4"]
    assert turns[0]["text"] == TURNS[0]["content"] and turns[2]["text"] == SCRIPT
    assert "→ track(" in turns[1]["text"]
    cited = judged["cited"]["parcel"]
    assert {t["id"] for t in turns if t["cited"]} == {i for i in cited if i.startswith("turn:")}
    assert any(t["cited"] for t in turns), cited


def _quiet(page: Page) -> None:
    assert page.errors() == [] and page.dialogs() == []
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_the_report_shows_the_span_tree_and_the_turns(browser: Browser,
                                                      judged: dict[str, Any],
                                                      tmp_path: Path) -> None:
    page = browser.page
    page.send("Emulation.setDeviceMetricsOverride", width=1280, height=900,
              deviceScaleFactor=1, mobile=False)
    page.open(judged["report"], REPORT_READY)
    _quiet(page)
    assert page.requests() == [judged["report"]]
    trip = "details.case:has(.span-tree)"
    ids = _check_tree(page, trip, judged)
    _fold(page, trip, ids)
    _check_turns(page, "details.case:has(.conversation)", judged)
    assert page.evaluate(f"document.querySelector({json.dumps(trip)})"
                         ".querySelectorAll('script, img').length") == 0
    top = page.evaluate(f"document.querySelector({json.dumps(trip + ' .span-tree')})"
                        ".getBoundingClientRect().top + window.scrollY")
    page.evaluate(f"window.scrollTo(0, {top})")
    shot = page.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                     clip={"x": 0, "y": top, "width": 1280, "height": 900, "scale": 1})
    (tmp_path / "report-transcripts-1280.png").write_bytes(_png(shot))
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    _quiet(page)
    page.send("Emulation.clearDeviceMetricsOverride")


def test_the_review_page_shows_the_span_tree_and_the_turns(browser: Browser,
                                                           judged: dict[str, Any],
                                                           tmp_path: Path) -> None:
    page = browser.page
    page.send("Emulation.setDeviceMetricsOverride", width=1280, height=900,
              deviceScaleFactor=1, mobile=False)
    base, run = judged["base"], judged["run"]
    page.open(f"{base}/review/{run}#token={TOKEN}&case=trip", REVIEW_READY)
    page.wait_for("document.getElementById('case').getAttribute('data-case') === 'trip'")
    ids = _check_tree(page, "#case", judged)
    _fold(page, "#case", ids)
    shot = page.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                     clip={"x": 0, "y": 0, "width": 1280, "height": 900, "scale": 1})
    (tmp_path / "review-trace-1280.png").write_bytes(_png(shot))
    page.evaluate("window.location.hash = 'case=parcel'")
    page.wait_for("document.getElementById('case').getAttribute('data-case') === 'parcel'")
    _check_turns(page, "#case", judged)
    assert page.evaluate("document.querySelectorAll('#case script, #case img').length") == 0
    _quiet(page)
    page.send("Emulation.clearDeviceMetricsOverride")


def _png(shot: dict[str, Any]) -> bytes:
    data = base64.b64decode(shot["data"])
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
    return data
