"""``judge suite collect``'s adapters, scrubber and signal rules, on artefacts made in the test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from collect_fixtures import make_repo, run_pytest_junit

from judge.collect.agent_log import parse_agent_log
from judge.collect.case import Collected, build_case
from judge.collect.gh import parse_gh_pr, parse_gh_run
from judge.collect.git import collect_git
from judge.collect.junit import collect_junit
from judge.collect.task import parse_task
from judge.core.formats.evidence import TRUNCATION_MARKER, build_bundle
from judge.core.formats.rubric import parse_rubric, rubric_hash
from judge.core.scoring.signal_rules import SignalRule, evaluate_signals
from judge.core.text.errors import RubricError, UsageError
from judge.core.text.secrets import MASK as REDACTED
from judge.core.text.secrets import mask_text
from judge.system.resources import load_rubric

RUBRIC = load_rubric("task-evaluation")


@pytest.fixture(scope="module")
def junit_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_pytest_junit(tmp_path_factory.mktemp("junit"))


# --- git ------------------------------------------------------------------------------------

def test_git_range_gives_commits_newest_first_with_sha_ids(tmp_path: Path) -> None:
    _, shas = make_repo(tmp_path)
    got = collect_git("repo@HEAD~2..HEAD", tmp_path)
    diffs = [c for c in got.evidence["commits"] if "sha" not in c]
    commits = [c for c in got.evidence["commits"] if "sha" in c]
    # The range's diff comes first, file by file (most changed first), then the commits.
    assert got.evidence["commits"][: len(diffs)] == diffs
    assert [d["id"] for d in diffs] == ["diff:docs.md", "diff:app.py"]
    assert [c["sha"] for c in commits] == shas[:2]
    newest, older = commits
    assert newest["subject"] == "docs: explain greeting" and newest["files"] == ["docs.md"]
    assert (newest["additions"], newest["deletions"]) == (3, 0)
    assert older["subject"] == "feat(app): greet twice" and older["additions"] == 1
    assert older["message"].startswith("Second line of greeting.")
    assert older["author"] == "Ada Agent" and older["at"] == "2026-01-02T10:00:00+00:00"
    assert "ada@example.com" not in json.dumps(got.evidence)  # no e-mail addresses
    # Before the range there is one commit, not a Conventional one: the project does not
    # keep the convention (repo.conventional), whatever the range's own subjects are.
    assert got.facts == {"commits.total": 2, "commits.conventional": 2,
                         "commits.additions": 4, "commits.deletions": 0, "commits.files": 2,
                         "repo.conventional": False}
    assert got.source == {"kind": "git", "repo": "repo", "range": "HEAD~2..HEAD", "commits": 2,
                          "diff": f"{shas[2][:12]}..HEAD"}
    bundle = build_bundle(got.evidence, RUBRIC.evidence)
    assert bundle.ids() == ("commits:diff:docs.md", "commits:diff:app.py",
                            *(f"commits:{s[:12]}" for s in shas[:2]))
    # The whole branch by default; the password in a commit body never reaches the case.
    whole = collect_git("repo", tmp_path)
    assert whole.facts["commits.total"] == 3 and whole.facts["commits.conventional"] == 2
    case = build_case("c", [whole], RUBRIC).case
    assert "hunter2" not in json.dumps(case.model_dump(mode="json"))
    assert case.metadata["collected"]["redactions"] == 1


def test_git_errors_name_the_flag(tmp_path: Path) -> None:
    make_repo(tmp_path)
    for spec, text in (("nowhere@HEAD", "no repository folder"),
                       ("repo@no-such-branch", "git cannot read"),
                       ("repo@--output=/tmp/x", "looks like an option")):
        with pytest.raises(UsageError, match=text) as info:
            collect_git(spec, tmp_path)
        assert info.value.where == "--git"


# --- JUnit ----------------------------------------------------------------------------------

def test_junit_from_a_real_pytest_run(junit_report: Path) -> None:
    got = collect_junit([junit_report], junit_report.parent)
    assert got.facts == {"tests.total": 4, "tests.run": 3, "tests.passed": 1,
                         "tests.failed": 1, "tests.errors": 1, "tests.skipped": 1,
                         "tests.failing": 2}
    summary, *failures = got.evidence["workflow"]
    assert summary["id"] == "junit:report.xml" and summary["status"] == "failed"
    assert summary["excerpt"] == "4 tests: 1 passed, 1 failed, 1 errors, 1 skipped"
    by_id = {f["id"]: f for f in failures}
    assert set(by_id) == {"test:test_sample::test_fails", "test:test_sample::test_errors"}
    failed = by_id["test:test_sample::test_fails"]
    assert failed["status"] == "failed"
    assert "login redirect lost the next parameter" in failed["excerpt"]
    assert "database unavailable" in by_id["test:test_sample::test_errors"]["excerpt"]
    # Through the case: cited by the test id, the key in the failure output scrubbed.
    case = build_case("t", [got], RUBRIC)
    ids = build_bundle(case.case.evidence, RUBRIC.evidence).ids()
    assert "workflow:test:test_sample::test_fails" in ids
    text = json.dumps(case.case.evidence)
    assert "sk-live0123456789abcdefXYZ" not in text and REDACTED in text
    assert case.case.deterministic["taskOutcomeQuality"] == 33  # 1 of 3 run tests passed
    assert case.signals["taskOutcomeQuality"].rule == "test-pass-rate"


def test_junit_that_is_not_xml_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "r.xml").write_text("<html>not a report")
    with pytest.raises(UsageError, match="not JUnit XML") as info:
        collect_junit([Path("r.xml")], tmp_path)
    assert info.value.file == str(tmp_path / "r.xml") and info.value.where == "--junit"


# --- gh -------------------------------------------------------------------------------------

PR: dict[str, Any] = {
    "number": 412, "title": "Keep next through login", "state": "MERGED",
    "mergedAt": "2026-01-03T15:02:11Z", "reviewDecision": "APPROVED",
    "url": "https://github.com/acme/shop/pull/412",
    "reviews": [
        {"id": "PRR_1", "author": {"login": "maria"}, "state": "CHANGES_REQUESTED",
         "body": "Please cover //evil.example", "submittedAt": "2026-01-03T10:00:00Z",
         "commit": {"oid": "64803fb9ec6bc338d02b962dcbdf8d3e88aea9e0"}},
        {"id": "PRR_2", "author": {"login": "bob"}, "state": "COMMENTED", "body": "nit",
         "submittedAt": "2026-01-03T11:00:00Z"},
        {"id": "PRR_3", "author": {"login": "maria"}, "state": "APPROVED", "body": "LGTM",
         "submittedAt": "2026-01-03T14:00:00Z"},
    ],
    "comments": [{"id": "IC_9", "author": {"login": "ci-bot"}, "body": "Coverage 91%",
                  "createdAt": "2026-01-03T12:00:00Z"}],
    "statusCheckRollup": [
        {"__typename": "CheckRun", "name": "unit", "workflowName": "CI", "status": "COMPLETED",
         "conclusion": "SUCCESS", "detailsUrl": "https://github.com/acme/shop/runs/1"},
        {"__typename": "CheckRun", "name": "e2e", "workflowName": "CI", "status": "COMPLETED",
         "conclusion": "FAILURE"},
        {"__typename": "StatusContext", "context": "deploy/preview", "state": "PENDING"},
    ],
}
RUN: dict[str, Any] = {
    "databaseId": 9001, "name": "CI", "displayTitle": "Keep next through login",
    "status": "completed", "conclusion": "failure", "event": "pull_request",
    "headBranch": "fix/login", "headSha": "64803fb9ec6bc338d02b962dcbdf8d3e88aea9e0",
    "jobs": [
        {"databaseId": 11, "name": "unit", "status": "completed", "conclusion": "success",
         "steps": [{"name": "pytest", "conclusion": "success", "number": 3}]},
        {"databaseId": 12, "name": "e2e", "status": "completed", "conclusion": "failure",
         "steps": [{"name": "checkout", "conclusion": "success", "number": 1},
                   {"name": "playwright", "conclusion": "failure", "number": 4}]},
    ],
}


def test_gh_pr_reviews_comments_and_checks() -> None:
    got = parse_gh_pr(PR)
    reviews = got.evidence["reviews"]
    assert [r["id"] for r in reviews] == ["review:PRR_1", "review:PRR_2", "review:PRR_3",
                                         "comment:IC_9"]
    assert reviews[0] == {"id": "review:PRR_1", "pr": "412", "state": "changes_requested",
                          "reviewer": "maria", "at": "2026-01-03T10:00:00Z",
                          "commit": "64803fb9ec6b", "body": "Please cover //evil.example"}
    checks = got.evidence["workflow"]
    assert [(c["id"], c["name"], c["status"]) for c in checks] == [
        ("check:CI/unit", "CI / unit", "success"), ("check:CI/e2e", "CI / e2e", "failure"),
        ("check:deploy/preview", "deploy/preview", "pending")]
    # maria's approval replaced her request for changes; bob only commented.
    assert got.facts == {"reviews.total": 3, "reviews.approved": 1,
                         "reviews.changes_requested": 0, "reviews.comments": 1,
                         "checks.total": 3, "checks.passed": 1, "checks.failed": 1,
                         "checks.pending": 1, "pr.state": "MERGED", "pr.merged": True,
                         "pr.review_decision": "APPROVED"}
    ids = build_bundle(got.evidence, RUBRIC.evidence).ids()
    assert "reviews:review:PRR_3" in ids and "workflow:check:deploy/preview" in ids
    # Fields gh was not asked for give no facts (no guessing "0 approvals").
    assert parse_gh_pr({"number": 1, "title": "x"}).facts == {}


def test_gh_run_jobs_and_failed_steps() -> None:
    got = parse_gh_run(RUN)
    run, unit, e2e = got.evidence["workflow"]
    assert run["id"] == "run:9001" and run["status"] == "failure"
    assert run["headSha"] == "64803fb9ec6b" and "sha" not in run
    assert (unit["id"], unit["status"]) == ("job:11", "success")
    assert e2e["excerpt"] == "failed steps: playwright"
    assert got.facts == {"run.conclusion": "failure", "run.success": False,
                         "jobs.total": 2, "jobs.passed": 1, "jobs.failed": 1}


# --- agent logs -----------------------------------------------------------------------------

CHAT = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the login redirect."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "run_tests", "arguments": "{\"path\": \"tests/\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "1 failed", "is_error": True},
    {"role": "assistant", "content": [{"type": "text", "text": "Fixed; curl -H "
                                       "'Authorization: Bearer eyAbCdEfGhIjKlMnOp' ok"}]},
]


def test_agent_log_chat_and_plain_records() -> None:
    text = "\n".join(json.dumps(m) for m in CHAT) + "\n\n" + json.dumps(
        {"ts": "2026-01-03T10:00:00Z", "level": "WARNING", "message": "retrying e2e"}) + "\n"
    steps, counts, first_user, last = parse_agent_log(text)
    assert [s["id"] for s in steps] == [f"step-{n}" for n in range(1, 7)]
    assert steps[2]["text"] == '→ run_tests({"path": "tests/"})' and steps[2]["tools"] == \
        ["run_tests"]
    assert steps[3]["level"] == "error" and steps[3]["toolCall"] == "call_1"
    assert steps[5] == {"id": "step-6", "step": 6, "line": 7, "level": "warning",
                        "text": "retrying e2e", "at": "2026-01-03T10:00:00Z"}
    assert counts == {"steps": 6, "ok_steps": 5, "errors": 1, "warnings": 1, "tool_calls": 1}
    assert first_user == "Fix the login redirect." and last is not None
    case = build_case("a", [Collected(source={"kind": "agent-log"},
                                      evidence={"agentLogs": steps}, output=last)], RUBRIC).case
    assert "eyAbCdEfGhIjKlMnOp" not in json.dumps(case.model_dump(mode="json"))
    assert case.output == f"Fixed; curl -H 'Authorization: Bearer {REDACTED}' ok"
    with pytest.raises(ValueError, match="line 2"):
        parse_agent_log('{"role": "user", "content": "x"}\n{"foo": 1}\n')


def test_caps_and_truncation_follow_the_profile() -> None:
    steps = [{"id": f"step-{n}", "step": n, "text": f"line {n}"} for n in range(1, 41)]
    steps[0]["text"] = "x" * 2000
    commits = [{"sha": f"{n:040x}", "subject": "s" * 400} for n in range(30)]
    built = build_case("caps", [Collected(source={"kind": "t"}, evidence={
        "agentLogs": steps, "commits": commits})], RUBRIC)
    kept = built.case.evidence["agentLogs"]
    # Head (the plan) and tail (the outcome) of a long log: 13 + 12 = the cap of 25.
    assert [s["step"] for s in kept] == [*range(1, 14), *range(29, 41)]
    limit = RUBRIC.evidence.excerpt_limit
    assert len(kept[0]["text"]) == limit and kept[0]["text"].endswith(TRUNCATION_MARKER)
    assert len(built.case.evidence["commits"]) == 20  # newest first: the first 20 kept
    assert len(built.case.evidence["commits"][0]["subject"]) == RUBRIC.evidence.subject_limit
    assert built.capped == {"commits": {"total": 30, "kept": 20},
                            "agentLogs": {"total": 40, "kept": 25}}
    assert built.case.metadata["collected"]["capped"] == built.capped


# --- scrubbing ------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "secret"), [
    ("Authorization: Bearer abc.def-ghi_jkl123", "abc.def-ghi_jkl123"),
    ("export OPENAI_API_KEY=sk-proj-0123456789abcdefghij", "0123456789abcdefghij"),
    ("key sk-ant-api03-ABCDEFGHIJKLMNOPQRST in the log", "ABCDEFGHIJKLMNOPQRST"),
    ("git clone https://bob:s3cr3t-pw@github.com/acme/shop", "s3cr3t-pw"),
    ("postgres://app:pa55word@db:5432/shop", "pa55word"),
    ('{"password": "hunter22"}', "hunter22"),
    ("token ghp_0123456789abcdefghijABCDEFGHIJ", "ghp_0123456789abcdefghij"),
    ("aws AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "MIIE"),
])
def test_scrubber_removes_credentials(text: str, secret: str) -> None:
    clean, count = mask_text(text)
    assert secret not in clean and REDACTED in clean and count >= 1


@pytest.mark.parametrize("text", ["max_tokens=1024", "used 27366 tokens", "tokens: 12",
                                  "see https://github.com/acme/shop/pull/412",
                                  "the password rules are in docs/auth.md"])
def test_scrubber_leaves_ordinary_text(text: str) -> None:
    assert mask_text(text) == (text, 0)


# --- signal rules ---------------------------------------------------------------------------

def test_first_applicable_rule_wins_and_is_recorded() -> None:
    rules = RUBRIC.signals
    facts: dict[str, Any] = {"tests.failing": 0, "tests.passed": 2, "tests.run": 3,
                             "commits.conventional": 1, "commits.total": 3,
                             "repo.conventional": True}
    out = evaluate_signals(rules, facts)
    # 2/3 of 100 = 66.67 -> 67; no review collected: the second process rule applies.
    assert out["taskOutcomeQuality"].value == 67
    process = out["processCompliance"]
    assert process.rule == "tests-conventional" and process.value == 73  # 60 + 40/3
    assert process.skipped == ("tests-review-conventional: no fact reviews.approved",)
    assert [t.earned for t in process.terms] == [60, 13.3333]
    with_review = evaluate_signals(rules, {**facts, "reviews.approved": 0})
    assert with_review["processCompliance"].rule == "tests-review-conventional"
    assert with_review["processCompliance"].value == 50  # 40 + 0 + 10
    assert evaluate_signals(rules, {"tests.passed": 0, "tests.run": 0})[
        "taskOutcomeQuality"].value is None  # no test ran: no share, no signal


def test_a_convention_the_project_does_not_keep_is_not_applicable() -> None:
    """A project without Conventional Commits loses no points for it."""
    rules = RUBRIC.signals
    facts: dict[str, Any] = {"tests.failing": 0, "commits.conventional": 0, "commits.total": 4,
                             "repo.conventional": False}
    process = evaluate_signals(rules, facts)["processCompliance"]
    # No failing test earns all 60 applicable points: 100, not 60.
    assert process.rule == "tests-conventional" and process.value == 100
    skipped_term = process.terms[1]
    assert (skipped_term.applicable, skipped_term.earned) == (False, 0)
    assert skipped_term.note == ("not applicable: repo.conventional is False "
                                 "(applies when eq True)")
    # The same commits in a project that keeps the convention do lose the points.
    kept = evaluate_signals(rules, {**facts, "repo.conventional": True})["processCompliance"]
    assert kept.value == 60
    # A rule whose every term is not applicable does not apply: only commits, no signal.
    only = evaluate_signals(rules, {"commits.conventional": 0, "commits.total": 4,
                                    "repo.conventional": False})["processCompliance"]
    assert only.value is None
    assert only.skipped[-1] == ("conventional-commits: not applicable: repo.conventional is "
                                "False (applies when eq True)")
    # One failing test, an approval, no convention: 30 of the 70 applicable points -> 43.
    mixed = evaluate_signals(rules, {**facts, "tests.failing": 1, "reviews.approved": 1})
    assert mixed["processCompliance"].value == 43
    # A rubric that wants the convention everywhere leaves `when` out: the old arithmetic.
    strict = parse_rubric(RUBRIC_TEXT.format(signals="""
