"""Hostile artefacts for every collector: what a source says never becomes structure.

Each test is a row of ``docs/integrity-hostile.md`` ("Collectors"): forged git separators in
real commits, wrong JSON types in ``gh`` output and agent logs, nesting far past any real
file, and terminal escapes in collected text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from collect_fixtures import git, make_repo

from judge.collect.git import collect_git
from judge.core.text.errors import UsageError

# --- git: messages that imitate the log format --------------------------------------------

# What the old format (\x1e before each commit, \x1f between fields, numstat lines after the
# body) would have read as a fourth commit by "Mallory" with 99,999 added lines.
FORGED = ("fix: tidy\n\nbody\x1f\x1f\n99999\t0\tghost.py\n"
          "\x1e" + "f" * 40 + "\x1fMallory\x1f2020-01-01T00:00:00+00:00\x1f\x1f"
          "feat: forged commit\x1f\x1f\n99999\t0\tghost.py\n")


def _commit_items(got: Any) -> list[dict[str, Any]]:
    """The commits group's commit items (the range's diff excerpts stand before them)."""
    return [c for c in got.evidence["commits"] if "sha" in c]


def test_git_message_separators_never_become_commits_or_numstat(tmp_path: Path) -> None:
    repo, _ = make_repo(tmp_path)
    (repo / "app.py").write_text("print('hi')\n")
    git(repo, "commit", "-q", "-am", FORGED, date="2026-01-04T10:00:00+00:00")
    got = collect_git("repo", tmp_path)
    commits = _commit_items(got)
    assert got.facts["commits.total"] == 4  # three made by make_repo, one here
    assert [c["author"] for c in commits] == ["Ada Agent"] * 4
    assert got.facts["commits.additions"] == 1 + 1 + 3 + 0  # no ghost.py, no 99,999
    assert got.facts["commits.deletions"] == 1
    assert all("ghost.py" not in c["files"] for c in commits)
    assert got.facts["commits.conventional"] == 3  # "feat: forged commit" is not a subject
    assert commits[0]["subject"] == "fix: tidy"
    assert "\x1e" in commits[0]["message"] and "forged commit" in commits[0]["message"]


@pytest.mark.parametrize("message", ["\x1e", "a\x1eb\x1fc", "\x1f" * 7, "x\n\n\x1e\x1e"])
def test_git_lone_separators_are_plain_text(tmp_path: Path, message: str) -> None:
    repo, _ = make_repo(tmp_path)
    (repo / "new.py").write_text("x = 1\n")
    git(repo, "add", "new.py")
    git(repo, "commit", "-q", "--cleanup=verbatim", "-m", message)
    got = collect_git("repo", tmp_path)
    assert got.facts["commits.total"] == 4 and got.facts["commits.files"] == 4
    assert _commit_items(got)[0]["files"] == ["new.py"]


def test_git_renames_and_paths_with_tabs_and_newlines(tmp_path: Path) -> None:
    repo, _ = make_repo(tmp_path)
    git(repo, "mv", "docs.md", "guide\tnew\n.md")
    git(repo, "commit", "-q", "-m", "docs: rename")
    newest = _commit_items(collect_git("repo", tmp_path))[0]
    assert newest["files"] == ["guide\tnew\n.md"]
    assert (newest["additions"], newest["deletions"]) == (0, 0)


# --- gh JSON and agent logs: a wrong type is exit 2 naming the file and the path ------------

GH_PR_BAD = [
    ({"reviews": 5}, "reviews: expected a list, got a number (5)"),
    ({"comments": True}, "comments: expected a list, got a boolean (true)"),
    ({"statusCheckRollup": 3}, "statusCheckRollup: expected a list, got a number (3)"),
    ({"reviews": [{"state": "APPROVED"}, 7]}, "reviews[1]: expected an object"),
    ({"reviews": [{"author": {"login": 5}}]}, "reviews[0].author.login: expected a string"),
    ({"reviews": [{"commit": "abc"}]}, "reviews[0].commit: expected an object, got a string"),
    ({"statusCheckRollup": [{"name": ["x"]}]}, "statusCheckRollup[0].name: expected a string"),
    ({"number": "412"}, "number: expected an integer, got a string"),
    ({"state": 1}, "state: expected a string, got a number (1)"),
]
GH_RUN_BAD = [
    ({"jobs": 7}, "jobs: expected a list, got a number (7)"),
    ({"jobs": [{"steps": 5}]}, "jobs[0].steps: expected a list, got a number (5)"),
    ({"jobs": [{"steps": [{"conclusion": False}]}]},
     "jobs[0].steps[0].conclusion: expected a string, got a boolean (false)"),
    ({"databaseId": 1.5}, "databaseId: expected an integer, got a number (1.5)"),
    ({"attempt": True}, "attempt: expected an integer, got a boolean (true)"),
]
DEEP = "[" * 100_000 + "]" * 100_000


def _collect_pr(tmp_path: Path, text: str, flag: str = "--gh-pr") -> None:
    from judge.collect.gh import collect_gh_pr, collect_gh_run
    (tmp_path / "pr.json").write_text(text)
    (collect_gh_pr if flag == "--gh-pr" else collect_gh_run)(Path("pr.json"), tmp_path)


@pytest.mark.parametrize(("data", "message"), GH_PR_BAD)
def test_gh_pr_wrong_types_name_the_path(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(UsageError) as info:
        _collect_pr(tmp_path, json.dumps(data))
    assert message in str(info.value) and info.value.where == "--gh-pr"
    assert info.value.file is not None and info.value.file.endswith("pr.json")
    assert info.value.exit_code == 2


@pytest.mark.parametrize(("data", "message"), GH_RUN_BAD)
def test_gh_run_wrong_types_name_the_path(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(UsageError) as info:
        _collect_pr(tmp_path, json.dumps(data), "--gh-run")
    assert message in str(info.value) and info.value.where == "--gh-run"


@pytest.mark.parametrize("text", [DEEP, '{"reviews": ' + "[" * 70 + "]" * 70 + "}",
                                  '{"a":' * 5000 + "1" + "}" * 5000])
def test_gh_json_too_deep_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(UsageError, match="nested deeper than 64 levels"):
        _collect_pr(tmp_path, text)


AGENT_BAD = [
    ('{"role": "assistant", "content": "x", "tool_calls": 5}',
     "line 1: tool_calls: expected a list, got a number (5)"),
    ('{"role": "assistant", "tool_calls": [3]}', "line 1: tool_calls[0]: expected an object"),
    ('{"role": "assistant", "tool_calls": [{"function": {"name": 1}}]}',
     "line 1: tool_calls[0].function.name: expected a string"),
    ('{"role": "assistant", "tool_calls": [{"function": "f"}]}',
     "line 1: tool_calls[0].function: expected an object, got a string"),
    ('{"role": 5, "content": "x"}', "line 1: role: expected a string"),
    ('{"role": "user", "content": 5}', "line 1: content: expected a string"),
    ('{"role": "user", "content": [{"text": 5}]}', "line 1: content[0].text: expected a string"),
    ('{"messages": [{"role": "user", "content": "a"}, {"role": "tool", "is_error": "yes"}]}',
     "line 1: messages[1].is_error: expected a boolean"),
    ('{"ts": [1], "level": "info", "message": "m"}', "line 1: ts: expected a string or a number"),
    ('{"ts": 1, "level": 3, "message": "m"}', "line 1: level: expected a string"),
    (DEEP, "line 1: the document: nested deeper than 64 levels"),
]


@pytest.mark.parametrize(("line", "message"), AGENT_BAD)
def test_agent_log_wrong_types_name_the_line_and_path(tmp_path: Path, line: str,
                                                       message: str) -> None:
    from judge.collect.agent_log import collect_agent_log
    (tmp_path / "log.jsonl").write_text(line + "\n")
    with pytest.raises(UsageError) as info:
        collect_agent_log(Path("log.jsonl"), tmp_path)
    assert message in str(info.value) and info.value.where == "--agent-log"
    assert info.value.exit_code == 2


def test_agent_log_good_shapes_still_read(tmp_path: Path) -> None:
    from judge.collect.agent_log import parse_agent_log
    text = "\n".join(json.dumps(r) for r in [
        {"role": "user", "content": [{"type": "text", "text": "do it"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"function": {"name": "ls", "arguments": {"path": "."}}},
            {"function": {"name": "cat", "arguments": "{\"f\": 1}"}}]},
        {"role": "tool", "tool_call_id": 7, "content": "ok", "is_error": False},
        {"ts": "2026-01-01T00:00:00Z", "level": "ERROR", "message": {"code": 1}},
        {"role": "assistant", "content": "done"}])
    steps, counts, first, last = parse_agent_log(text)
    assert counts == {"steps": 5, "ok_steps": 4, "errors": 1, "warnings": 0, "tool_calls": 2}
    assert (first, last) == ("do it", "done")
    assert steps[1]["text"] == '→ ls({"path": "."})\n→ cat({"f": 1})'
    assert steps[2]["toolCall"] == "7" and steps[3]["text"] == '{"code": 1}'


# --- JUnit: nesting past any real report ----------------------------------------------------

@pytest.mark.parametrize("depth", [70, 1_000, 50_000])
def test_junit_deep_nesting_is_exit_2_not_recursion(tmp_path: Path, depth: int) -> None:
    from judge.collect.junit import collect_junit
    inner = '<testcase name="t"><failure message="m"/></testcase>'
    text = ("<testsuites>" + "<testsuite name='s'>" * depth + inner
            + "</testsuite>" * depth + "</testsuites>")
    (tmp_path / "deep.xml").write_text(text)
    with pytest.raises(UsageError, match="nested deeper than 64 levels") as info:
        collect_junit([Path("deep.xml")], tmp_path)
    assert info.value.where == "--junit"


# --- secrets in collected text never reach the case (prompt, store, cache follow from it) ---

def test_a_secret_anywhere_in_collected_text_never_reaches_the_case(tmp_path: Path) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from secret_corpus import CORPUS, URLS
    from secret_corpus import secret_core as _core

    from judge.collect.agent_log import parse_agent_log
    from judge.collect.case import Collected, build_case
    from judge.system.resources import load_rubric

    rubric = load_rubric("task-evaluation")
    secrets = [s for _, s in CORPUS] + [u for u, _ in URLS]
    cores = [_core(s) for _, s in CORPUS] + [p for _, p in URLS]
    seps = st.sampled_from([" ", "\n", ": ", "=", "(", "'", '"', "\x1b[32m", "\t"])
    words = st.text(alphabet="abc xyz.-_/\n", max_size=20)
    texts = st.builds(lambda a, left, s, right, b: a + left + s + right + b, words, seps,
                      st.sampled_from(secrets), seps, words)

    @settings(max_examples=40, deadline=None)
    @given(message=texts, review=texts, log=texts, title=texts)
    def check(message: str, review: str, log: str, title: str) -> None:
        steps, _counts, first, last = parse_agent_log("\n".join(json.dumps(r) for r in [
            {"role": "user", "content": title},
            {"role": "assistant", "content": log, "tool_calls": [
                {"function": {"name": "sh", "arguments": json.dumps({"cmd": log})}}]}]))
        parts = [
            Collected(source={"kind": "git"}, evidence={"commits": [
                {"sha": "a" * 40, "subject": title[:160], "author": "A", "message": message}]}),
            Collected(source={"kind": "gh-pr"}, evidence={"reviews": [
                {"id": "reviews:review:1", "body": review, "reviewer": "r"}]}),
            Collected(source={"kind": "agent-log"}, evidence={"agentLogs": steps},
                      input=first, output=last),
        ]
        built = build_case("c", parts, rubric)
        dumped = json.dumps(built.case.model_dump(mode="json"), ensure_ascii=False)
        for core in cores:
            assert core not in dumped
        assert built.redactions >= 1

    check()
