"""`judge report`: the data gathered from the store, the HTML it renders, its size, the door.

The browser checks (charts drawn, no request, hostile text inert) are in
test_report_browser.py; here the page is checked as text.
"""

from __future__ import annotations

import hashlib
import html as html_lib
import json
import re
import shutil
from functools import cache
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLE_SUITE, judge_env, load_fake_server, run_judge
from pydantic import ValidationError
from report_runs import (
    BIDI,
    END,
    EVIL_MODEL,
    HIGH,
    HOSTILE,
    PLAIN,
    SCRIPT,
    STYLE,
    example_runs,
    hostile_runs,
    large_runs,
)

from judge.app.runs.reporting import ReportRequest, build_report
from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.cache.disk import JudgmentCache
from judge.core.formats.evidence import TRUNCATION_MARKER, truncate
from judge.core.outcomes.usage import cost_text as cli_cost_text
from judge.core.scoring.check_signals import output_text
from judge.core.text.errors import StoreError, UsageError
from judge.render.prompts import input_text
from judge.report.data import ReportData, case_moves
from judge.report.html import ASSETS, PLOTLY_FILE, render_report, script_json, shown
from judge.report.samples import SAMPLE_LIMIT
from judge.store.runs import RunStore
from judge.system.resources import load_suite

ASSET_DIR = Path(__file__).resolve().parents[2] / "judge" / "report" / ASSETS
BUDGET = 5_000_000


def _ws(root: Path) -> Workspace:
    return Workspace.open(root, env={})


@cache
def _example_report(run: str, against: str | None = None) -> ReportData:
    """``build_report`` over :func:`report_runs.example_runs` (runs no test changes), once per
    request: the report's agreement with people bootstraps its intervals, seconds of CPU."""
    return build_report(_ws(example_runs()[0]), ReportRequest(run=run, against=against))


def test_report_against_a_run_marks_the_gates_regressions() -> None:
    root, high, plain = example_runs()
    data = build_report(_ws(root), ReportRequest(run=plain, against=high, compare=(high,)))
    assert data.run.id == plain and data.rubric.id == "task-evaluation"
    assert data.rubric.hash == data.rubric.current_hash == data.run.rubric_hash
    assert sum(b.count for b in data.bands) == len(data.cases) == 16
    assert [c.category for c in data.categories] == [
        "agentPerformance", "taskOutcomeQuality", "processCompliance"]
    against = data.against
    assert against is not None and against.kind == "run" and against.label == high
    assert against.differs["models"] == ([HIGH], [PLAIN])
    page = render_report(data)  # the judges by name, as the CLI lists them, not as JSON
    assert f'models: <span class="u">{HIGH}</span> → <span class="u">{PLAIN}</span>' in page
    # The plain judge scores 40 lower than the +40 one: finals drop by about 12 points, past
    # the 5-point threshold, on every case a model judged; the gate says the same. Neither
    # judge has a noise model, so the suite's mean decides and no case is listed alone:
    # the dropped cases are marked as the gate left them (not judged alone).
    regressed = {m.case_id for m in against.moves if m.mark == "regressed"}
    assert regressed == set(against.comparison.regressed_cases) == set()
    unlisted = {m.case_id for m in against.moves if m.mark == "noise"}
    assert unlisted == set(against.comparison.noise) and len(unlisted) >= 10
    assert against.comparison.has_regression
    assert against.comparison.test is not None and against.comparison.test.rule == "paired"
    for m in against.moves:
        if m.before is not None and m.after is not None:
            assert m.delta == m.after - m.before
            assert m.band_flip == (m.band_before != m.band_after)
    assert any(m.band_flip for m in against.moves)
    # The two deterministic fixtures did not move.
    assert sum(m.mark == "steady" and m.delta == 0 for m in against.moves) == 2
    agreement = data.agreement
    assert agreement is not None
    (pair,) = agreement.comparison.pairs
    assert (pair.judge_a, pair.judge_b) == (HIGH, PLAIN)  # the compared run first: old → new
    assert pair.ai_all.mean_diff is not None and pair.ai_all.mean_diff < -20
    (points,) = agreement.pairs
    assert len(points.points) == pair.aligned == 14
    assert {p.case_id for p in points.points if p.flip} == {f.case_id for f in pair.band_flips}
    # The example suite labels its 14 LLM-judged cases: each judge against the labels.
    assert agreement.comparison.human_labelled == 14 and len(agreement.human) == 2
    assert all(len(h.points) == 14 for h in agreement.human)