signals:
  quality:
    - id: r1
      terms:
        - {fact: tests.failing, op: eq, value: 0, points: 60}
        - {fact: commits.conventional, over: commits.total, points: 40}
"""))
    assert evaluate_signals(strict.signals, facts)["quality"].value == 60


def test_signal_rules_are_validated_with_the_rubric() -> None:
    text = RUBRIC_TEXT.format(signals="""
signals:
  quality:
    - id: r1
      terms: [{fact: tests.pased, over: tests.run, points: 100}]
""")
    with pytest.raises(RubricError, match=r"did you mean 'tests\.passed'"):
        parse_rubric(text)
    bad = {
        "sum to 90": "quality: [{id: r, terms: [{fact: tests.passed, over: tests.run, "
                     "points: 90}]}]",
        "unknown category": "other: [{id: r, terms: [{fact: pr.merged, op: eq, value: true, "
                            "points: 100}]}]",
        "appears twice": "quality: [{id: r, terms: [{fact: pr.merged, op: eq, value: true, "
                         "points: 100}]}, {id: r, terms: [{fact: pr.merged, op: eq, "
                         "value: false, points: 100}]}]",
        "is a bool": "quality: [{id: r, terms: [{fact: pr.merged, op: ge, value: 1, "
                     "points: 100}]}]",
        "unknown key": "quality: [{id: r, tems: []}]",
    }
    for message, body in bad.items():
        with pytest.raises(RubricError, match=message):
            parse_rubric(RUBRIC_TEXT.format(signals="signals:\n  " + body))
    # The rules act at collect time: they leave the rubric's hash (baselines, replay) alone.
    plain = parse_rubric(RUBRIC_TEXT.format(signals=""))
    ruled = parse_rubric(RUBRIC_TEXT.format(signals="signals:\n  quality: [{id: r, terms: "
                                            "[{fact: tests.passed, over: tests.run, "
                                            "points: 100}]}]"))
    assert ruled.signals and rubric_hash(ruled) == rubric_hash(plain)
    assert isinstance(ruled.signals["quality"][0], SignalRule)


RUBRIC_TEXT = """
id: tiny
categories:
  - {{id: quality, weight: 1, definition: Does it work}}
{signals}
"""


# --- task files: the one safe loader ------------------------------------------------------

def test_task_file_goes_through_the_bounded_loader() -> None:
    got = parse_task("id: SHOP-1\ntitle: Fix it\ncreatedAt: 2025-03-03T16:00:00Z\n", "task.yaml")
    assert got.evidence["taskMetadata"][0]["createdAt"] == "2025-03-03T16:00:00Z"  # a string
    with pytest.raises(UsageError, match=r"duplicate key 'title' at line 3 \(first at line 2\)"):
        parse_task("id: SHOP-1\ntitle: a\ntitle: b\n", "task.yaml")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
        for i in range(6))
    with pytest.raises(UsageError, match="alias bomb"):
        parse_task(laughs, "task.yaml")
