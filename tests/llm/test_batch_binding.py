"""Batch answers bound to their requests, against the loopback fake.

The provider's output file is hostile here: a duplicated ``custom_id``, ids this job never
sent, answers from another model, requests echoed under the wrong id. Each is refused with
its reason, per item, in the collect summary, and never reaches the cache; the judgments it
claimed are asked live or left unscored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_batch import entries, make_suite, open_ws, results, server, until_done

from judge.app.runs.batching import collect_batch, submit_batch
from judge.app.runs.running import RunRequest
from judge.llm.batch import BatchClient, BatchItem, bind_answers, request_digest
from judge.llm.client import Completion

__all__ = ["server"]  # the module's fake server fixture, shared


def _turn(model: str | None = "gpt-4o-mini-2024-07-18") -> Completion:
    return Completion(text="{}", finish_reason="stop", model_reported=model, prompt_tokens=1,
                      completion_tokens=1, cost_usd=None, latency_ms=0.0, output_mode="json_schema")


def test_bind_answers_refuses_each_kind() -> None:
    sent = {"a": request_digest({"n": 1}), "b": request_digest({"n": 2}),
            "c": request_digest({"n": 3}), "d": request_digest({"n": 4})}
    items = [
        BatchItem("a", _turn()),  # a dated snapshot of the model asked: kept
        BatchItem("b", _turn()), BatchItem("b", _turn()),  # duplicated
        BatchItem("x", _turn()),  # never sent
        BatchItem("c", _turn("gpt-4o")),  # another model
        BatchItem("d", _turn(), echo=sent["c"]),  # echoes c's request under d's id
        BatchItem("e", None, "HTTP 500"), BatchItem("e", _turn(), echo=request_digest({"n": 5})),
    ]
    bound, refused = bind_answers(items, {"a", "b", "c", "d", "e"}, "gpt-4o-mini",
                                  lambda cid: sent.get(cid, request_digest({"n": 5})))
    assert sorted(bound) == ["a", "e"] and bound["e"].turn is not None  # the answer wins
    assert refused == {
        "b": "2 answers carry this custom_id",
        "x": "no request of this job has this custom_id",
        "c": "answered by model 'gpt-4o', asked of 'gpt-4o-mini'",
        "d": "the request it echoes is not the one sent under this custom_id",
    }


def _hostile(monkeypatch: pytest.MonkeyPatch,
             edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    real = BatchClient.download

    def download(self: BatchClient, file_id: str) -> bytes:
        lines = [json.loads(x) for x in real(self, file_id).splitlines() if x.strip()]
        return "\n".join(json.dumps(x) for x in edit(lines)).encode()

    monkeypatch.setattr(BatchClient, "download", download)


def _submitted(tmp_path: Path, server: Any, count: int = 6) -> tuple[Any, str, list[str]]:
    suite = make_suite(tmp_path, count)
    ws = open_ws(tmp_path, server, max_repairs=0)
    done = submit_batch(ws, RunRequest(suite=suite))
    assert done.job is not None
    until_done(ws, done.job.id)
    return ws, done.job.id, list(done.job.keys)


def _echoed(lines: list[dict[str, Any]], bodies: dict[str, dict[str, Any]],
            shift: int) -> list[dict[str, Any]]:
    """Rotate the answers by ``shift``, each echoing the request it truly answered."""
    ids = [x["custom_id"] for x in lines]
    out = []
    for n, line in enumerate(lines):
        answered = ids[n]
        out.append({**line, "custom_id": ids[(n + shift) % len(ids)],
                    "request": {"body": bodies[answered]}})
    return out


@pytest.mark.parametrize("attack", ["duplicate", "unknown", "model", "rotated-echo"])
def test_hostile_output_is_refused_reported_and_never_cached(
        tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch, attack: str) -> None:
    ws, job_id, keys = _submitted(tmp_path, server)
    bodies: dict[str, dict[str, Any]] = {}
    if attack == "rotated-echo":
        from judge.app.runs.batching import _lines_for
        from judge.store.batch_jobs import BatchStore
        with ws.open_store() as store:
            job = BatchStore(store).get(job_id)
        bodies = {x["custom_id"]: x["body"] for x in _lines_for(ws, job, 0)}

    def edit(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if attack == "duplicate":
            other = json.loads(json.dumps(lines[1]))
            other["custom_id"] = lines[0]["custom_id"]
            return [*lines, other]
        if attack == "unknown":
            return [*lines, {**lines[0], "custom_id": "f" * 64}]
        if attack == "model":
            lines[2]["response"]["body"]["model"] = "gpt-4o"
            return lines
        return _echoed(lines, bodies, 1)

    _hostile(monkeypatch, edit)
    collected = collect_batch(ws, job_id, live=False)
    ledger = collected.job.ledger
    assert ledger is not None and collected.report is not None
    got = results(ws, collected.job.run_id or "")
    cached = entries(ws)
    if attack == "unknown":
        assert ledger.refused == {"f" * 64: "no request of this job has this custom_id"}
        assert ledger.answered == len(keys) and len(cached) == len(keys)
        return
    refused = set(ledger.refused)
    expected = {"duplicate": 1, "model": 1, "rotated-echo": len(keys)}[attack]
    assert len(refused) == expected and refused <= set(keys)
    assert all(k in ledger.failed and "batch answer refused" in ledger.failed[k]
               for k in refused)
    assert not refused & set(cached)  # never cached
    assert ledger.answered == len(keys) - expected
    unscored = [r for r in got.values() if r.status != "scored"]
    assert len(unscored) == expected
    assert all("refused" in (r.reason or "") for r in unscored)
