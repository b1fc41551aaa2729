"""The seeded fixture generator (seed 001) and ``judge suite generate|validate|show``."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_judge

from judge.app.workspace.fixtures import DEFAULT_COUNT, generate_cases, suite_to_yaml
from judge.app.workspace.suites import GenerateRequest, generate_suite
from judge.app.workspace.workspace import Workspace
from judge.core.formats.evidence import build_bundle
from judge.core.formats.rubric import Rubric
from judge.core.formats.suite import parse_suite, validate_against_rubric
from judge.core.scoring.check_signals import deterministic_signals
from judge.core.scoring.scoring import band_for, score_case
from judge.system.resources import load_rubric, load_suite

ROOT = Path(__file__).resolve().parents[2]
RUBRICS = ("task-evaluation", "research-agent")
EXAMPLES = (ROOT / "examples" / "task-evaluation" / "suite.yaml",
            ROOT / "examples" / "research-agent" / "suite.yaml")


@pytest.fixture(scope="module", params=RUBRICS)
def rubric(request: pytest.FixtureRequest) -> Rubric:
    return load_rubric(str(request.param))


def _judge(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return run_judge(list(args), cwd)


# --- the generator ------------------------------------------------------------------------

def test_same_inputs_give_identical_yaml(rubric: Rubric) -> None:
    first = suite_to_yaml(generate_cases("checkout-agent", 12, rubric=rubric))
    second = suite_to_yaml(generate_cases("checkout-agent", 12, rubric=rubric))
    assert first == second
    assert suite_to_yaml(generate_cases("checkout-agent", 12, rubric=rubric, seed=7)) == \
        suite_to_yaml(generate_cases("checkout-agent", 12, rubric=rubric, seed=7))


def test_different_id_or_seed_gives_different_cases(rubric: Rubric) -> None:
    base = generate_cases("checkout-agent", 5, rubric=rubric)
    other = generate_cases("search-agent", 5, rubric=rubric)
    seeded = generate_cases("checkout-agent", 5, rubric=rubric, seed=1)
    assert base.cases != other.cases
    assert base.cases != seeded.cases
    assert other.id == "search-agent" and base.rubric == rubric.id


def test_count_is_respected(rubric: Rubric) -> None:
    for count in (1, DEFAULT_COUNT, 23):
        suite = generate_cases("fixtures", count, rubric=rubric)
        assert len(suite.cases) == count
        assert len({c.id for c in suite.cases}) == count
    assert len(generate_cases("fixtures", rubric=rubric).cases) == DEFAULT_COUNT


@pytest.mark.parametrize("count", [0, -1, 10_001])
def test_count_out_of_range_is_refused(count: int) -> None:
    with pytest.raises(ValueError, match="count"):
        generate_cases("x", count, rubric=load_rubric("task-evaluation"))


def test_generated_suite_validates_against_its_rubric(rubric: Rubric) -> None:
    suite = generate_cases("checked", 20, rubric=rubric)
    validate_against_rubric(suite, rubric, "generated")
    for case in suite.cases:
        assert case.tags and case.complexity in {"simple", "medium", "complex"}
        assert case.input and case.output and case.judged_by == "llm"
        assert build_bundle(case.evidence, rubric.evidence).ids()


def test_generated_evidence_uses_every_group_of_the_profile(rubric: Rubric) -> None:
    suite = generate_cases("coverage", 20, rubric=rubric)
    used = {group for case in suite.cases for group in case.evidence}
    assert used == set(rubric.evidence.names())


def test_generic_groups_of_another_profile_get_items() -> None:
    base = load_rubric("task-evaluation")
    custom = base.model_copy(update={"evidence": base.evidence.model_copy(update={
        "groups": tuple(g.model_copy(update={"name": n})
                        for g, n in zip(base.evidence.groups[:2], ("passages", "answers"),
                                        strict=True))})})
    suite = generate_cases("rag", 10, rubric=custom)
    validate_against_rubric(suite, custom, "generated")
    assert any(case.evidence.get("passages") for case in suite.cases)


def test_yaml_round_trips_to_an_equal_suite(rubric: Rubric) -> None:
    suite = generate_cases("round-trip", 15, rubric=rubric, seed=3)
    text = suite_to_yaml(suite)
    assert parse_suite(text, "generated.yaml", "unused") == suite


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name)
def test_hand_written_examples_round_trip_too(path: Path) -> None:
    suite = load_suite(path)
    assert parse_suite(suite_to_yaml(suite), "again.yaml", "unused") == suite


def test_signals_are_scores_spread_over_bands(rubric: Rubric) -> None:
    suite = generate_cases("spread", 20, rubric=rubric)
    bands: set[str] = set()
    for case in suite.cases:
        signals, _ = deterministic_signals(case, rubric)
        assert set(signals) == {c.id for c in rubric.categories}
        for value in signals.values():
            assert isinstance(value, int) and 0 <= value <= 100
            bands.add(band_for(value, rubric.bands))
    assert len(bands) >= 3, bands


def test_task_cases_land_in_every_band_when_judge_agrees() -> None:
    rubric = load_rubric("task-evaluation")
    suite = generate_cases("bands", 20, rubric=rubric)
    bands = {score_case(rubric, case.deterministic, None).band for case in suite.cases}
    assert bands == {b.name for b in rubric.bands}


def test_evidence_tone_follows_the_target_band() -> None:
    suite = generate_cases("tone", 40, rubric=load_rubric("task-evaluation"))
    for case in suite.cases:
        target = case.metadata["targetBand"]
        statuses = {s["status"] for s in case.evidence["workflow"]}
        if target == "failing":
            assert "failed" in statuses
        if target == "excellent":
            assert statuses == {"passed"}
            assert all(r["state"] == "approved" for r in case.evidence.get("reviews", []))


def test_generator_is_pure() -> None:
    tree = ast.parse((ROOT / "judge" / "app" / "workspace" / "fixtures.py")
                     .read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    assert roots <= {"__future__", "hashlib", "collections", "dataclasses", "typing", "yaml"}


# --- CLI ----------------------------------------------------------------------------------

def test_cli_generate_to_stdout_is_reproducible() -> None:
    first = _judge("suite", "generate", "cli-fixtures", "--count", "4", "--seed", "9")
    second = _judge("suite", "generate", "cli-fixtures", "--count", "4", "--seed", "9")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert first.stdout.startswith("# Generated by `judge suite generate cli-fixtures")
    suite = parse_suite(first.stdout, "stdout.yaml", "unused")
    assert suite.id == "cli-fixtures" and len(suite.cases) == 4
    assert suite == generate_cases("cli-fixtures", 4, rubric=load_rubric("task-evaluation"),
                                   seed=9)


def test_cli_generate_writes_a_file_and_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "suites" / "gen.yaml"
    proc = _judge("suite", "generate", "gen", "--rubric", "research-agent",
                  "--output", str(target))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    written = target.read_text(encoding="utf-8")
    assert load_suite(target).rubric == "research-agent"
    assert [p.name for p in target.parent.iterdir()] == ["gen.yaml"]  # no temp file left

    again = _judge("suite", "generate", "other", "--output", str(target))
    assert again.returncode == 2
    assert "already exists" in again.stderr and "--force" in again.stderr
    assert target.read_text(encoding="utf-8") == written

    forced = _judge("suite", "generate", "other", "--output", str(target), "--force")
    assert forced.returncode == 0, forced.stderr
    assert load_suite(target).id == "other"


@pytest.mark.parametrize(("args", "needle"), [
    (("bad id!",), "invalid suite id"),
    (("ok", "--count", "0"), "--count"),
    (("ok", "--rubric", "no-such-rubric"), "unknown rubric"),
])
def test_cli_generate_errors_exit_2(args: tuple[str, ...], needle: str) -> None:
    proc = _judge("suite", "generate", *args)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert proc.stdout == ""


def test_cli_validate_summarises_each_file() -> None:
    proc = _judge("suite", "validate", *(str(p.relative_to(ROOT)) for p in EXAMPLES))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert "'task-evaluation-example'" in lines[0] and "16 cases (14 llm, 2 deterministic)" \
        in lines[0] and "tags: " in lines[0]
    assert "'research-agent-example'" in lines[1] and "6 cases" in lines[1]


def test_cli_validate_names_file_case_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "id: bad\nrubric: task-evaluation\ncases:\n"
        "  - id: good-case\n    output: fine\n"
        "  - id: broken-case\n    output: x\n    deterministic: {agentPerformnce: 50}\n",
        encoding="utf-8")
    unknown_group = tmp_path / "groups.yaml"
    unknown_group.write_text(
        "cases:\n  - id: c1\n    evidence: {commitz: [a]}\n", encoding="utf-8")
    proc = _judge("suite", "validate", str(bad), str(EXAMPLES[0]), str(unknown_group))
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "broken-case" in proc.stderr
    assert "deterministic.agentPerformnce" in proc.stderr
    assert "evidence.commitz" in proc.stderr and "'c1'" in proc.stderr
    assert "task-evaluation-example" in proc.stdout  # the good file is still reported


def test_cli_validate_with_another_rubric_reports_the_mismatch() -> None:
    proc = _judge("suite", "validate", str(EXAMPLES[0]), "--rubric", "research-agent")
    assert proc.returncode == 2
    assert "unknown category" in proc.stderr or "unknown evidence group" in proc.stderr


def test_cli_show_json_and_table() -> None:
    proc = _judge("suite", "show", str(EXAMPLES[0]), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["suite"] == "task-evaluation-example" and data["rubric"] == "task-evaluation"
    by_id = {c["id"]: c for c in data["cases"]}
    assert by_id["refactor-payment-service"]["evidence"]["commits"] == {"total": 23,
                                                                         "dropped": 3}
    assert by_id["refactor-payment-service"]["evidence"]["agentLogs"]["dropped"] == 5
    assert by_id["triage-incident-summary"]["judgedBy"] == "deterministic"
    assert by_id["triage-incident-summary"]["checks"] == 5
    assert by_id["fix-login-redirect"]["deterministic"]["agentPerformance"] == 86

    table = _judge("suite", "show", str(EXAMPLES[0]))
    assert table.returncode == 0, table.stderr
    assert "23(−3)" in table.stdout and "86/84/82" in table.stdout


def test_generate_to_a_jsonl_file_writes_json_lines_that_run_reads(tmp_path: Path) -> None:
    ws = Workspace.open(tmp_path, env={})
    done = generate_suite(ws, GenerateRequest(suite_id="gen", count=3,
                                              output=Path("out/gen.jsonl")))
    assert done.format == "jsonl" and done.path == tmp_path / "out" / "gen.jsonl"
    text = (tmp_path / "out" / "gen.jsonl").read_text(encoding="utf-8")
    assert [json.loads(line)["id"] for line in text.splitlines()] == \
        [c.id for c in done.suite.cases]
    assert load_suite(tmp_path / "out" / "gen.jsonl").cases == done.suite.cases
    yaml_done = generate_suite(ws, GenerateRequest(suite_id="gen", count=3,
                                                   output=Path("gen.yaml")))
    assert yaml_done.format == "yaml" and yaml_done.text.startswith("# Generated by")
