"""``judge suite collect`` as an operation and a command: files written, appended, checked, run."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from collect_fixtures import make_repo, run_pytest_junit
from conftest import ROOT, run_judge
from test_collect import PR, RUN

from judge.app.admin.collecting import CollectRequest, collect_case
from judge.app.runs.running import RunRequest, run_suite
from judge.app.runs.stored import iter_results
from judge.app.workspace.workspace import Workspace
from judge.core.formats.suite import validate_against_rubric
from judge.core.text.errors import ConfigError, UsageError
from judge.system.resources import load_rubric, load_suite

MODEL = "hosted_vllm/fake-judge"


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a git repository, a pytest JUnit report, gh JSON, a transcript, a task."""
    root = tmp_path_factory.mktemp("artefacts")
    make_repo(root)
    shutil.copy(run_pytest_junit(root), root / "report.xml")
    (root / "pr.json").write_text(json.dumps(PR))
    (root / "run.json").write_text(json.dumps(RUN))
    (root / "agent.jsonl").write_text("\n".join(json.dumps(m) for m in [
        {"role": "user", "content": "Greet twice and document it."},
        {"role": "assistant", "content": "Done: greets twice; docs.md explains it. "
                                         "(used OPENAI_API_KEY=sk-abcdefghijklmnop0123)"},
    ]) + "\n")
    (root / "task.yaml").write_text(
        "id: SHOP-7\ntitle: Greet twice\ndescription: The app should greet twice.\n"
        "priority: high\ncreatedAt: 2026-01-01T09:00:00Z\ntags: [feature]\n"
        "complexity: simple\n")
    (root / "notes.md").write_text("# Greeting notes\n\nGreet twice, politely.\n")
    return root


def _request(**extra: Any) -> CollectRequest:
    given: dict[str, Any] = {
        "case_id": "greet-twice", "suite": Path("cases.yaml"), "git": "repo@HEAD~2..HEAD",
        "junit": (Path("report.xml"),), "gh_pr": Path("pr.json"), "gh_run": Path("run.json"),
        "agent_log": Path("agent.jsonl"), "task": Path("task.yaml"),
        "documents": (Path("notes.md"),)}
    return CollectRequest(**{**given, **extra})


def _workspace(root: Path) -> Workspace:
    return Workspace.open(root, env={})


def test_collect_every_source_into_a_valid_stable_suite(artefacts: Path, tmp_path: Path) -> None:
    ws_root = tmp_path / "ws"
    shutil.copytree(artefacts, ws_root)
    ws = _workspace(ws_root)
    result = collect_case(ws, _request())
    # cases.yaml names no suite: the folder does, as for `judge run cases.yaml`.
    assert (result.appended, result.cases, result.suite_id) == (False, 1, "ws")
    case = result.case
    assert list(case.evidence) == ["taskMetadata", "commits", "workflow", "reviews",
                                   "documents", "agentLogs"]  # the profile's order
    assert case.input == "Greet twice\n\nThe app should greet twice."  # the task wins
    assert case.output.startswith("Done: greets twice")  # the last assistant message
    assert "sk-abcdefghijklmnop0123" not in case.output
    assert case.tags == ("feature",) and case.complexity == "simple"
    assert case.evidence["taskMetadata"][0]["createdAt"] == "2026-01-01T09:00:00Z"
    assert case.evidence["documents"][0]["key"] == "notes.md"
    # Junit failures + PR checks + the run: taskOutcome from the pass rate, process from
    # the rule with a review (1 failing test: no 40; maria approved: 30; the repository's
    # history before the range is not Conventional, so its 30 are not applicable: 30/70).
    # The transcript's two steps did not fail: agentPerformance 100 by agent-steps-ok.
    assert case.deterministic == {"agentPerformance": 100, "taskOutcomeQuality": 33,
                                  "processCompliance": 43}
    signals = case.metadata["signals"]
    assert signals["processCompliance"]["rule"] == "tests-review-conventional"
    assert signals["agentPerformance"]["rule"] == "agent-steps-ok"
    assert result.signals["agentPerformance"].rule == "agent-steps-ok"
    sources = [s["kind"] for s in case.metadata["collected"]["sources"]]
    assert sources == ["task", "agent-log", "git", "junit", "gh-pr", "gh-run", "documents"]
    # What was written is a valid suite for the rubric, as `judge suite validate` checks it.
    suite = load_suite(ws_root / "cases.yaml")
    validate_against_rubric(suite, load_rubric("task-evaluation"), "cases.yaml")
    assert suite.cases == (case,) and suite.rubric == "task-evaluation"
    # Stable: the same artefacts give the same bytes.
    again = collect_case(ws, _request(suite=Path("again.yaml")))
    assert again.case == case
    assert (ws_root / "cases.yaml").read_text().replace("id: ws\n", "") == \
        (ws_root / "again.yaml").read_text().replace("id: again\n", "")


