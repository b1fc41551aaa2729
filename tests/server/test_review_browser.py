"""The review page in a real headless Chromium, served by the workspace's app on 127.0.0.1.

A reviewer labels cases by keys and by clicks; after a reload the page shows the same
labels, the store holds exactly those given, and the exported labels file (sorted JSON
lines beside the suite) holds them too; importing it back changes nothing. Writes go
through the server's write guard: without the token (or from another origin) they are
refused. Hostile case text, evidence and rationales stay text. At 1,280 px the page looks
like a tool: styled controls, nothing scrolling sideways, its stylesheet applied by hash
and nothing loaded from elsewhere; the screenshot is kept (``$JUDGE_KEEP_SCREENSHOTS``).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from conftest import EXAMPLE_SUITE, ROOT, judge_env, load_fake_server
from forked import spawn_judge
from report_runs import SCRIPT, hostile_runs

from judge.app.judges.reviewing import export_labels, import_labels, labels_path, review_page_data
from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.core.formats.labels import parse_labels
from judge.report.review_page import review_link
from judge.server.app import create_app
from judge.store.labels import LabelStore

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
    sideways_scrolls,
)

pytestmark = NEEDS_CHROMIUM

TOKEN = "review-test-token-0123456789"
READY = "document.documentElement.getAttribute('data-ready') === '1'"


class Served:
    """The workspace's app under uvicorn in a thread, on a free loopback port."""

    def __init__(self, root: Path) -> None:
        app = create_app(Workspace.open(root, env={}), token=TOKEN)
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0,
                                                    log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    root = tmp_path_factory.mktemp("review")
    shutil.copy(EXAMPLE_SUITE, root / "suite.yaml")
    fake = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        ws = Workspace.open(root, {"model": ["hosted_vllm/fake-judge"],
                                   "api_base": f"{fake.base_url}/v1"}, env={})
        report = run_suite(ws, RunRequest(suite=root / "suite.yaml", check=False))
        assert report.run.status == "complete"
    finally:
        fake.stop()
    hostile_runs(root)
    served = Served(root)
    try:
        yield root, report.run.id, served.base
    finally:
        served.stop()


browser = pytest.fixture(scope="module", name="browser")(browser_session)


def _key(page: Page, key: str) -> None:
    text = key if len(key) == 1 else ""
    page.send("Input.dispatchKeyEvent", type="keyDown", key=key, text=text)
    page.send("Input.dispatchKeyEvent", type="keyUp", key=key)


_saves = [0]


def _wait_saved(page: Page, expected: str) -> None:
    """Wait for the page's next save to be answered, and check what it said."""
    _saves[0] += 1
    page.wait_for(f"document.getElementById('review').getAttribute('data-saves') === "
                  f"'{_saves[0]}'")
    assert page.evaluate("document.getElementById('status').textContent") == expected


def _case_id(page: Page) -> str:
    value: str = page.evaluate("document.getElementById('case').getAttribute('data-case')")
    return value


def _chosen(page: Page) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('#case .category')].map(s =>"
        " [s.getAttribute('data-category'), {band: (s.querySelector('.choice.chosen') ||"
        " {}).textContent || null, verdict: (s.querySelector('.verdict.chosen') || {})"
        ".textContent || null, note: s.querySelector('.note').value}]))")
    return found


