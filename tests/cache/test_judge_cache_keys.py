"""What enters a judgment's cache key, and what does not, proven through ``judge_prepared``.

Everything that can change the model's output is a miss when it changes (model, one byte of
the rendered messages, the template, seed, temperature, schema, output mode, sampling
params); where and how the model is reached is not (base URL, key, timeout, retries): a
real LiteLLM client under respx makes no request for those. Offline never opens a socket,
and an offline replay is byte-identical to the warm run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from conftest import FakeClient

from judge.cache.disk import JudgmentCache
from judge.cache.entry import cache_key
from judge.cache.maintenance import CacheMaintenance
from judge.core.formats.models import CaseResult
from judge.core.formats.output_schema import output_schema
from judge.core.formats.rubric import Rubric, rubric_hash
from judge.core.formats.suite import Case
from judge.engine.judging import JudgeSettings, Prepared, judge_prepared, prepare
from judge.llm.client import Completion, JudgeRequest, LiteLLMClient, ModelSpec, load_litellm
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric, load_suite, shipped_dir

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"
MODEL = "hosted_vllm/judge-x"
NOW = "2025-03-03T16:00:00Z"
SECRET = "sk-secret-XYZ"


class FakeCompleter(FakeClient):
    """A model that always answers with a valid verdict for the case's bundle, and counts."""

    def __init__(self, prep: Prepared) -> None:
        self.calls = 0
        self.requests: list[JudgeRequest] = []
        ids = prep.bundle.ids()
        self.text = json.dumps({cat: {"rationale": "Grounded in the cited item.",
                                      "evidence": [ids[0]], "score": 75}
                                for cat in ("agentPerformance", "taskOutcomeQuality",
                                            "processCompliance")})

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        self.calls += 1
        self.attempts += 1
        self.requests.append(request)
        return Completion(text=self.text, finish_reason="stop", model_reported="judge-x",
                          prompt_tokens=1000, completion_tokens=80, cost_usd=None,
                          latency_ms=12.5, output_mode="json_object")


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return load_rubric("task-evaluation")


@pytest.fixture(scope="module")
def case() -> Case:
    return next(c for c in load_suite(SUITE).cases if c.id == "fix-login-redirect")


@pytest.fixture(scope="module")
def prep(case: Case, rubric: Rubric) -> Prepared:
    return prepare(case, rubric, PromptRenderer())


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[JudgmentCache]:
    with JudgmentCache(tmp_path / "cache") as store:
        yield store


async def judge(prep: Prepared, rubric: Rubric, cache: JudgmentCache | None, client: Any, *,
                model: str = MODEL, settings: JudgeSettings | None = None,
                sample: int = 0) -> CaseResult:
    return await judge_prepared(prep, rubric, rubric_hash(rubric), model,
                                settings or JudgeSettings(), cache, client, now=NOW,
                                sample=sample)


# --- hits and misses through judge_prepared ----------------------------------------------


async def test_same_input_twice_is_one_call(prep: Prepared, rubric: Rubric,
                                            cache: JudgmentCache) -> None:
    fake = FakeCompleter(prep)
    first = await judge(prep, rubric, cache, fake)
    second = await judge(prep, rubric, cache, fake)
    assert fake.calls == 1
    assert first.status == second.status == "scored"
    assert first.judge is not None and second.judge is not None
    assert (first.judge.cached, second.judge.cached) == (False, True)
    assert first.judge.cache_key == second.judge.cache_key
    assert len(cache) == 1


def _workspace_template(tmp_path: Path) -> Path:
    """A workspace copy of the shipped template with one extra word in the system message."""
    source = (shipped_dir("prompts") / "judge.md.j2").read_text(encoding="utf-8")
    assert source.count("You are the judge") == 1
    ws = tmp_path / "ws"
    (ws / "prompts").mkdir(parents=True)
    (ws / "prompts" / "judge.md.j2").write_text(
        source.replace("You are the judge", "You are the impartial judge"), encoding="utf-8")
    return ws


