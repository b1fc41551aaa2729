"""People's labels decide calibrations, agreement and the prompt's examples, so they are typed,
strict and sealed: ``score: true`` was stored as 1, ``"50"``
and unknown case ids were accepted, duplicate keys kept the last, a 2,000,000-line file ran
600 s, and an edited labels file was used as it stood.

A workspace with a deterministic run (no judge needed) of a three-case suite.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import judge_env, run_judge
from fastapi.testclient import TestClient

from judge.app.judges.reviewing import export_labels, save_labels
from judge.app.workspace.workspace import Workspace
from judge.core.formats.labels import GivenLabel
from judge.server.app import create_app

TOKEN = "labels-test-token-0123456789"
SUITE = """id: det
cases:
""" + "".join(f"""  - id: {case}
    output: done
    judged_by: deterministic
    deterministic: {{agentPerformance: {s}, taskOutcomeQuality: {s}, processCompliance: {s}}}
""" for case, s in (("a", 70), ("b", 40), ("c", 90)))
CAT = "agentPerformance"
TEAM = "s3cr3t-team-key"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    ws = tmp_path_factory.mktemp("labels") / "ws"
    ws.mkdir()
    (ws / "s.yaml").write_text(SUITE, encoding="utf-8")
    proc = run_judge(["run", "s.yaml", "--json"], ws)
    assert proc.returncode == 0, proc.stderr
    yield ws, json.loads(proc.stdout)["run"]["id"]


@pytest.fixture
def ws(stored: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    target = tmp_path / "ws"
    shutil.copytree(stored[0], target)
    return target, stored[1]


def _snapshot(root: Path, skip: Path | None = None) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p != skip}


def _label(**given: Any) -> dict[str, Any]:
    return {"case": "a", "category": CAT, **given}


@pytest.mark.parametrize(("label", "status", "words"), [
    (_label(score=True), 422, "integer"),  # was stored as 1
    (_label(score="50"), 422, "integer"),  # was stored as 50
    (_label(score=50.0), 422, "integer"),
    (_label(agree="yes"), 422, "boolean"),
    ({"category": CAT, "score": 50}, 422, "case"),  # the schema says case is required
    (_label(case="zzz", score=50), 422, "not a case of suite 'det'"),  # was accepted
    (_label(score=50, agree=False), 200, ""),
])
def test_the_labels_route_takes_typed_labels_of_the_runs_cases(
        ws: tuple[Path, str], label: dict[str, Any], status: int, words: str) -> None:
    root, run_id = ws
    app = create_app(Workspace.open(root, env={"JUDGE_SERVER_TOKEN": TOKEN}))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        answer = client.post(f"/api/review/{run_id}/labels",
                             json={"reviewer": "ana", "labels": [label]},
                             headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == status, answer.text
        assert words in answer.text
        stored = client.get(f"/api/review/{run_id}",
                            headers={"Authorization": f"Bearer {TOKEN}"}).json()["labels"]
    assert [(lb["case"], lb["score"]) for lb in stored] == ([("a", 50)] if status == 200 else [])


def test_the_labels_schema_marks_case_and_category_required() -> None:
    schema = GivenLabel.model_json_schema()
    assert schema["required"] == ["case", "category"]
    spec = json.loads((Path(__file__).parents[2] / "docs" / "openapi.json").read_text())
    items = spec["components"]["schemas"]["LabelsIn"]["properties"]["labels"]["items"]
    assert items == {"$ref": "#/components/schemas/GivenLabel"}
    assert spec["components"]["schemas"]["GivenLabel"]["required"] == ["case", "category"]


def _export(root: Path, run_id: str, secret: str | None = None) -> Path:
    env = {"JUDGE_CACHE_SECRET": secret} if secret else {}
    workspace = Workspace.open(root, env=env)
    save_labels(workspace, run_id, [GivenLabel(case="a", category=CAT, score=40),
                                    GivenLabel(case="b", category=CAT, score=60)],
                reviewer="ana")
    return export_labels(workspace, run_id)


def _import(root: Path, run_id: str, path: Path, *extra: str,
            secret: str | None = None) -> Any:
    env = judge_env(**({"JUDGE_CACHE_SECRET": secret} if secret else {}))
    return run_judge(["review", run_id, "--import", str(path), *extra], root, env=env)


def _refused(proc: Any, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-1000:])
    assert "internal error" not in proc.stderr and "fix:" in proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr[-1000:]


def test_an_exported_labels_file_is_sealed_and_an_edit_is_refused(ws: tuple[Path, str]) -> None:
    root, run_id = ws
    path = _export(root, run_id)
    seals, *lines = path.read_text(encoding="utf-8").splitlines()
    assert list(json.loads(seals)) == ["digest"] and len(lines) == 2
    assert _import(root, run_id, path).returncode == 0
    path.write_text(path.read_text(encoding="utf-8").replace('"score":40', '"score":95'),
                    encoding="utf-8")
    before = _snapshot(root)
    proc = _import(root, run_id, path)
    _refused(proc, str(path), "edited by hand", "--allow-unsealed")
    assert _snapshot(root) == before
    taken = _import(root, run_id, path, "--allow-unsealed")  # on purpose: stored and sealed
    assert taken.returncode == 0 and "1 label changed" in taken.stdout, taken.stderr


def test_under_the_secret_only_a_file_sealed_with_it_is_used(ws: tuple[Path, str]) -> None:
    root, run_id = ws
    plain = _export(root, run_id)  # written without the secret: a digest only
    plain_text = plain.read_text(encoding="utf-8")
    _refused(_import(root, run_id, plain, secret=TEAM), "carries no seal")
    (root / ".judge" / "judge.db").unlink()  # a store of a team that holds the secret
    proc = run_judge(["run", "s.yaml", "--json", "--no-check"], root,
                     env=judge_env(JUDGE_CACHE_SECRET=TEAM))
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)["run"]["id"]
    keyed = _export(root, run_id, secret=TEAM)
    assert set(json.loads(keyed.read_text().splitlines()[0])) == {"digest", "seal"}
    assert _import(root, run_id, keyed, secret=TEAM).returncode == 0
    _refused(_import(root, run_id, keyed, secret="s3cr3t-other-key"), "another secret")
    plain.write_text(plain_text, encoding="utf-8")
    taken = _import(root, run_id, plain, "--allow-unsealed", secret=TEAM)  # on purpose
    assert taken.returncode == 0, taken.stderr


LINE = {"version": 1, "suite": "det", "case": "a", "category": CAT, "reviewer": "ana",
        "at": "2026-12-06T06:00:00Z"}
CONTENT = {
    "score true": (json.dumps({**LINE, "score": True}), "line 1: score"),
    'score "50"': (json.dumps({**LINE, "score": "50"}), "line 1: score"),
    "a duplicate key": (json.dumps(LINE)[:-1] + ', "score": 40, "score": 95}',
                        "duplicate key 'score'"),
    "a 5,000-digit score": (json.dumps(LINE)[:-1] + ', "score": ' + "9" * 5000 + "}",
                            "5,000 digits"),
    "NaN": (json.dumps(LINE)[:-1] + ', "score": NaN}', "NaN"),
    "nested 100,000 deep": (json.dumps(LINE)[:-1] + ', "note": ' + "[" * 100_000
                            + "]" * 100_000 + "}", "nested deeper"),
    "an unknown case": (json.dumps({**LINE, "case": "zzz", "score": 50}), "'zzz'"),
}


@pytest.mark.parametrize("row", sorted(CONTENT))
def test_a_bad_labels_file_is_exit_2_naming_it_and_writes_nothing(
        ws: tuple[Path, str], row: str) -> None:
    root, run_id = ws
    text, words = CONTENT[row]
    path = root / "hand.labels.jsonl"
    path.write_text(text + "\n", encoding="utf-8")
    before = _snapshot(root)
    _refused(_import(root, run_id, path, "--allow-unsealed"), str(path), words)
    assert _snapshot(root) == before


def test_a_2_000_000_line_labels_file_is_refused_by_its_size(ws: tuple[Path, str]) -> None:
    """~250 bytes a label: 500 MB (a sparse file: refused before a byte is read)."""
    root, run_id = ws
    path = root / "huge.labels.jsonl"
    with path.open("wb") as f:
        f.truncate(2_000_000 * 250)
    before = _snapshot(root, skip=path)
    for args in (["review", run_id, "--import", str(path)],
                 ["judges", "calibrate", run_id, "--labels", str(path)]):
        proc = run_judge(args, root)
        _refused(proc, "file too large", "the limit is 16,777,216 bytes")
    assert _snapshot(root, skip=path) == before