def test_label_by_keys_and_clicks_reload_store_and_file_agree(
        workspace: tuple[Path, str, str], browser: Browser) -> None:
    root, run_id, base = workspace
    page = browser.page
    url = f"{base}/review/{run_id}#token={TOKEN}"
    page.open(url, READY)
    assert page.errors() == [] and page.dialogs() == []
    page.evaluate("(() => { const n = document.getElementById('reviewer'); n.value = 'ana';"
                  " n.dispatchEvent(new Event('change')); })()")
    first = _case_id(page)
    # keys: band 4 (strong) on the first category, down, 2 (weak), d(isagree)
    _key(page, "4")
    _wait_saved(page, f"saved {first} / agentPerformance")
    _key(page, "ArrowDown")
    _key(page, "2")
    _wait_saved(page, f"saved {first} / taskOutcomeQuality")
    _key(page, "d")
    _wait_saved(page, f"saved {first} / taskOutcomeQuality")
    # next case by key, then clicks: a band button and "agree", and a note typed
    _key(page, "j")
    second = _case_id(page)
    assert second != first
    block = "#case .category[data-category='processCompliance']"
    page.click(f"{block} .choice[data-choice='excellent']")
    _wait_saved(page, f"saved {second} / processCompliance")
    page.click(f"{block} .verdict[data-verdict='agree']")
    _wait_saved(page, f"saved {second} / processCompliance")
    page.click(f"{block} .note")
    page.send("Input.insertText", text="CI log <b>not</b> shown")
    _key(page, "Escape")  # leaving the field saves the note
    _wait_saved(page, f"saved {second} / processCompliance")

    # reload: the page resumes at the second case and shows the labels from the store
    page.open(f"{base}/review/{run_id}", READY)
    assert _case_id(page) == second
    shown = _chosen(page)["processCompliance"]
    assert shown == {"band": "5 excellent", "verdict": "agree", "note": "CI log <b>not</b> shown"}
    _key(page, "k")
    assert _case_id(page) == first
    before = _chosen(page)
    assert before["agentPerformance"]["band"] == "4 strong"
    assert before["taskOutcomeQuality"] == {"band": "2 weak", "verdict": "disagree", "note": ""}
    assert page.errors() == [] and page.dialogs() == []

    expected = {
        (first, "agentPerformance"): (82, None, ""),
        (first, "taskOutcomeQuality"): (50, False, ""),
        (second, "processCompliance"): (95, True, "CI log <b>not</b> shown"),
    }
    ws = Workspace.open(root, env={})
    with ws.open_store() as store:
        stored = LabelStore(store).of_suite("task-evaluation-example")
    assert {(lb.case, lb.category): (lb.score, lb.agree, lb.note) for lb in stored} == expected
    assert {lb.reviewer for lb in stored} == {"ana"} and all(lb.run == run_id for lb in stored)
    path = export_labels(ws, run_id)
    assert path == labels_path(root / "suite.yaml") == root / "suite.labels.jsonl"
    text = path.read_text()
    from_file = parse_labels(text)
    assert {(lb.case, lb.category): (lb.score, lb.agree, lb.note) for lb in from_file} == expected
    seals, *lines = text.splitlines()  # the file's seals first, then one label a line
    assert set(json.loads(seals)) == {"digest"}
    assert [json.loads(line)["case"] for line in lines] == sorted(
        json.loads(line)["case"] for line in lines)
    assert import_labels(ws, run_id, path) == 0  # idempotent: nothing changes
    assert export_labels(ws, run_id).read_text() == text


def test_a_link_opens_its_case_in_a_tab_lent_the_token(
        workspace: tuple[Path, str, str], browser: Browser) -> None:
    """A link from the report or the terminal opens the page at its case and category; the
    new tab has no token and borrows it from the tab judge review's address opened."""
    root, run_id, base = workspace
    data = review_page_data(Workspace.open(root, env={}), run_id)
    cases, third = data["cases"], data["scale"]["bands"][2]
    target = cases[2]
    category = target["categories"][1]["category"]
    holder = browser.page
    holder.open("about:blank", "true")  # then a full load, not a same-page fragment move
    holder.open(f"{base}/review/{run_id}#token={TOKEN}", READY)
    assert _case_id(holder) != target["id"]
    port = int(base.rsplit(":", 1)[1])
    tab = browser.new_page()
    tab.open(review_link(run_id, target["id"], category, port=port), READY)
    assert _case_id(tab) == target["id"]
    assert tab.evaluate("document.querySelector('#case .category.focused')"
                        ".getAttribute('data-category')") == category
    assert tab.evaluate("location.hash") == ""  # the fragment is read, then dropped
    tab.evaluate("(() => { const n = document.getElementById('reviewer'); n.value = 'cy';"
                 " n.dispatchEvent(new Event('change')); })()")
    _key(tab, "3")  # a band on the focused category: saved with the lent token
    tab.wait_for("document.getElementById('review').getAttribute('data-saves') === '1'")
    assert tab.evaluate("document.getElementById('status').textContent") == \
        f"saved {target['id']} / {category}"
    assert tab.errors() == [] and holder.errors() == []
    with Workspace.open(root, env={}).open_store() as store:
        mine = [lb for lb in LabelStore(store).of_suite("task-evaluation-example")
                if lb.reviewer == "cy"]
    midpoint = int((third["min"] + third["max"]) / 2 + 0.5)  # as JS's Math.round
    assert [(lb.case, lb.category, lb.score) for lb in mine] == [(target["id"], category,
                                                                  midpoint)]
    # two reviewers of a category: the header sets the judge beside their own agreement
    people = review_page_data(Workspace.open(root, env={}), run_id)["people"]
    assert [p["category"] for p in people] == [category]
    fresh = browser.new_page()
    fresh.open(review_link(run_id, target["id"], category, port=port), READY)
    shown = fresh.evaluate("document.getElementById('alpha').textContent")
    assert f"{category}: judge τ with the others" in shown, shown
    assert fresh.errors() == []
    # in an open page, a changed fragment moves to its case too
    other = cases[3]
    holder.evaluate(f"location.hash = {json.dumps('case=' + other['id'])}")
    holder.wait_for(f"document.getElementById('case').getAttribute('data-case') === "
                    f"{json.dumps(other['id'])}")