def test_append_keeps_comments_and_refuses_duplicates(artefacts: Path, tmp_path: Path) -> None:
    ws_root = tmp_path / "ws"
    shutil.copytree(artefacts, ws_root)
    suite = ws_root / "suite.yaml"
    suite.write_text("# Hand-written header, kept.\nid: mine\nrubric: task-evaluation\n"
                     "cases:\n  # the first case\n  - id: first\n    output: hello\n")
    ws = _workspace(ws_root)
    with pytest.raises(UsageError, match="already exists") as info:
        collect_case(ws, _request(suite=Path("suite.yaml")))
    assert info.value.where == "-o"
    result = collect_case(ws, _request(suite=Path("suite.yaml"), append=True))
    assert (result.appended, result.cases, result.suite_id, result.rewritten) == \
        (True, 2, "mine", False)
    text = suite.read_text()
    assert text.startswith("# Hand-written header, kept.\n") and "# the first case" in text
    assert [c.id for c in load_suite(suite).cases] == ["first", "greet-twice"]
    before = suite.read_bytes()
    with pytest.raises(UsageError, match="already has a case 'greet-twice'"):
        collect_case(ws, _request(suite=Path("suite.yaml"), append=True))
    assert suite.read_bytes() == before  # nothing half-written


def test_jsonl_suites_append_a_line(artefacts: Path, tmp_path: Path) -> None:
    ws_root = tmp_path / "ws"
    shutil.copytree(artefacts, ws_root)
    ws = _workspace(ws_root)
    collect_case(ws, _request(suite=Path("cases.jsonl"), agent_log=None, gh_pr=None))
    result = collect_case(ws, _request(suite=Path("cases.jsonl"), case_id="second",
                                       append=True))
    lines = (ws_root / "cases.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["greet-twice", "second"]
    assert result.cases == 2 and result.appended


def test_bad_requests_are_clear_and_write_nothing(artefacts: Path, tmp_path: Path) -> None:
    ws_root = tmp_path / "ws"
    shutil.copytree(artefacts, ws_root)
    ws = _workspace(ws_root)
    cases: list[tuple[CollectRequest, str, str]] = [
        (CollectRequest(case_id="x", suite=Path("c.yaml")), "nothing to collect", ""),
        (_request(suite=Path("c.txt")), "a suite file ends in", "-o"),
        (_request(case_id="bad id!"), "not valid: id", "--id"),
        (_request(rubric="research-agent"), "has no such group", "--rubric"),
        (_request(agent_log=Path("missing.jsonl")), "cannot read the agent log", "--agent-log"),
    ]
    for request, message, where in cases:
        with pytest.raises(ConfigError, match=message) as info:
            collect_case(ws, request)
        assert not where or info.value.where == where, info.value.render()
    assert not list(ws_root.glob("c.*")) and not (ws_root / "cases.yaml").exists()


def test_collect_this_repository_and_judge_it(fake_server: Any, artefacts: Path,
                                              tmp_path: Path) -> None:
    """The project's own last three commits and a real test report, judged end to end."""
    ws_root = tmp_path / "ws"
    ws_root.mkdir()
    shutil.copy(artefacts / "report.xml", ws_root / "report.xml")
    ws = Workspace.open(ws_root, {"model": [MODEL], "api_base": fake_server.base_url + "/v1"},
                        env={})
    collected = collect_case(ws, CollectRequest(
        case_id="judgeflow-last-3", suite=Path("self.yaml"), git=f"{ROOT}@HEAD~3..HEAD",
        junit=(Path("report.xml"),)))
    # HEAD~3..HEAD holds more than 3 commits when one of them is a merge: count as git does.
    in_range = subprocess.run(["git", "-C", str(ROOT), "rev-list", "--count", "HEAD~3..HEAD"],
                              capture_output=True, text=True, check=True).stdout
    commits = [c for c in collected.case.evidence["commits"] if "sha" in c]
    assert len(commits) == min(int(in_range), 20 - (len(collected.case.evidence["commits"])
                                                    - len(commits)))
    assert set(collected.case.deterministic) == {"taskOutcomeQuality", "processCompliance"}
    report = run_suite(ws, RunRequest(suite=Path("self.yaml")))
    assert report.exit_code == 0 and report.summary.scored == 1, report
    (result,) = list(iter_results(ws, report.run.id))
    assert result.status == "scored" and result.overall_score is not None
    by_category = {c.category: c for c in result.category_scores}
    quality = by_category["taskOutcomeQuality"]
    assert quality.deterministic_score == 33 and quality.rule == "blend"
    assert by_category["agentPerformance"].rule == "ai_only"
    assert fake_server.stats()["requests"] == 1


def test_the_command_writes_what_validate_and_render_accept(artefacts: Path,
                                                            tmp_path: Path) -> None:
    ws_root = tmp_path / "ws"
    shutil.copytree(artefacts, ws_root)
    proc = run_judge(["suite", "collect", "--id", "greet", "--git", "repo@HEAD~2..HEAD", "--junit",
                      "report.xml", "--task", "task.yaml", "-o", "cases.yaml"], ws_root)
    assert proc.returncode == 0, proc.stderr
    assert "wrote case 'greet' to cases.yaml" in proc.stdout
    assert "signal taskOutcomeQuality = 33 (rule test-pass-rate)" in proc.stdout
    # No agent log collected: the rule does not apply, nothing is subtracted (ai_only).
    assert "signal agentPerformance: none (agent-steps-ok: no fact agent.ok_steps)" \
        in proc.stdout
    check = run_judge(["suite", "validate", "cases.yaml"], ws_root)
    assert check.returncode == 0 and "1 case " in check.stdout, check.stderr
    shown = run_judge(["render", "cases.yaml", "--case", "greet"], ws_root)
    assert shown.returncode == 0, shown.stderr
    assert "workflow:test:test_sample::test_fails" in shown.stdout


def test_agent_performance_signal_from_the_agent_log(tmp_path: Path) -> None:
    """agentPerformance's rule on a collected transcript: the share of steps that did not
    fail (a tool result marked as an error fails its step), and no signal at all, so no
    points lost, for a log without steps."""
    (tmp_path / "agent.jsonl").write_text("\n".join(json.dumps(m) for m in [
        {"role": "user", "content": "Fetch the weather in Paris."},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "c1", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "timeout", "is_error": True},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "c2", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "18°C, sunny"},
        {"role": "assistant", "content": "It is 18°C and sunny in Paris."},
    ]) + "\n")
    ws = _workspace(tmp_path)
    result = collect_case(ws, CollectRequest(case_id="weather", suite=Path("cases.yaml"),
                                             agent_log=Path("agent.jsonl")))
    facts = result.case.metadata["collected"]["facts"]
    assert (facts["agent.steps"], facts["agent.ok_steps"], facts["agent.errors"]) == (6, 5, 1)
    outcome = result.signals["agentPerformance"]
    assert outcome.rule == "agent-steps-ok" and outcome.value == 83  # 100 x 5/6, half up
    (term,) = outcome.terms
    assert (term.observed, term.over_observed) == (5, 6)
    assert result.case.deterministic == {"agentPerformance": 83}

    (tmp_path / "empty.jsonl").write_text("\n")
    empty = collect_case(ws, CollectRequest(case_id="idle", suite=Path("idle.yaml"),
                                            agent_log=Path("empty.jsonl")))
    assert empty.signals["agentPerformance"].value is None
    assert empty.signals["agentPerformance"].skipped == ("agent-steps-ok: agent.steps is 0: "
                                                         "no share",)
    assert "agentPerformance" not in (empty.case.deterministic or {})