def test_report_against_the_baseline(tmp_path: Path) -> None:
    root, high, plain = example_runs()
    data = build_report(_ws(root), ReportRequest(run=plain, baseline=True))
    assert data.against is not None and data.against.kind == "baseline"
    assert data.against.label.startswith("task-evaluation-example@")
    assert data.against.comparison.has_regression
    assert data.agreement is None  # one judge, nothing compared
    # The baseline was recorded from the high run: the moves are those of --against high.
    by_run = _example_report(plain, against=high)
    assert by_run.against is not None
    assert [(m.case_id, m.before, m.after, m.mark) for m in data.against.moves] == [
        (m.case_id, m.before, m.after, m.mark) for m in by_run.against.moves]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "judge.toml").write_text(f'store_url = "sqlite:///{root}/.judge/judge.db"\n')
    with pytest.raises(UsageError, match="no baseline for suite"):
        build_report(_ws(empty), ReportRequest(run=plain, baseline=True))


def test_report_request_errors() -> None:
    root, high, plain = example_runs()
    with pytest.raises(ValidationError, match="not both"):
        ReportRequest(run=plain, against=high, baseline=True)
    with pytest.raises(StoreError):
        build_report(_ws(root), ReportRequest(run="no-such-run"))
    with pytest.raises(UsageError, match="itself"):
        build_report(_ws(root), ReportRequest(run=plain, against=plain))
    with pytest.raises(UsageError, match="given twice"):
        build_report(_ws(root), ReportRequest(run=plain, compare=(high, high)))


def test_case_moves_cover_both_sides() -> None:
    _, high, plain = example_runs()
    data = _example_report(plain, against=high)
    assert data.against is not None
    baseline_cases = {m.case_id for m in data.against.moves}
    assert baseline_cases == {r.id for r in data.cases}
    assert case_moves.__module__ == "judge.report.data"


def test_script_json_and_shown_escape() -> None:
    text = str(script_json({"a": END, "b": "x & y > z", "c": BIDI}))
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": END, "b": "x & y > z", "c": BIDI}
    out = str(shown(f"{END} {BIDI}"))
    assert "<script>" not in out and "&lt;/script&gt;" in out
    assert "\u202e" not in out and "U+202E" in out and "U+2066" in out


def test_hostile_text_is_escaped_in_the_page(tmp_path: Path) -> None:
    a, b = hostile_runs(tmp_path)
    html = render_report(build_report(_ws(tmp_path), ReportRequest(run=b, against=a,
                                                                   compare=(a,))))
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts == ['<script type="application/json" id="report-figures">', "<script>",
                       "<script>"]
    for hostile in HOSTILE:
        if "<" in hostile or '"' in hostile:
            assert hostile not in html, hostile  # as markup: never; escaped: as text
    assert "javascript:" in html and 'href="javascript' not in html
    assert "window.__pwned" in html  # present, as escaped text
    assert "\u202e" not in html and "\u2066" not in html
    page = re.sub(r"<script\b[^>]*>.*?</script>", "", html, flags=re.S)  # markup only
    assert re.search(r"<(img|iframe|object|embed|form|base|style)\b", page.split("</head>")[1]) \
        is None
    # every link is an anchor in the page, or a case's place on the local review page
    assert not re.search(r"href=\"(?!#|http://127\.0\.0\.1:8765/review/)", page)
    for link in re.findall(r'href="(http[^"]*)"', page):
        assert re.fullmatch(r"http://127\.0\.0\.1:8765/review/[\w-]+#case=[\w.~%-]+"
                            r"&amp;category=[\w.~%-]+", link), link
    assert EVIL_MODEL not in html
    # The page's own scripts are the only ones its policy lets run.
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy is not None
    rules = html_lib.unescape(policy.group(1))
    assert "default-src 'none'" in rules and "connect-src 'none'" in rules
    script_src = next(d for d in rules.split(";") if d.strip().startswith("script-src"))
    assert script_src.count("'sha256-") == 2 and "unsafe" not in script_src


def test_vendored_plotly_is_the_one_documented() -> None:
    data = (ASSET_DIR / PLOTLY_FILE).read_bytes()
    notes = (ASSET_DIR / "VENDORED.md").read_text()
    assert hashlib.sha256(data).hexdigest() in notes
    assert f"{len(data):,}" in notes
    assert b"</script" not in data.lower() and (ASSET_DIR / "LICENSE-plotly.js.txt").is_file()