async def test_each_output_shaping_change_is_a_miss(prep: Prepared, rubric: Rubric,
                                                    case: Case, cache: JudgmentCache,
                                                    tmp_path: Path) -> None:
    fake = FakeCompleter(prep)
    base = await judge(prep, rubric, cache, fake)
    assert fake.calls == 1 and base.judge is not None
    keys = {base.judge.cache_key}

    # One character of the judged output: one byte of the rendered user message.
    assert isinstance(case.output, str) and "Fixed:" in case.output
    edited = case.model_copy(update={"output": case.output.replace("Fixed:", "Fixed;", 1)})
    prep_byte = prepare(edited, rubric, PromptRenderer())
    assert prep_byte.prompt is not None and prep.prompt is not None
    assert prep_byte.prompt.messages[0] == prep.prompt.messages[0]
    assert len(prep_byte.prompt.messages[1]["content"]) == len(prep.prompt.messages[1]["content"])
    assert prep_byte.schema == prep.schema

    # The template: a workspace copy with one more word.
    renderer = PromptRenderer(workspace=_workspace_template(tmp_path))
    assert renderer.template_hash != PromptRenderer().template_hash
    prep_template = prepare(case, rubric, renderer)
    assert prep_template.prompt is not None
    assert "impartial" in prep_template.prompt.messages[0]["content"]

    # The schema alone (same messages): the evidence ID enum differs.
    other_schema = output_schema(rubric, (*prep.bundle.ids(), "commits:000000000000"))
    assert other_schema != prep.schema
    prep_schema = dataclasses.replace(prep, schema=other_schema)

    # The schema through the case: evidence IDs changed (this also changes the messages).
    evidence = dict(case.evidence)
    evidence["runAudit"] = [{**evidence["runAudit"][0], "id": "evt_000000"},
                            *evidence["runAudit"][1:]]
    prep_ids = prepare(case.model_copy(update={"evidence": evidence}), rubric, PromptRenderer())
    assert prep_ids.bundle.ids() != prep.bundle.ids()
    assert prep_ids.schema != prep.schema

    variants: list[tuple[str, Prepared, dict[str, Any]]] = [
        ("model", prep, {"model": "hosted_vllm/judge-y"}),
        ("one byte of the messages", prep_byte, {}),
        ("template", prep_template, {}),
        ("seed", prep, {"settings": JudgeSettings(seed=1234)}),
        ("sample (seed + 1)", prep, {"sample": 1}),
        ("temperature", prep, {"settings": JudgeSettings(temperature=0.2)}),
        ("schema only", prep_schema, {}),
        ("evidence IDs", prep_ids, {}),
        ("output mode", prep, {"settings": JudgeSettings(output_mode="json_schema")}),
        ("max_tokens", prep, {"settings": JudgeSettings(params={"max_tokens": 2048})}),
    ]
    for index, (what, variant, kwargs) in enumerate(variants, start=2):
        result = await judge(variant, rubric, cache, fake, **kwargs)
        assert fake.calls == index, f"{what}: expected a miss"
        assert result.judge is not None and result.judge.cached is False, what
        assert result.judge.cache_key not in keys, what
        keys.add(result.judge.cache_key)
        # ...and each one is then a hit of its own.
        again = await judge(variant, rubric, cache, fake, **kwargs)
        assert fake.calls == index, f"{what}: expected a hit the second time"
        assert again.judge is not None and again.judge.cached is True, what
    assert len(cache) == len(variants) + 1


async def test_sample_is_keyed_through_its_seed(prep: Prepared, rubric: Rubric,
                                                cache: JudgmentCache) -> None:
    # Sample k is sent with seed + k: sample 1 of seed 42 is the very request seed 43 makes.
    fake = FakeCompleter(prep)
    one = await judge(prep, rubric, cache, fake, sample=1)
    same = await judge(prep, rubric, cache, fake, settings=JudgeSettings(seed=43))
    assert fake.calls == 1
    assert one.judge is not None and same.judge is not None
    assert one.judge.cache_key == same.judge.cache_key and same.judge.cached is True
    assert (one.judge.sample, same.judge.sample) == (1, 0)


async def test_max_repairs_and_float_spelling_do_not_change_the_key(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache) -> None:
    # max_repairs bounds our loop, not the request; 0 and 0.0 are the same temperature.
    fake = FakeCompleter(prep)
    await judge(prep, rubric, cache, fake)
    await judge(prep, rubric, cache, fake, settings=JudgeSettings(max_repairs=3))
    await judge(prep, rubric, cache, fake, settings=JudgeSettings(temperature=0))
    assert fake.calls == 1


# --- ModelSpec fields outside the request: a real client, no request ---------------------


@pytest.fixture
def httpx_transport() -> Iterator[Any]:
    lit = load_litellm()
    before = lit.disable_aiohttp_transport
    lit.disable_aiohttp_transport = True
    lit.in_memory_llm_clients_cache.flush_cache()
    try:
        yield lit
    finally:
        lit.disable_aiohttp_transport = before
        lit.in_memory_llm_clients_cache.flush_cache()


