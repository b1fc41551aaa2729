"""The review page shows a conversation case's turns, as the HTML report does.

The review API serves each case's transcript (:mod:`judge.report.transcripts`, the one
implementation the report uses too) and the page builds it with ``textContent`` only: a
turn whose text is a script stays text in a real headless Chromium.
"""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from conftest import ROOT, load_fake_server
from report_runs import END, IMG, SCRIPT
from test_review_browser import READY, TOKEN, Served

from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace

pytest.importorskip("websocket", reason="websocket-client (a dev dependency) is not installed")
from chromium_cdp import CHROMIUM, Browser

HOSTILE = f"{SCRIPT} {IMG} {END}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("review-conversation")
    target = root / "examples" / "conversation"
    shutil.copytree(ROOT / "examples" / "conversation", target)
    suite = yaml.safe_load((target / "suite.yaml").read_text())
    # the suite names its rubric by path (no rubrics/ folder here): the review service
    # finds it through the run's suite file (Workspace.run_rubric)
    assert not (root / "rubrics").exists()
    suite["cases"].append({"id": "hostile-turns", "input": "hostile", "conversation": [
        {"role": "user", "content": HOSTILE}, {"role": "assistant", "content": "ok " + END}]})
    (target / "suite.yaml").write_text(json.dumps(suite))
    fake = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        ws = Workspace.open(root, {"model": ["hosted_vllm/fake-judge"],
                                   "api_base": f"{fake.base_url}/v1"}, env={})
        report = run_suite(ws, RunRequest(suite=target / "suite.yaml", check=False))
        assert report.run.status == "complete"
    finally:
        fake.stop()
    server = Served(root)
    try:
        yield report.run.id, server.base
    finally:
        server.stop()


def _api(base: str, run_id: str) -> dict[str, Any]:
    req = urllib.request.Request(f"{base}/api/review/{run_id}",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            data: dict[str, Any] = json.load(resp)
    except urllib.error.HTTPError as exc:
        raise AssertionError(exc.read().decode()) from None
    return data


def test_the_review_api_serves_the_conversation_turns(served: tuple[str, str]) -> None:
    run_id, base = served
    cases = {c["id"]: c for c in _api(base, run_id)["cases"]}
    t = cases["refund-within-policy"]["transcript"]
    assert [(x["id"], x["role"]) for x in t["turns"]] == [
        ("turn:1", "system"), ("turn:2", "user"), ("turn:3", "assistant"), ("turn:4", "tool"),
        ("turn:5", "assistant"), ("turn:6", "tool"), ("turn:7", "user")]
    assert "A-1042 arrived broken" in t["turns"][1]["text"]
    cited = {i for cat in cases["refund-within-policy"]["categories"] for i in cat["evidence"]}
    assert [x["id"] for x in t["turns"] if x["cited"]] == sorted(
        (i for i in cited if i.startswith("turn:")), key=lambda i: int(i.split(":")[1]))
    assert cases["hostile-turns"]["transcript"]["turns"][0]["text"] == HOSTILE


@pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"{CHROMIUM} is absent: install Debian's "
                    "chromium (`apt-get install -y chromium`, as .ci/run does)")
def test_the_page_shows_the_turns_and_hostile_turns_stay_text(
        served: tuple[str, str]) -> None:
    run_id, base = served
    b = Browser()
    try:
        page = b.page
        page.open(f"{base}/review/{run_id}#token={TOKEN}", READY)
        for _ in range(5):  # to the hostile case, wherever the order puts it
            if page.evaluate("document.getElementById('case').getAttribute('data-case')") \
                    == "hostile-turns":
                break
            page.send("Input.dispatchKeyEvent", type="keyDown", key="j", text="j")
            page.send("Input.dispatchKeyEvent", type="keyUp", key="j")
            page.wait_for("true")
        assert page.evaluate(
            "document.getElementById('case').getAttribute('data-case')") == "hostile-turns"
        turns = page.evaluate("[...document.querySelectorAll('#case .turn')].map(d =>"
                              " [d.getAttribute('data-id'), d.querySelector('pre')"
                              ".textContent])")
        assert turns == [["turn:1", HOSTILE], ["turn:2", "ok " + END]]
        assert page.evaluate("window.__pwned === undefined")
        assert page.dialogs() == [] and page.errors() == []
        assert page.evaluate("document.querySelectorAll('#case script, #case img').length") == 0
        for _ in range(3):  # every case, the example's turns among them
            page.send("Input.dispatchKeyEvent", type="keyDown", key="k", text="k")
            page.send("Input.dispatchKeyEvent", type="keyUp", key="k")
        assert page.evaluate("window.__pwned === undefined") and page.dialogs() == []
    finally:
        b.close()