def test_the_page_at_1280_px_looks_like_a_tool(workspace: tuple[Path, str, str],
                                              browser: Browser, tmp_path: Path) -> None:
    """Buttons, fields and menus drawn by the page's stylesheet, not the browser's defaults;
    a chosen band stands out; nothing scrolls sideways or wraps inside a word; the style
    applies by its hash and an injected one does not; every request stays on the origin.
    Nothing is saved (the module's other tests count the labels)."""
    _, run_id, base = workspace
    page = browser.page
    page.send("Emulation.setDeviceMetricsOverride", width=1280, height=900,
              deviceScaleFactor=1, mobile=False)
    page.open("about:blank", "true")
    page.open(f"{base}/review/{run_id}#token={TOKEN}", READY)
    assert page.errors() == [] and page.dialogs() == []
    counts = page.evaluate("({buttons: document.querySelectorAll('#case button').length,"
                           " fields: document.querySelectorAll('input, select, textarea')"
                           ".length})")
    assert counts == {"buttons": 3 * (5 + 2), "fields": 2 + 3 * 2}, counts
    assert browser_defaults(page, "button") == []
    assert browser_defaults(page, "input, select, textarea", FIELD_LOOK) == []
    # A chosen band is filled: the button the page marks chosen differs from its neighbours.
    fills = page.evaluate(
        "(() => { const [a, b] = document.querySelectorAll('#case .choice');"
        " a.classList.add('chosen'); const s = [a, b].map(e => getComputedStyle(e)"
        ".backgroundColor); a.classList.remove('chosen'); return s; })()")
    assert fills[0] != fills[1], fills
    assert mid_word_wraps(page, "button, h2, h3, label, .keys") == []
    assert sideways_scrolls(page) == []
    # Its one stylesheet applies by hash; a style put in by script is refused.
    page.evaluate("(() => { const s = document.createElement('style');"
                  " s.textContent = 'body { display: none }'; document.head.append(s); })()")
    page.pump(0.2)
    assert page.evaluate("getComputedStyle(document.body).display") == "block"
    assert any("Content Security Policy" in e for e in page.errors())
    assert {u.split("#")[0] for u in page.requests()} == {
        f"{base}/review/{run_id}", f"{base}/api/review/{run_id}"}
    page.evaluate("document.querySelectorAll('head style')[1].remove()")
    page.evaluate("document.querySelector('#case .choice').classList.add('chosen')")
    keep_screenshot(page.screenshot(1280, 900), tmp_path / "screenshots", "review-1280.png")
    page.send("Emulation.clearDeviceMetricsOverride")