def test_a_200_case_report_stays_under_5_mb(tmp_path: Path) -> None:
    a, b = large_runs(tmp_path, 200)
    data = build_report(_ws(tmp_path), ReportRequest(run=b, against=a, compare=(a,)))
    size = len(render_report(data).encode("utf-8"))
    assert len(data.cases) == 200
    assert size < BUDGET, f"{size:,} bytes"


def test_judge_report_command(tmp_path: Path) -> None:
    root, high, plain = example_runs()
    out = tmp_path / "r" / "report.html"
    proc = run_judge(["report", plain, "--against", high, "--compare", high, "-o", str(out),
                      "--json"], root, env=judge_env())
    assert proc.returncode == 0, proc.stderr
    reply = json.loads(proc.stdout)
    assert reply["path"] == str(out) and reply["bytes"] == out.stat().st_size
    assert reply["hasRegression"] is True and reply["judges"] == [HIGH, PLAIN]
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    bad = run_judge(["report", plain, "--against", high, "--baseline", "-o",
                     str(tmp_path / "no.html")], root, env=judge_env())
    assert bad.returncode == 2 and "not both" in bad.stderr
    assert not (tmp_path / "no.html").exists()


def test_each_case_shows_its_rationales_tokens_and_cost_without_a_click() -> None:
    """Rationales were hidden in collapsed rows."""
    _, _, plain = example_runs()
    data = _example_report(plain)
    html = render_report(data)
    opened = re.findall(r'<details class="case" id="[^"]+" open>', html)
    assert len(opened) == len(data.cases) == 16
    judged = [r for r in data.cases if r.judge is not None]
    rationale = next(cs.rationale for r in judged for cs in r.category_scores if cs.rationale)
    assert html_lib.escape(rationale, quote=False) in html or rationale in html
    first = judged[0].judge
    assert first is not None and first.prompt_tokens is not None
    assert f"{first.prompt_tokens}+{first.completion_tokens} tokens" in html


def test_the_cost_line_says_what_the_cli_says() -> None:
    """One wording of a cost on every door: the report's run line and each case's line are
    the CLI's (``no paid calls`` where a replay paid nothing, never ``$0.0000``)."""
    _, _, plain = example_runs()
    data = _example_report(plain)
    for calls, cost, words in ((0, 0.0, "no paid calls"), (0, None, "no paid calls"),
                               (14, None, "cost unknown"), (14, 0.0123, "$0.0123"),
                               (3, 0.0, "no paid calls"), (3, 0.00001, "under $0.0001")):
        totals = data.run.totals.model_copy(update={"calls": calls, "cost_usd": cost})
        page = render_report(data.model_copy(
            update={"run": data.run.model_copy(update={"totals": totals})}))
        assert f'<dd id="run-cost">{words}</dd>' in page
        assert cli_cost_text(cost, calls) == words
    # A judgment from the cache cost this run nothing; its first call's numbers are said so.
    first = data.cases[0]
    assert first.judge is not None and not first.judge.cached
    cached = first.model_copy(update={"judge": first.judge.model_copy(
        update={"cached": True, "cost_usd": None})})
    page = render_report(data.model_copy(update={"cases": (cached, *data.cases[1:])}))
    assert (f"from the cache: no paid calls · as first judged: {first.judge.prompt_tokens}+"
            f"{first.judge.completion_tokens} tokens, cost unknown") in page


