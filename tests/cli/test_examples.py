"""The shipped example suites: they load, validate, exercise the caps, and span every band."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from judge.core.formats.evidence import TRUNCATION_MARKER, build_bundle
from judge.core.formats.models import AdvisoryScore
from judge.core.formats.rubric import Rubric
from judge.core.formats.suite import Case, Suite, validate_against_rubric
from judge.core.scoring.check_signals import deterministic_signals
from judge.core.scoring.scoring import band_for, score_case
from judge.system.resources import load_rubric, load_suite

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "examples" / "task-evaluation" / "suite.yaml"
RESEARCH = ROOT / "examples" / "research-agent" / "suite.yaml"
BANDS = ("failing", "weak", "acceptable", "strong", "excellent")


@pytest.fixture(scope="module")
def task() -> tuple[Suite, Rubric]:
    return load_suite(TASK), load_rubric("task-evaluation")


@pytest.fixture(scope="module")
def research() -> tuple[Suite, Rubric]:
    return load_suite(RESEARCH), load_rubric("research-agent")


def _advisory(scores: dict[str, int | None]) -> dict[str, AdvisoryScore]:
    return {cat: AdvisoryScore(score=value) for cat, value in scores.items() if value is not None}


def _llm(suite: Suite) -> list[Case]:
    return [c for c in suite.cases if c.judged_by == "llm"]


# --- loading ------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "rubric_id", "suite_id", "count"), [
    (TASK, "task-evaluation", "task-evaluation-example", 16),
    (RESEARCH, "research-agent", "research-agent-example", 16),
])
def test_example_loads_and_validates(path: Path, rubric_id: str, suite_id: str,
                                     count: int) -> None:
    suite = load_suite(path)
    assert suite.id == suite_id and suite.rubric == rubric_id
    validate_against_rubric(suite, load_rubric(rubric_id), str(path))
    assert len(suite.cases) == count
    for case in suite.cases:
        assert case.tags, case.id
        assert case.complexity in {"simple", "medium", "complex"}, case.id
        assert case.input, case.id


def test_example_stays_readable_size() -> None:
    assert len(TASK.read_text(encoding="utf-8").splitlines()) <= 1000


# --- task example: evidence -----------------------------------------------------------------

def test_task_example_shape(task: tuple[Suite, Rubric]) -> None:
    suite, rubric = task
    assert len(suite.cases) >= 12
    used = {group for case in suite.cases for group, items in case.evidence.items() if items}
    assert used == set(rubric.evidence.names())
    # most groups in most cases
    llm = _llm(suite)
    assert sum(len(c.evidence) >= 6 for c in llm) >= len(llm) * 3 // 4
    assert sum(c.human is not None for c in suite.cases) >= 5
    deterministic = [c for c in suite.cases if c.judged_by == "deterministic"]
    assert len(deterministic) >= 2
    for case in deterministic:
        assert case.checks and not case.evidence
        assert {"text", "confidence", "mode"} <= set(case.output)
        assert {ch.type for ch in case.checks} >= {"contains", "min_confidence", "expected_mode"}
    assert {ch.type for c in deterministic for ch in c.checks} == {
        "contains", "not_contains", "min_confidence", "expected_mode"}


def test_task_example_commits_are_well_formed(task: tuple[Suite, Rubric]) -> None:
    suite, _ = task
    shas = []
    for case in suite.cases:
        for commit in case.evidence.get("commits", []):
            sha = commit["sha"]
            assert isinstance(sha, str) and len(sha) == 40, (case.id, sha)
            int(sha, 16)
            shas.append(sha)
            assert {"subject", "author", "additions", "deletions", "files"} <= set(commit)
    assert len(shas) == len(set(shas))


def test_one_case_goes_over_each_cap(task: tuple[Suite, Rubric]) -> None:
    suite, rubric = task
    over: dict[str, list[tuple[str, int, int]]] = {}
    for case in suite.cases:
        for group in build_bundle(case.evidence, rubric.evidence).groups:
            if group.dropped:
                over.setdefault(group.name, []).append((case.id, group.total, group.dropped))
    assert over["commits"] == [("refactor-payment-service", 23, 3)]
    assert over["agentLogs"] == [("refactor-payment-service", 30, 5)]
    bundle = build_bundle(next(c for c in suite.cases
                               if c.id == "refactor-payment-service").evidence, rubric.evidence)
    groups = {g.name: g for g in bundle.groups}
    assert len(groups["commits"].items) == 20 and len(groups["agentLogs"].items) == 25
    assert groups["commits"].notice() == "3 more commits not shown"
    assert groups["agentLogs"].notice() == "5 more agentLogs not shown"


def test_a_long_log_is_truncated(task: tuple[Suite, Rubric]) -> None:
    suite, rubric = task
    long_logs = [(c, log) for c in suite.cases for log in c.evidence.get("agentLogs", [])
                 if len(log["text"]) > 2000]
    assert long_logs
    case, log = long_logs[0]
    bundle = build_bundle(case.evidence, rubric.evidence)
    item = next(i for i in bundle.items() if i.group == "agentLogs" and i.truncated)
    assert len(item.excerpt) == rubric.evidence.excerpt_limit
    assert item.excerpt.endswith(TRUNCATION_MARKER)
    assert log["text"].startswith(item.excerpt.removesuffix(TRUNCATION_MARKER))


# --- task example: scores -----------------------------------------------------------------

def test_deterministic_signals_alone_span_every_band(task: tuple[Suite, Rubric]) -> None:
    suite, rubric = task
    bands: Counter[str] = Counter()
    for case in _llm(suite):
        signals, _ = deterministic_signals(case, rubric)
        assert all(v is not None for v in signals.values()), case.id
        agreed = score_case(rubric, signals, _advisory(signals))
        alone = score_case(rubric, signals, None)
        assert agreed.status == alone.status == "scored"
        assert agreed.overall_score == alone.overall_score  # ai == deterministic changes nothing
        assert agreed.band is not None
        bands[agreed.band] += 1
    assert set(bands) == set(BANDS), bands
    assert min(bands.values()) >= 2, bands


def test_any_ai_score_keeps_cases_scored_and_moves_at_most_30(
        task: tuple[Suite, Rubric]) -> None:
    suite, rubric = task
    for case in _llm(suite):
        signals, _ = deterministic_signals(case, rubric)
        low = score_case(rubric, signals, _advisory({c: 0 for c in signals}))
        high = score_case(rubric, signals, _advisory({c: 100 for c in signals}))
        mid = score_case(rubric, signals, None)
        assert low.status == high.status == "scored"
        assert low.overall_score is not None and high.overall_score is not None
        assert mid.overall_score is not None
        assert low.overall_score <= mid.overall_score <= high.overall_score
        assert high.overall_score - low.overall_score <= 30
        assert all(c.rule == "blend" for c in low.category_scores)


def test_half_up_case_is_in_the_suite(task: tuple[Suite, Rubric]) -> None:
    suite, rubric = task
    case = next(c for c in suite.cases if c.id == "fix-n-plus-one-orders-api")
    # 72*.30 + 62*.45 + 68*.25 = 66.5 -> 67, never banker's 66
    assert score_case(rubric, case.deterministic, None).overall_score == 67


def test_deterministic_cases_score_without_a_judge(task: tuple[Suite, Rubric]) -> None:
    suite, rubric = task
    results = {}
    for case in suite.cases:
        if case.judged_by != "deterministic":
            continue
        signals, checks = deterministic_signals(case, rubric)
        assert len(checks) == len(case.checks)
        result = score_case(rubric, signals, None)
        assert result.status == "scored", result.reason
        assert all(c.rule == "deterministic_only" for c in result.category_scores)
        results[case.id] = result
    assert results["triage-incident-summary"].overall_score == 100
    partial = results["classify-ticket-priority"]
    assert partial.overall_score is not None and partial.overall_score < 100
    assert {c.category: c.final_score for c in partial.category_scores} == {
        "agentPerformance": 50, "taskOutcomeQuality": 50, "processCompliance": 100}


def test_evidence_agrees_with_the_band(task: tuple[Suite, Rubric]) -> None:
    suite, rubric = task
    for case in _llm(suite):
        band = score_case(rubric, case.deterministic, None).band
        ev = case.evidence
        failed_steps = [s for s in ev.get("workflow", []) if s["status"] == "failed"]
        changes = [r for r in ev.get("reviews", []) if r["state"] == "changes_requested"]
        reverted = [c for c in ev.get("commits", []) if c["subject"].startswith("Revert")]
        bad_audit = [a for a in ev.get("runAudit", []) if a["outcome"] != "ok"]
        reopened = [a for a in ev.get("taskActivity", []) if "reopened" in a.get("text", "")]
        trouble = failed_steps or changes or reverted or bad_audit or reopened
        if band == "failing":
            assert trouble, case.id
        if band == "excellent":
            assert not failed_steps and not changes and not reverted and not bad_audit, case.id
            assert all(r["state"] == "approved" for r in ev.get("reviews", [])), case.id


def test_human_labels_are_consistent(task: tuple[Suite, Rubric]) -> None:
    suite, rubric = task
    for case in suite.cases:
        if case.human is None:
            continue
        assert case.human.overall is not None and case.human.band is not None
        assert band_for(case.human.overall, rubric.bands) == case.human.band, case.id
        assert set(case.human.categories) == {c.id for c in rubric.categories}
        # people broadly agree with the deterministic signals of the same case
        signals = score_case(rubric, case.deterministic, None)
        assert signals.overall_score is not None
        assert abs(signals.overall_score - case.human.overall) <= 10, case.id


# --- research example ---------------------------------------------------------------------

def test_research_example_evidence(research: tuple[Suite, Rubric]) -> None:
    suite, rubric = research
    used: set[str] = set()
    for case in suite.cases:
        bundle = build_bundle(case.evidence, rubric.evidence)
        assert all(g.total for g in bundle.groups), case.id  # every group in every case
        assert not any(g.dropped for g in bundle.groups)
        used |= set(case.evidence)
        assert not case.deterministic  # the levels rubric blends no deterministic signal
    assert used == set(rubric.evidence.names())
    assert {c.complexity for c in suite.cases} == {"simple", "medium", "complex"}