def test_writes_need_the_token_and_refuse_other_origins(
        workspace: tuple[Path, str, str]) -> None:
    _, run_id, base = workspace
    body = json.dumps({"reviewer": "eve", "labels": [
        {"case": "x", "category": "agentPerformance", "score": 1}]}).encode()

    def post(headers: dict[str, str]) -> int:
        req = urllib.request.Request(f"{base}/api/review/{run_id}/labels", data=body,
                                     headers={"Content-Type": "application/json", **headers},
                                     method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            exc.close()
            return int(exc.code)

    assert post({}) == 401
    assert post({"Origin": "http://evil.example", "Authorization": "Bearer wrong"}) == 401
    bad = json.dumps({"reviewer": "eve", "labels": [
        {"case": "x", "category": "nope", "score": 1}]}).encode()
    req = urllib.request.Request(f"{base}/api/review/{run_id}/labels", data=bad, method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {TOKEN}"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=30)
    err.value.close()
    assert err.value.code == 422


def test_hostile_text_stays_text(workspace: tuple[Path, str, str], browser: Browser) -> None:
    _, _, base = workspace
    page = browser.page
    page.open(f"{base}/review/20260101T000000-aaaaaa#token={TOKEN}", READY)
    assert page.evaluate("window.__pwned === undefined")
    assert page.dialogs() == [] and page.errors() == []
    assert page.evaluate("document.querySelectorAll('#case script, #case img, #case style,"
                         " #case svg, #case [onerror], #case [onmouseover]').length") == 0
    text = page.evaluate("document.getElementById('case').textContent")
    assert SCRIPT in text  # shown, as text
    for _ in range(7):
        _key(page, "j")
    assert page.evaluate("window.__pwned === undefined") and page.dialogs() == []
    # no request left the origin
    assert all(u.startswith(base) for u in page.requests())


def test_judge_review_serves_the_page_with_a_fresh_token(
        workspace: tuple[Path, str, str]) -> None:
    root, run_id, _ = workspace
    # A server of its own, forked (``forked``): what is tested is what it serves.
    proc = spawn_judge(["review", run_id, "--port", "0"], root,
                       judge_env(PYTHONPATH=str(ROOT)), server=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("review page: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        page_url, token = url.split("#token=")
        base = page_url.split("/review/")[0]
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(page_url, timeout=10) as resp:
                    assert resp.status == 200
                    assert "script-src 'sha256-" in resp.headers["Content-Security-Policy"]
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "judge review did not serve the page"
                time.sleep(0.2)
        body = json.dumps({"reviewer": "bo", "labels": [
            {"case": "fix-login-redirect", "category": "agentPerformance", "score": 70}]})
        for headers, status in (({"Origin": base}, 401),
                                ({"Authorization": f"Bearer {token}", "Origin": base}, 200)):
            req = urllib.request.Request(f"{base}/api/review/{run_id}/labels",
                                         data=body.encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  **headers})
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    got = int(resp.status)
            except urllib.error.HTTPError as exc:
                exc.close()
                got = int(exc.code)
            assert got == status
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture(scope="module")
def sampled(workspace: tuple[Path, str, str]) -> str:
    """A run of the same suite judged 3 times per case by a judge whose samples differ."""
    root = workspace[0]
    fake = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        ws = Workspace.open(root, {"model": ["hosted_vllm/fake-judge~8"], "samples": 3,
                                   "api_base": f"{fake.base_url}/v1"}, env={})
        report = run_suite(ws, RunRequest(suite=root / "suite.yaml", check=False))
        assert report.run.status == "complete"
    finally:
        fake.stop()
    return report.run.id


def test_a_samples_run_shows_the_judges_aggregate_and_spread(
        workspace: tuple[Path, str, str], sampled: str, browser: Browser) -> None:
    """Each category shows the mean of the judge's 3 samples and their spread (max - min)."""
    root, _, base = workspace
    data = review_page_data(Workspace.open(root, env={}), sampled)
    case = next(c for c in data["cases"] if c["combined"] and c["spread"])
    page = browser.page
    page.open("about:blank", "true")
    page.open(f"{base}/review/{sampled}#token={TOKEN}&case={case['id']}", READY)
    assert _case_id(page) == case["id"] and page.errors() == []
    assert page.evaluate("document.querySelector('#case .combined').textContent") == \
        f"mean of 3 samples, spread {case['spread']}"
    shown = page.evaluate("[...document.querySelectorAll('#case .category .scores')]"
                          ".map(p => p.textContent)")
    assert shown == [f"AI {c['aiScore']}, spread {c['spread']} · deterministic "
                     f"{c['deterministicScore'] if c['deterministicScore'] is not None else '—'}"
                     f" · final {c['finalScore']}, spread {c['finalSpread']}"
                     for c in case["categories"]]
    assert all(c["aiScore"] is not None for c in case["categories"])


RESEARCH_SUITE = ROOT / "examples" / "research-agent" / "suite.yaml"


@pytest.fixture(scope="module")
def level_workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """The research-agent example (a rubric judged by level names) judged by the fake judge."""
    root = tmp_path_factory.mktemp("review-levels")
    shutil.copy(RESEARCH_SUITE, root / "suite.yaml")
    fake = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        ws = Workspace.open(root, {"model": ["hosted_vllm/fake-judge"],
                                   "api_base": f"{fake.base_url}/v1"}, env={})
        report = run_suite(ws, RunRequest(suite=root / "suite.yaml", check=False))
        assert report.run.status == "complete"
    finally:
        fake.stop()
    served = Served(root)
    try:
        yield root, report.run.id, served.base
    finally:
        served.stop()


def test_a_level_rubric_is_labelled_by_level_keys_and_clicks(
        level_workspace: tuple[Path, str, str], browser: Browser) -> None:
    root, run_id, base = level_workspace
    data = review_page_data(Workspace.open(root, env={}), run_id)
    assert data["scale"]["style"] == "levels"
    levels = [lv["name"] for lv in data["scale"]["levels"]]
    assert levels == ["excellent", "good", "acceptable", "poor", "failed"]
    categories = [c["id"] for c in data["scale"]["categories"]]
    page = browser.page
    page.open("about:blank", "true")
    page.open(f"{base}/review/{run_id}#token={TOKEN}", READY)
    assert page.errors() == [] and page.dialogs() == []
    page.evaluate("(() => { const n = document.getElementById('reviewer'); n.value = 'lev';"
                  " n.dispatchEvent(new Event('change')); })()")
    # a level rubric offers one button per level and no 0..100 score field
    assert page.evaluate("[...document.querySelectorAll('#case .category')[0]"
                         ".querySelectorAll('.choice')].map(b => b.getAttribute('data-choice'))"
                         ) == levels
    assert page.evaluate("document.querySelectorAll('#case input.score').length") == 0
    first = _case_id(page)
    saves = 0

    def saved(expected: str) -> None:
        nonlocal saves
        saves += 1
        page.wait_for(f"document.getElementById('review').getAttribute('data-saves') === "
                      f"'{saves}'")
        assert page.evaluate("document.getElementById('status').textContent") == expected

    _key(page, "1")  # excellent on the first dimension
    saved(f"saved {first} / {categories[0]}")
    _key(page, "ArrowDown")
    _key(page, "4")  # poor on the second
    saved(f"saved {first} / {categories[1]}")
    _key(page, "d")
    saved(f"saved {first} / {categories[1]}")
    _key(page, "j")
    second = _case_id(page)
    assert second != first
    block = f"#case .category[data-category='{categories[2]}']"
    page.click(f"{block} .choice[data-choice='good']")
    saved(f"saved {second} / {categories[2]}")
    _key(page, "6")  # no sixth level: nothing is sent
    page.pump(0.3)
    assert page.evaluate("document.getElementById('review').getAttribute('data-saves')") == \
        str(saves)

    page.open(f"{base}/review/{run_id}", READY)  # reload: resumes at the second case
    assert _case_id(page) == second
    assert _chosen(page)[categories[2]]["band"] == "2 good"
    _key(page, "k")
    shown = _chosen(page)
    assert shown[categories[0]]["band"] == "1 excellent"
    assert shown[categories[1]] == {"band": "4 poor", "verdict": "disagree", "note": ""}
    assert page.errors() == [] and page.dialogs() == []

    expected = {(first, categories[0]): ("excellent", None),
                (first, categories[1]): ("poor", False),
                (second, categories[2]): ("good", None)}
    ws = Workspace.open(root, env={})
    with ws.open_store() as store:
        stored = LabelStore(store).of_suite("research-agent-example")
    assert {(lb.case, lb.category): (lb.level, lb.agree) for lb in stored} == expected
    assert all(lb.score is None and lb.reviewer == "lev" for lb in stored)
    path = export_labels(ws, run_id)
    from_file = parse_labels(path.read_text())
    assert {(lb.case, lb.category): (lb.level, lb.agree) for lb in from_file} == expected
    assert all(lb.score is None for lb in from_file)
    assert import_labels(ws, run_id, path) == 0
