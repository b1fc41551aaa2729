"""Lone surrogates in HTTP bodies: a 422 naming the field, never a 500 at the first UTF-8 write.

``"\\ud800"`` is valid JSON but not text: ``POST /api/evaluate`` with one in ``case.output``,
``input`` or an evidence excerpt answered 500 (UnicodeEncodeError in the cache entry). Every
string (and key) of a rich evaluate body is tried in turn, as an escape and as raw bytes, and
one field of every other write route; a surrogate *pair* (an emoji) is text and is served.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge.app.workspace.workspace import Workspace
from judge.server.app import create_app
from judge.server.problems import PROBLEM_JSON

LONE = "\ud800"
CASE: dict[str, Any] = {
    "id": "c1",
    "input": {"question": "what was asked", "steps": ["first"]},
    "output": {"text": "what was done", "mode": "answer"},
    "conversation": [{"role": "user", "content": "hello", "name": "ada"},
                     {"role": "assistant", "content": "calling",
                      "tool_calls": [{"name": "search", "arguments": {"q": "x"}, "id": "t1"}]},
                     {"role": "tool", "content": "found", "tool_call_id": "t1"}],
    "evidence": {"commits": [{"id": "c", "title": "subject", "excerpt": "the diff",
                              "refs": {"sha": "abc123"}}],
                 "documents": [{"id": "d", "title": "spec", "excerpt": "the text"}]},
    "deterministic": {"agentPerformance": 80},
    "checks": [{"type": "contains", "value": "done", "category": "agentPerformance"}],
    "tags": ["smoke"],
    "human": {"band": "strong", "categories": {"agentPerformance": 80}},
    "metadata": {"owner": "team", "nested": {"deep": ["value"]}},
}
BODY: dict[str, Any] = {"case": CASE, "rubric": "task-evaluation",
                        "model": "hosted_vllm/fake-judge"}


def _places(value: Any, where: str = "") -> Iterator[tuple[str, tuple[Any, ...], bool]]:
    """(where, path of keys, is_key) of every string and every key of ``value``."""
    if isinstance(value, str):
        yield where, (), False
    elif isinstance(value, dict):
        for key, sub in value.items():
            yield where, (key,), True
            for inner, path, is_key in _places(sub, f"{where}.{key}" if where else key):
                yield inner, (key, *path), is_key
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            for inner, path, is_key in _places(sub, f"{where}[{i}]"):
                yield inner, (i, *path), is_key


def _planted(value: Any, path: tuple[Any, ...], is_key: bool) -> Any:
    """``value`` with a lone surrogate in the string (or the key) at ``path``."""
    if not path:
        return value + LONE
    head, rest = path[0], path[1:]
    if isinstance(value, list):
        return [_planted(v, rest, is_key) if i == head else v for i, v in enumerate(value)]
    if is_key and not rest:
        return {(k + LONE if k == head else k): v for k, v in value.items()}
    return {k: (_planted(v, rest, is_key) if k == head else v) for k, v in value.items()}


PLACES = list(_places(BODY))


def _client(root: Path) -> TestClient:
    (root / "judge.toml").write_text('cache_mode = "offline"\n', encoding="utf-8")
    return TestClient(create_app(Workspace.open(root, env={})), base_url="http://127.0.0.1")


def _refused(answer: Any, where: str) -> None:
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == PROBLEM_JSON
    problem = answer.json()
    assert problem["where"] == where and "lone surrogate" in problem["detail"], problem


def test_every_string_and_key_of_the_evaluate_body_is_checked(tmp_path: Path) -> None:
    assert len(PLACES) > 50  # the body reaches every kind of field
    with _client(tmp_path) as client:
        served = client.post("/api/evaluate", json=BODY)
        assert served.status_code == 200, served.text  # the body itself is fine
        for where, path, is_key in PLACES:
            body = json.dumps(_planted(BODY, path, is_key))  # "\ud800" as JSON writes it
            answer = client.post("/api/evaluate", content=body,
                                 headers={"content-type": "application/json"})
            _refused(answer, "body." + where if where else "body")


@pytest.mark.parametrize("field", ["output", "input", "excerpt"])
def test_raw_surrogate_bytes_are_refused_too(tmp_path: Path, field: str) -> None:
    case = {"id": "c1", "output": "x", "input": "y",
            "evidence": {"commits": [{"id": "c", "excerpt": "z"}]}}
    where = {"output": "body.case.output", "input": "body.case.input",
             "excerpt": "body.case.evidence.commits[0].excerpt"}[field]
    text = json.dumps({"case": case}, ensure_ascii=False)
    text = text.replace({"output": '"x"', "input": '"y"', "excerpt": '"z"'}[field],
                        '"a' + LONE + '"')
    with _client(tmp_path) as client:
        answer = client.post("/api/evaluate", content=text.encode("utf-8", "surrogatepass"),
                             headers={"content-type": "application/json"})
        _refused(answer, where)


def test_a_surrogate_pair_is_text_and_is_served(tmp_path: Path) -> None:
    with _client(tmp_path) as client:
        body = json.dumps({"case": {"id": "c1", "output": "done \U0001f600"}})
        assert "\\ud83d\\ude00" in body  # written as a pair of escapes
        answer = client.post("/api/evaluate", content=body,
                             headers={"content-type": "application/json"})
        assert answer.status_code == 200, answer.text


WRITES = [
    ("/api/suites/task/eval/harness", {"tags": ["a" + LONE]}, "body.tags[0]"),
    ("/api/suites/task/eval/baseline", {"run": LONE}, "body.run"),
    ("/api/monitor/task/records", {"records": [{"id": "c", "output": LONE}]},
     "body.records[0].output"),
    ("/api/review/20260101T000000-abc/labels",
     {"reviewer": "ada", "labels": [{"case": "c", "note": LONE}]}, "body.labels[0].note"),
]


@pytest.mark.parametrize(("path", "body", "where"), WRITES, ids=[w[0] for w in WRITES])
def test_every_write_route_refuses_a_lone_surrogate(tmp_path: Path, path: str,
                                                    body: dict[str, Any], where: str) -> None:
    with _client(tmp_path) as client:
        answer = client.post(path, content=json.dumps(body),
                             headers={"content-type": "application/json"})
        _refused(answer, where)