async def test_endpoint_key_timeout_and_retries_are_not_in_the_key(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache, httpx_transport: Any) -> None:
    first = ModelSpec(MODEL, api_base="http://judge-a.test/v1", api_key=SECRET, timeout=10.0,
                      max_attempts=2, backoff_base=0.01, backoff_max=0.02, retry_after_cap=1.0)
    second = ModelSpec(MODEL, api_base="http://judge-b.test/v1", api_key="sk-other",
                       timeout=99.0, max_attempts=6, backoff_base=2.0, backoff_max=30.0,
                       retry_after_cap=60.0)
    reply = {"id": "c1", "object": "chat.completion", "created": 1, "model": "judge-x",
             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                 "role": "assistant", "content": FakeCompleter(prep).text}}],
             "usage": {"prompt_tokens": 900, "completion_tokens": 70, "total_tokens": 970}}
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as mock:
        route_a = mock.post("http://judge-a.test/v1/chat/completions").mock(
            return_value=httpx.Response(200, json=reply))
        route_b = mock.post("http://judge-b.test/v1/chat/completions").mock(
            return_value=httpx.Response(200, json=reply))
        result_a = await judge(prep, rubric, cache, LiteLLMClient(first))
        client_b = LiteLLMClient(second)
        result_b = await judge(prep, rubric, cache, client_b)
        assert route_a.call_count == 1
        assert route_a.calls[0].request.headers["authorization"] == f"Bearer {SECRET}"
        assert route_b.call_count == 0 and client_b.attempts == 0
        assert len(mock.calls) == 1
    assert result_a.status == result_b.status == "scored"
    assert result_a.judge is not None and result_b.judge is not None
    assert result_b.judge.cached is True
    assert result_a.judge.cache_key == result_b.judge.cache_key
    assert result_a.overall_score == result_b.overall_score
    cache.close()

    # The key never reaches the cache directory, in any file (db, WAL, value files).
    files = [Path(root) / name for root, _, names in os.walk(cache.directory) for name in names]
    assert files
    for file in files:
        data = file.read_bytes()
        assert SECRET.encode() not in data, file
        assert b"judge-a.test" not in data, file


# --- offline ------------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise AssertionError(f"offline judging opened a connection to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


async def test_offline_miss_is_cache_miss_without_a_socket(
        prep: Prepared, rubric: Rubric, tmp_path: Path, no_network: list[Any]) -> None:
    empty = JudgmentCache(tmp_path / "empty", "offline")
    result = await judge(prep, rubric, empty, None)
    assert result.status == "cache_miss"
    # A miss still says which judge, sample and key it was (the store keys rows on them).
    assert result.overall_score is None and result.judge is not None
    assert result.judge.cached is False and result.judge.prompt_tokens is None
    assert result.judge.cache_key and result.judge.model == "hosted_vllm/judge-x"
    assert result.reason is not None and "not in the cache" in result.reason
    assert no_network == []
    assert not (tmp_path / "empty").exists()  # offline never creates the directory
    # The same with a read-write cache object and no client.
    with JudgmentCache(tmp_path / "rw") as rw:
        assert (await judge(prep, rubric, rw, None)).status == "cache_miss"
        assert len(rw) == 0
    assert no_network == []


async def test_offline_replay_is_byte_identical(prep: Prepared, rubric: Rubric,
                                                tmp_path: Path, no_network: list[Any]) -> None:
    fake = FakeCompleter(prep)
    with JudgmentCache(tmp_path / "cache") as online:
        cold = await judge(prep, rubric, online, fake)
        warm = await judge(prep, rubric, online, fake)
    assert fake.calls == 1
    assert cold.status == "scored"
    with JudgmentCache(tmp_path / "cache", "offline") as offline:
        replay = await judge(prep, rubric, offline, None)
    assert no_network == []

    assert warm.model_dump_json() == replay.model_dump_json()
    assert cold.judge is not None and replay.judge is not None
    assert (cold.judge.cached, replay.judge.cached) == (False, True)
    cold_as_cached = cold.model_copy(
        update={"judge": cold.judge.model_copy(update={"cached": True})})
    assert cold_as_cached.model_dump_json() == replay.model_dump_json()


# --- pinned keys: no refactor may move a key (computed by the cache.py of 7e419cb) --------