def test_each_case_shows_its_input_output_and_the_prompt_sent(tmp_path: Path) -> None:
    """The report as a sample viewer. The prompt is read back from the run's cache
    entry; with the cache gone it is re-rendered, and the re-rendering is the same text."""
    root, _, plain = example_runs()
    data = _example_report(plain)
    suite = load_suite(root / "suite.yaml")
    assert set(data.samples) == {c.id for c in suite.cases}
    judged = [r for r in data.cases if r.judge is not None and r.judge.cache_key]
    assert judged
    html = render_report(data)
    for r in judged:
        sample = data.samples[r.id]
        case = next(c for c in suite.cases if c.id == r.id)
        assert sample.prompt_source == "cache" and [m.role for m in sample.prompt] == [
            "system", "user"]
        assert sample.input == truncate(input_text(case.input), SAMPLE_LIMIT)[0]
        assert sample.output == truncate(output_text(case.output), SAMPLE_LIMIT)[0]
        assert sample.input and sample.output
        # The case's output is quoted in the user message the judge saw.
        assert sample.output[:200] in sample.prompt[1].content
        assert str(shown(sample.output[:80])) in html
    # Collapsed on the page: a <details> without `open`, one per case.
    assert len(re.findall(r'<details class="prompt">', html)) == len(data.samples)

    # Without the cache the prompt is re-rendered from the suite: the same messages.
    copy = tmp_path / "ws"
    shutil.copytree(root, copy)
    shutil.rmtree(copy / _ws(copy).settings.cache_dir)
    again = build_report(_ws(copy), ReportRequest(run=plain))
    for r in judged:
        rendered = again.samples[r.id]
        assert rendered.prompt_source == "rendered" and "hashes match" in rendered.prompt_note
        assert rendered.prompt == data.samples[r.id].prompt
    # A run without its suite file: no samples, and the page says why.
    (tmp_path / "bare").mkdir()
    _, bare = hostile_runs(tmp_path / "bare")
    gone = build_report(_ws(tmp_path / "bare"), ReportRequest(run=bare))
    assert gone.samples == {}
    assert "inputs, outputs and prompts cannot be shown" in render_report(gone)


def test_case_samples_are_bounded_and_escaped(tmp_path: Path) -> None:
    """A hostile, long input and output: cut with the marker, escaped, never markup; the
    prompt of a run whose template is not the one here is not shown, and the page says why."""
    long_output = SCRIPT + "x" * (2 * SAMPLE_LIMIT)
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({
        "id": "hostile", "rubric": "task-evaluation",
        "cases": [{"id": "case-000", "input": f"{STYLE} {BIDI}", "output": long_output}]}))
    _, b = hostile_runs(tmp_path, suite_path="suite.yaml")
    data = build_report(_ws(tmp_path), ReportRequest(run=b))
    assert set(data.samples) == {"case-000"}  # the suite's one case of the run's eight
    sample = data.samples["case-000"]
    assert sample.output_cut and len(sample.output) == SAMPLE_LIMIT
    assert sample.output.endswith(TRUNCATION_MARKER) and sample.output_chars == len(long_output)
    assert not sample.input_cut and sample.input == f"{STYLE} {BIDI}"
    # The stored run says template hash "ttt...": not the template here, so no prompt.
    assert sample.prompt_source == "none" and sample.prompt == ()
    assert "template 'judge' changed since the run" in sample.prompt_note
    html = render_report(data)
    assert SCRIPT not in html and STYLE not in html and "\u202e" not in html
    assert html_lib.escape(SCRIPT, quote=False) in html
    assert f"first {SAMPLE_LIMIT} of {len(long_output)} characters" in html
    assert re.findall(r"<script\b[^>]*>", html) == [
        '<script type="application/json" id="report-figures">', "<script>", "<script>"]


def test_a_sample_aggregate_shows_the_prompt_its_samples_were_sent(tmp_path: Path) -> None:
    """`--samples 2`: the headline result is the mean of two judgments and has no cache
    entry of its own; its prompt is re-rendered (hash-checked) and equals what each sample
    was sent, as read from a sample's cache entry."""
    shutil.copy(EXAMPLE_SUITE, tmp_path / "suite.yaml")
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        ws = Workspace.open(tmp_path, {"model": [PLAIN], "samples": 2,
                                       "api_base": f"{server.base_url}/v1"}, env={})
        report = run_suite(ws, RunRequest(suite=tmp_path / "suite.yaml", check=False))
    finally:
        server.stop()
    data = build_report(_ws(tmp_path), ReportRequest(run=report.run.id))
    aggregates = [r for r in data.cases if r.judge is not None and r.judge.aggregate]
    assert aggregates
    with RunStore(_ws(tmp_path).settings.store_url, workspace=tmp_path) as store:
        members = [r for r in store.iter_results(report.run.id)
                   if r.id == aggregates[0].id and r.judge is not None and r.judge.cache_key]
    assert len(members) == 2
    entry = JudgmentCache(tmp_path / _ws(tmp_path).settings.cache_dir, "read-only").get(
        members[0].judge.cache_key if members[0].judge else "")
    assert entry is not None
    sample = data.samples[aggregates[0].id]
    assert sample.prompt_source == "rendered" and "mean of 2 judgments" in sample.prompt_note
    assert [m.model_dump() for m in sample.prompt] == entry.request["messages"]
