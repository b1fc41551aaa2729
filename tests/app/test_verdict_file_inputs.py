"""Bad labels, calibration, baseline and collected files: exit 2, nothing written.

Each row was exit 70 (a 5,000-digit number or deep nesting in a labels or calibration file,
``judge judges calibrate --out`` naming a folder, ``calibration: /dev/zero``), silently wrong (a
duplicate key: the last wins) or named the wrong file (``gh`` JSON with ``number: 10^30``
named the output suite). Now: exit 2 naming the file, the place and a fix, and the workspace
byte-identical (the shared table's runner, tests/bad_inputs.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bad_inputs import BadInput, snapshot, write_workspace
from conftest import ROOT, run_judge

RUBRIC = (ROOT / "rubrics" / "task-evaluation.yaml").read_text(encoding="utf-8")
LABEL = ('{"version": 1, "suite": "s", "case": "a", "category": "agentPerformance", '
         '"reviewer": "ana", "at": "2026-12-06T06:00:00Z", "score": 40}\n')
DEEP = "[" * 100_000 + "]" * 100_000
BIG = "1" + "0" * 30  # 10^30


def _calibrate(labels: str, *extra: str) -> tuple[str, ...]:
    return ("judges", "calibrate", "RUN", "--labels", labels, *extra)


def _rubric(calibration: str) -> str:
    return RUBRIC + f"calibration: {calibration}\n"


def _calibration(**fields: str) -> str:
    """A calibration file's JSON text with ``fields`` written as given (raw JSON)."""
    body = {"judge": '"m"', "rubric": '"task-evaluation"', "scale": "{}",
            "categories": '{"agentPerformance": {"table": [' + ", ".join(["50"] * 101)
                          + '], "labels": 5}}', **fields}
    return "{" + ", ".join(f'"{k}": {v}' for k, v in body.items()) + "}\n"


ROWS = (
    BadInput("labels file with a 5,000-digit number",
             {"l.jsonl": LABEL.replace('"score": 40', '"score": ' + "9" * 5000)},
             _calibrate("l.jsonl"), ("l.jsonl", "line 1, column", "5,000 digits")),
    BadInput("labels file nested 100,000 deep",
             {"l.jsonl": LABEL.replace('"score": 40', '"note": ' + DEEP)},
             _calibrate("l.jsonl"), ("l.jsonl", "line 1", "nested deeper than 64")),
    BadInput("labels file with a duplicate key",
             {"l.jsonl": LABEL.replace('"score": 40', '"score": 40, "score": 95')},
             _calibrate("l.jsonl"), ("l.jsonl", "line 1, column", "duplicate key 'score'")),
    BadInput("labels file with score true", {"l.jsonl": LABEL.replace("40", "true")},
             _calibrate("l.jsonl"), ("l.jsonl", "line 1: score", "integer")),
    BadInput('labels file with score "50"', {"l.jsonl": LABEL.replace("40", '"50"')},
             _calibrate("l.jsonl"), ("l.jsonl", "line 1: score", "integer")),
    BadInput("calibrate --out naming an existing folder",
             {"l.jsonl": LABEL, "out/kept.txt": "x"},
             _calibrate("l.jsonl", "--out", "out"), ("--out", "folder")),
    BadInput("calibration: /dev/zero", {"r.yaml": _rubric("/dev/zero")},
             ("rubric", "validate", "r.yaml"), ("r.yaml", "calibration", "character device")),
    BadInput("calibration file with a 5,000-digit number",
             {"r.yaml": _rubric("cal.json"), "cal.json": _calibration(runs="[" + "9" * 5000
                                                                      + "]")},
             ("rubric", "validate", "r.yaml"), ("cal.json", "5,000 digits")),
    BadInput("calibration file nested 100,000 deep",
             {"r.yaml": _rubric("cal.json"), "cal.json": _calibration(scale=DEEP)},
             ("rubric", "validate", "r.yaml"), ("cal.json", "nested deeper than 64")),
    BadInput("calibration file with a duplicate key",
             {"r.yaml": _rubric("cal.json"), "cal.json": _calibration(judge='"m", "judge": "n"')},
             ("rubric", "validate", "r.yaml"), ("cal.json", "duplicate key 'judge'")),
    BadInput("calibration file with labels: true",
             {"r.yaml": _rubric("cal.json"),
              "cal.json": _calibration().replace('"labels": 5', '"labels": true')},
             ("rubric", "validate", "r.yaml"), ("cal.json", "categories.agentPerformance.labels")),
    BadInput("gh pr JSON with number: 10^30",
             {"pr.json": json.dumps({"number": int(BIG), "title": "t", "state": "OPEN"})},
             ("suite", "collect", "--id", "c1", "--gh-pr", "pr.json", "-o", "s.jsonl"),
             ("pr.json", "--gh-pr", "31 digits")),
    BadInput("gh run JSON with a duplicate key",
             {"run.json": '{"databaseId": 1, "conclusion": "success", "conclusion": "failure"}'},
             ("suite", "collect", "--id", "c1", "--gh-run", "run.json", "-o", "s.jsonl"),
             ("run.json", "duplicate key 'conclusion'")),
    BadInput("agent log line with a duplicate key",
             {"a.jsonl": '{"role": "user", "content": "a"}\n'
                         '{"role": "user", "content": "a", "content": "b"}\n'},
             ("suite", "collect", "--id", "c1", "--agent-log", "a.jsonl", "-o", "s.jsonl"),
             ("a.jsonl", "line 2", "duplicate key 'content'")),
    BadInput("OTel trace with a duplicate key",
             {"t.jsonl": '{"resourceSpans": [], "resourceSpans": [{}]}\n'},
             ("suite", "collect", "otel", "t.jsonl", "-o", "s.yaml"), ("t.jsonl", "duplicate key")),
    BadInput("cache import line with a duplicate key",
             {"x.jsonl": '{"key": "' + "a" * 64 + '", "key": "' + "b" * 64 + '"}\n'},
             ("cache", "import", "x.jsonl"), ("line 1", "duplicate key 'key'")),
    BadInput("baseline with a duplicate key",
             {"baselines/s.json": '{"suite": "s", "threshold": 0.05,\n "threshold": 0.5}'},
             ("baseline", "show", "s"), ("s.json", "line 2, column 2", "duplicate key")),
    BadInput("baseline with threshold Infinity",
             {"baselines/s.json": '{"suite": "s", "threshold": Infinity}'},
             ("baseline", "show", "s"), ("s.json", "Infinity is not a JSON number")),
)


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_a_bad_verdict_file_is_exit_2_naming_it_and_writes_nothing(
        tmp_path: Path, row: BadInput) -> None:
    write_workspace(tmp_path, row)
    before = snapshot(tmp_path)
    proc = run_judge(list(row.args), tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-300:], proc.stderr[-2000:])
    assert "internal error" not in proc.stderr and "fix:" in proc.stderr, proc.stderr[-2000:]
    for word in row.words:
        assert word in proc.stderr, (word, proc.stderr[-2000:])
    assert len(proc.stderr) < 20_000
    assert snapshot(tmp_path) == before