PINNED: dict[str, tuple[dict[str, Any], str]] = {
    "minimal": ({"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}],
                 "temperature": 0.0, "seed": 42, "responseFormat": None, "outputMode": "auto",
                 "params": {"max_tokens": 1024}},
                "a674b63d1f427e8b343c3df791bda9ffffb55b27742d26de478d6fd4ba0400d0"),
    "schema": ({"model": "hosted_vllm/judge-x",
                "messages": [{"role": "system", "content": "You are the judge."},
                             {"role": "user",
                              "content": "## Evidence\n- [C-1] Évidence ✓ \"quoted\"\n"}],
                "temperature": 0, "seed": 7,
                "responseFormat": {"type": "object", "required": ["a"], "properties": {
                    "a": {"type": "integer", "minimum": 0, "maximum": 100}}},
                "outputMode": "json_object", "params": {"max_tokens": 800, "top_p": 1.0}},
               "8cab63a0cab040c302a93cf6e04ef205278035e532c49a9a25c53679cd20297b"),
    "no_seed": ({"model": "anthropic/claude-x", "messages": [{"role": "user", "content": "x"}],
                 "temperature": 0.7, "seed": None, "responseFormat": None,
                 "outputMode": "prompt", "params": {}},
                "ecc579827058e963299c2d34ca33e20e9f664da99de1b3795080dc48b6fc8f09"),
}
SHIPPED_EXPORT = ROOT / "examples" / "task-evaluation" / "local-smollm2.cache.jsonl"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_keys_of_fixed_requests_are_pinned(name: str) -> None:
    request, key = PINNED[name]
    assert cache_key(request) == key


def test_a_judge_requests_key_material_keeps_its_pinned_key() -> None:
    request, key = PINNED["schema"]
    logical = JudgeRequest(model=request["model"], messages=tuple(request["messages"]),
                           temperature=0.0, seed=7, schema=request["responseFormat"],
                           output_mode="json_object", params=request["params"])
    assert cache_key(logical.key_material()) == key


def test_the_shipped_exports_keys_still_match_their_requests() -> None:
    lines = SHIPPED_EXPORT.read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        entry = json.loads(line)
        assert cache_key(entry["request"]) == entry["key"]


# --- a flipped byte in a stored value is a miss, never another score ----------------------


def _edit_value(directory: Path, key: str, edit: Callable[[bytes], bytes]) -> None:
    """Change the stored bytes of one entry in diskcache's own SQLite table."""
    with closing(sqlite3.connect(directory / "cache.db")) as db, db:
        value, filename = db.execute("SELECT value, filename FROM Cache WHERE key = ?",
                                     (key,)).fetchone()
        assert filename is None and isinstance(value, bytes)  # stored inline, as bytes
        edited = edit(value)
        assert edited != value
        db.execute("UPDATE Cache SET value = ? WHERE key = ?", (edited, key))


def _after(raw: bytes, marker: bytes, old: bytes, new: bytes) -> bytes:
    at = raw.index(old, raw.index(marker))
    return raw[:at] + new + raw[at + len(old):]


FLIPS: dict[str, Callable[[bytes], bytes]] = {
    # Still valid JSON in the same layout: only the score a reply gives has changed.
    "score in the reply": lambda raw: _after(raw, b'"turns":', b"75", b"76"),
    "one bit of the prompt": lambda raw: _after(raw, b'"messages":', b"judge",
                                                bytes([ord("j") ^ 1]) + b"udge"),
    "the digest itself": lambda raw: raw[:20] + (b"0" if raw[20:21] != b"0" else b"1")
    + raw[21:],
    "createdAt": lambda raw: _after(raw, b'"createdAt":', b"2025", b"2024"),
}


@pytest.mark.parametrize("flip", sorted(FLIPS))
async def test_a_flipped_byte_in_a_stored_entry_is_a_miss(
        flip: str, prep: Prepared, rubric: Rubric, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    fake = FakeCompleter(prep)
    with JudgmentCache(directory) as online:
        scored = await judge(prep, rubric, online, fake)
    assert scored.status == "scored" and scored.judge is not None
    key = scored.judge.cache_key
    _edit_value(directory, key, FLIPS[flip])

    with JudgmentCache(directory, "offline") as offline:
        replay = await judge(prep, rubric, offline, None)
        assert replay.status == "cache_miss" and replay.overall_score is None
        assert offline.get(key) is None and offline.turns(key) is None
        assert offline.counters()["corrupt"] == 3 and offline.counters()["hits"] == 0
        assert CacheMaintenance(offline).verify().corrupt == (key,)
    with JudgmentCache(directory) as again:  # online: asked again, and cached sound again
        rejudged = await judge(prep, rubric, again, fake)
    assert fake.calls == 2 and rejudged.judge is not None and not rejudged.judge.cached
    assert rejudged.overall_score == scored.overall_score
