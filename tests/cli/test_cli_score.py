"""``judge rubric score``: the core's numbers on the command line, pure JSON, clear input errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import run_judge

from judge.cli.output import emit_json_streaming
from judge.core.text.canonical import stable_json

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "score.json"
SEED_FIELDS = {"category", "deterministicScore", "aiScore", "finalScore", "weight", "band",
               "rationale", "evidence"}


def _judge(*args: str) -> subprocess.CompletedProcess[str]:
    return run_judge(list(args), ROOT)


def _write(tmp_path: Path, data: Any, name: str = "scores.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _good() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text(encoding="utf-8"))


def test_example_scores_78_strong() -> None:
    proc = _judge("rubric", "score", str(EXAMPLE.relative_to(ROOT)), "--json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)  # the whole of stdout is one JSON document
    assert payload["overallScore"] == 78
    assert payload["band"] == "strong"
    assert payload["status"] == "scored" and payload["passed"] is True
    assert payload["rubric"] == "task-evaluation"
    cats = payload["categoryScores"]
    assert [c["category"] for c in cats] == [
        "agentPerformance", "taskOutcomeQuality", "processCompliance"]
    for cat in cats:
        assert SEED_FIELDS <= set(cat), set(cat) ^ SEED_FIELDS
    by = {c["category"]: c for c in cats}
    # 80*.7+70*.3 = 77; 75*.7+80*.3 = 76.5 -> 77 (half up); 90*.7+60*.3 = 81
    assert by["agentPerformance"]["finalScore"] == 77
    assert by["taskOutcomeQuality"]["finalScore"] == 77
    assert by["processCompliance"]["finalScore"] == 81
    assert [c["weight"] for c in cats] == [0.3, 0.45, 0.25]
    assert all(c["band"] == "strong" for c in cats)
    assert by["taskOutcomeQuality"]["deterministicScore"] == 75
    assert by["taskOutcomeQuality"]["aiScore"] == 80


def test_json_stdout_is_pure(tmp_path: Path) -> None:
    proc = _judge("rubric", "score", str(EXAMPLE), "--json")
    assert proc.returncode == 0
    assert proc.stdout.lstrip().startswith("{") and proc.stdout.rstrip().endswith("}")
    decoder = json.JSONDecoder()
    value, end = decoder.raw_decode(proc.stdout)
    assert isinstance(value, dict)
    assert proc.stdout[end:].strip() == ""
    assert "\x1b[" not in proc.stdout  # no terminal colour codes


def test_human_output_shows_the_overall() -> None:
    proc = _judge("rubric", "score", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    assert "78" in proc.stdout and "strong" in proc.stdout


def test_score_with_levels_rubric(tmp_path: Path) -> None:
    path = _write(tmp_path, {"rubric": "research-agent", "categories": {
        "factual_accuracy": {"level": "good"}, "completeness": {"level": "acceptable"},
        "citation_accuracy": {"level": "excellent"}, "source_quality": {"level": "poor"},
        "tool_efficiency": {"level": "good"}}})
    proc = _judge("rubric", "score", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["overallScore"] == 73 and payload["passed"] is True


@pytest.mark.parametrize(("field", "value", "words"), [
    ("deterministic", 76.5, "integer"),
    ("deterministic", "80", "integer"),
    ("ai", 101, "100"),
    ("ai", -1, "0"),
    ("ai", True, "integer"),
])
def test_bad_scores_exit_2_naming_file_and_field(tmp_path: Path, field: str, value: Any,
                                                  words: str) -> None:
    data = _good()
    data["categories"]["taskOutcomeQuality"][field] = value
    path = _write(tmp_path, data)
    proc = _judge("rubric", "score", str(path), "--json")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert str(path) in proc.stderr
    assert f"categories.taskOutcomeQuality.{field}" in proc.stderr
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_category_exits_2(tmp_path: Path) -> None:
    data = _good()
    data["categories"]["agentPerfromance"] = {"deterministic": 50, "ai": 50}
    path = _write(tmp_path, data)
    proc = _judge("rubric", "score", str(path), "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert str(path) in proc.stderr and "categories.agentPerfromance" in proc.stderr
    assert "agentPerformance" in proc.stderr  # the fix lists the real ones


def test_unknown_key_and_invalid_json_exit_2(tmp_path: Path) -> None:
    data = _good()
    data["categories"]["processCompliance"]["determinstic"] = 90
    path = _write(tmp_path, data, "typo.json")
    proc = _judge("rubric", "score", str(path), "--json")
    assert proc.returncode == 2 and str(path) in proc.stderr
    assert "determinstic" in proc.stderr
    broken = _write(tmp_path, '{"categories": {', "broken.json")
    proc = _judge("rubric", "score", str(broken), "--json")
    assert proc.returncode == 2 and str(broken) in proc.stderr and "JSON" in proc.stderr
    assert proc.stdout == ""


def test_unknown_level_and_missing_file_exit_2(tmp_path: Path) -> None:
    path = _write(tmp_path, {"rubric": "research-agent",
                             "categories": {"completeness": {"level": "superb"}}})
    proc = _judge("rubric", "score", str(path), "--json")
    assert proc.returncode == 2
    assert "categories.completeness.level" in proc.stderr and "excellent" in proc.stderr
    missing = tmp_path / "absent.json"
    proc = _judge("rubric", "score", str(missing), "--json")
    assert proc.returncode == 2 and str(missing) in proc.stderr


def test_unscored_case_is_reported_not_crashed(tmp_path: Path) -> None:
    data = _good()
    data["categories"]["processCompliance"] = {}
    path = _write(tmp_path, data)
    proc = _judge("rubric", "score", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["status"] == "unscored" and payload["overallScore"] is None
    assert "processCompliance" in payload["reason"]


def test_streamed_json_is_byte_identical_to_emit_json(capsys: pytest.CaptureFixture[str]) -> None:
    fields = {"run": {"id": "r", "totals": {"cases": 2}}, "summary": {"passRate": 0.5},
              "baseline": None, "summaries": None}
    for items in ([{"id": "b", "scores": [1, {"x": None}]}, {"id": "é\n"}], []):
        emit_json_streaming(fields, "cases", iter(items))
        assert capsys.readouterr().out == stable_json({**fields, "cases": items})
