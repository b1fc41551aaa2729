"""Every provider path judgeflow claims, checked at the wire: OpenAI, Anthropic, Gemini, vLLM.

A real judgment (``judge_prepared`` with the real :class:`LiteLLMClient`, the example suite's
case, the shipped template) goes out through LiteLLM's own HTTP calls, which respx answers
with each provider's real reply shape; nothing leaves the process (``assert_all_mocked``;
the OpenAI-compatible server is on 127.0.0.1). What is proven per provider: temperature 0,
the seed where the provider takes one (Anthropic has none: sending it made every Anthropic
judgment unscored), the schema in that provider's structured-output form, one HTTP request
per attempt of ours (no retries below ours), and that the reply parses into a verdict.

And the prompt-cache levers: the rubric-only system message comes first and is
byte-identical across cases; Anthropic's ``cache_control`` marker goes on it, on the wire
only (the cache key is the same with and without); cached prompt tokens reach the
judgment, the ledger and the cost.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.cache.disk import JudgmentCache
from judge.cache.entry import cache_key
from judge.core.formats.models import CaseResult
from judge.core.formats.rubric import Rubric, rubric_hash
from judge.core.outcomes.ledger import JudgeTally, build_ledger, tally
from judge.core.text.errors import ProviderError
from judge.engine.judging import JudgeSettings, Prepared, build_request, judge_prepared, prepare
from judge.llm.client import LiteLLMClient, ModelSpec
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric, load_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"
NOW = "2025-03-03T16:00:00Z"
AI = {"agentPerformance": 90, "taskOutcomeQuality": 80, "processCompliance": 70}
CASES = ("fix-login-redirect", "add-csv-export")
VLLM_BASE = "http://127.0.0.1:18099/v1"


pytestmark = pytest.mark.usefixtures("litellm_httpx")  # respx sees LiteLLM's async calls


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return load_rubric("task-evaluation")


@pytest.fixture(scope="module")
def preps(rubric: Rubric) -> dict[str, Prepared]:
    cases = {c.id: c for c in load_suite(SUITE).cases}
    return {cid: prepare(cases[cid], rubric, PromptRenderer()) for cid in CASES}


def verdict(prep: Prepared) -> dict[str, Any]:
    """A valid verdict for this case's bundle, citing its first evidence item."""
    first = prep.bundle.ids()[0]
    return {cat: {"rationale": f"{cat} rests on the cited item.", "evidence": [first],
                  "score": AI[cat]} for cat in AI}


# --- each provider's real reply shape ------------------------------------------------------


def openai_reply(text: str, *, cached: int = 0) -> dict[str, Any]:
    return {"id": "chatcmpl-9", "object": "chat.completion", "created": 1741017600,
            "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_0ba0d124f1",
            "choices": [{"index": 0, "logprobs": None, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text, "refusal": None}}],
            "usage": {"prompt_tokens": 1800, "completion_tokens": 90, "total_tokens": 1890,
                      "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": 0}}}


def anthropic_tool_reply(text: str, *, cached: int = 0, written: int = 0) -> dict[str, Any]:
    """Claude answering a forced tool (LiteLLM's ``json_tool_call``): the verdict is its input."""
    return {"id": "msg_01", "type": "message", "role": "assistant",
            "model": "claude-3-5-haiku-20241022", "stop_reason": "tool_use",
            "stop_sequence": None,
            "content": [{"type": "tool_use", "id": "toolu_01", "name": "json_tool_call",
                         "input": json.loads(text)}],
            "usage": {"input_tokens": 1800 - cached - written, "output_tokens": 90,
                      "cache_read_input_tokens": cached,
                      "cache_creation_input_tokens": written}}


def anthropic_text_reply(text: str, *, cached: int = 0, written: int = 0) -> dict[str, Any]:
    """Claude under native structured output (``output_format``): the verdict is its text."""
    return {"id": "msg_02", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "stop_reason": "end_turn",
            "stop_sequence": None, "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 1800 - cached - written, "output_tokens": 90,
                      "cache_read_input_tokens": cached,
                      "cache_creation_input_tokens": written}}


def gemini_reply(text: str, *, cached: int = 0) -> dict[str, Any]:
    usage: dict[str, Any] = {"promptTokenCount": 1800, "candidatesTokenCount": 90,
                             "totalTokenCount": 1890}
    if cached:
        usage["cachedContentTokenCount"] = cached
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage, "modelVersion": "gemini-2.5-flash",
            "responseId": "resp-1"}


def vllm_reply(text: str, *, cached: int = 0) -> dict[str, Any]:
    reply = openai_reply(text, cached=cached)
    reply["model"] = "judge-x"
    reply.pop("system_fingerprint")
    return reply


def sent(call: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(call.request.content)
    return body


# --- what each provider must receive ------------------------------------------------------


def check_openai(body: dict[str, Any], call: Any, prep: Prepared) -> None:
    assert call.request.url == "https://api.openai.com/v1/chat/completions"
    assert call.request.headers["authorization"] == "Bearer sk-test-openai"
    assert body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0 and body["seed"] == 42 and body["max_tokens"] == 1024
    assert body["messages"] == [dict(m) for m in prep.prompt.messages]  # type: ignore[union-attr]
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "verdict", "schema": prep.schema, "strict": True}}


def _anthropic_common(body: dict[str, Any], call: Any, prep: Prepared, model: str) -> None:
    assert call.request.url == "https://api.anthropic.com/v1/messages"
    assert call.request.headers["x-api-key"] == "sk-ant-test"
    assert body["model"] == model
    assert body["temperature"] == 0 and body["max_tokens"] == 1024
    assert "seed" not in body  # Anthropic takes none; LiteLLM refuses the call if it is sent
    messages = prep.prompt.messages  # type: ignore[union-attr]
    assert [b["text"] for b in body["system"]] == [messages[0]["content"]]
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": messages[1]["content"]}]}]


def check_anthropic_tool(body: dict[str, Any], call: Any, prep: Prepared) -> None:
    _anthropic_common(body, call, prep, "claude-3-5-haiku-20241022")
    assert body["tools"] == [{"name": "json_tool_call", "input_schema": prep.schema}]
    assert body["tool_choice"] == {"name": "json_tool_call", "type": "tool"}


def check_anthropic_native(body: dict[str, Any], call: Any, prep: Prepared) -> None:
    _anthropic_common(body, call, prep, "claude-sonnet-4-5")
    assert "tools" not in body
    schema = body["output_format"]["schema"]
    assert body["output_format"]["type"] == "json_schema"
    assert prep.schema is not None
    assert schema["required"] == prep.schema["required"]
    for cat in AI:  # the citation enum survives LiteLLM's filtering of the schema
        evidence = schema["properties"][cat]["properties"]["evidence"]["items"]
        assert evidence["enum"] == list(prep.bundle.ids())


def check_gemini(body: dict[str, Any], call: Any, prep: Prepared) -> None:
    assert call.request.url.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert call.request.headers["x-goog-api-key"] == "gk-test"
    config = body["generationConfig"]
    assert config["temperature"] == 0 and config["seed"] == 42
    assert config["max_output_tokens"] == 1024
    assert config["response_mime_type"] == "application/json"
    assert config["response_json_schema"] == prep.schema
    messages = prep.prompt.messages  # type: ignore[union-attr]
    assert body["system_instruction"] == {"parts": [{"text": messages[0]["content"]}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": messages[1]["content"]}]}]


def check_vllm(body: dict[str, Any], call: Any, prep: Prepared) -> None:
    assert str(call.request.url) == f"{VLLM_BASE}/chat/completions"
    assert body["model"] == "judge-x"
    assert body["temperature"] == 0 and body["seed"] == 42 and body["max_tokens"] == 1024
    assert body["messages"] == [dict(m) for m in prep.prompt.messages]  # type: ignore[union-attr]
    assert body["response_format"] == {"type": "json_object", "schema": prep.schema}


@dataclass(frozen=True)
class Provider:
    model: str
    url: re.Pattern[str]
    reply: Callable[..., dict[str, Any]]
    check: Callable[[dict[str, Any], Any, Prepared], None]
    key: str | None = None
    api_base: str | None = None


PROVIDERS = {
    "openai": Provider("openai/gpt-4o-mini", re.compile(r"https://api\.openai\.com/.*"),
                       openai_reply, check_openai, key="sk-test-openai"),
    "anthropic-tool": Provider("anthropic/claude-3-5-haiku-20241022",
                               re.compile(r"https://api\.anthropic\.com/.*"),
                               anthropic_tool_reply, check_anthropic_tool, key="sk-ant-test"),
    "anthropic-native": Provider("anthropic/claude-sonnet-4-5",
                                 re.compile(r"https://api\.anthropic\.com/.*"),
                                 anthropic_text_reply, check_anthropic_native,
                                 key="sk-ant-test"),
    "gemini": Provider("gemini/gemini-2.5-flash",
                       re.compile(r"https://generativelanguage\.googleapis\.com/.*"),
                       gemini_reply, check_gemini, key="gk-test"),
    "vllm": Provider("hosted_vllm/judge-x", re.compile(r"http://127\.0\.0\.1:18099/.*"),
                     vllm_reply, check_vllm, api_base=VLLM_BASE),
}


def client_for(provider: Provider, **kw: Any) -> LiteLLMClient:
    return LiteLLMClient(ModelSpec(name=provider.model, api_base=provider.api_base,
                                   api_key=provider.key, timeout=5, backoff_base=0.001,
                                   backoff_max=0.002, **kw))


async def judge(prep: Prepared, rubric: Rubric, client: LiteLLMClient, model: str,
                cache: JudgmentCache | None = None,
                settings: JudgeSettings | None = None) -> CaseResult:
    return await judge_prepared(prep, rubric, rubric_hash(rubric), model,
                                settings or JudgeSettings(), cache, client, now=NOW)


async def judge_each(name: str, preps: dict[str, Prepared], rubric: Rubric,
                     settings: JudgeSettings | None = None) -> list[dict[str, Any]]:
    """Judge every case with one client of provider ``name``; the request bodies sent."""
    provider = PROVIDERS[name]
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.route(url__regex=provider.url).mock(
            side_effect=[httpx.Response(200, json=provider.reply(json.dumps(verdict(p))))
                         for p in preps.values()])
        client = client_for(provider)
        for prep in preps.values():
            result = await judge(prep, rubric, client, provider.model, settings=settings)
            assert result.status == "scored", result.reason
            assert [e.id for e in result.evidence] == [prep.bundle.ids()[0]]
    return [sent(c) for c in route.calls]


# --- the request and the reply, per provider -----------------------------------------------


@pytest.mark.parametrize("name", list(PROVIDERS))
async def test_request_and_reply_shape_per_provider(name: str, preps: dict[str, Prepared],
                                                    rubric: Rubric, tmp_path: Path) -> None:
    provider, prep = PROVIDERS[name], preps[CASES[0]]
    text = json.dumps(verdict(prep))
    with JudgmentCache(tmp_path / "cache") as cache, \
            respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.route(url__regex=provider.url).mock(
            return_value=httpx.Response(200, json=provider.reply(text)))
        result = await judge(prep, rubric, client_for(provider), provider.model, cache)
        assert route.call_count == 1
        provider.check(sent(route.calls[0]), route.calls[0], prep)
        assert result.status == "scored", result.reason
        assert {c.category: c.ai_score for c in result.category_scores} == AI
        assert result.judge is not None and result.judge.repair_turns == 0
        assert result.judge.prompt_tokens is not None and result.judge.prompt_tokens >= 1800
        entry = cache.get(result.judge.cache_key)
        assert entry is not None and json.loads(entry.turns[0].text) == verdict(prep)


@pytest.mark.parametrize("name", list(PROVIDERS))
async def test_one_http_request_per_attempt_of_ours(name: str, preps: dict[str, Prepared]
                                                    ) -> None:
    """A 500 is retried by our layer only: two attempts are exactly two requests."""
    provider, prep = PROVIDERS[name], preps[CASES[0]]
    failure = httpx.Response(500, json={"error": {"message": "overloaded", "code": 500}})
    client = client_for(provider, max_attempts=2)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.route(url__regex=provider.url).mock(return_value=failure)
        with pytest.raises(ProviderError) as info:
            await client.complete(build_request(prep, provider.model, JudgeSettings(), 0))
    assert info.value.status == 500
    assert route.call_count == 2 == client.attempts
    assert client.ledger.retries == {"5xx": 1}


# --- the prompt cache levers ----------------------------------------------------------------


async def test_cases_of_one_rubric_share_a_byte_identical_first_message(
        preps: dict[str, Prepared], rubric: Rubric) -> None:
    raw = await judge_each("openai", preps, rubric)
    first = [json.dumps(b["messages"][0], ensure_ascii=False) for b in raw]
    assert raw[0]["messages"][0]["role"] == "system"
    assert first[0] == first[1]  # the same bytes: a provider's prefix cache can reuse them
    assert raw[0]["messages"][1] != raw[1]["messages"][1]  # the case text comes after it


def _anthropic_prompt_mode() -> JudgeSettings:
    return JudgeSettings(output_mode="prompt")


async def test_anthropic_cache_control_on_the_stable_prefix_only_on_the_wire(
        preps: dict[str, Prepared], rubric: Rubric) -> None:
    """Prompt mode: no schema before the system message, so from the second case on the
    system block carries ``cache_control``; the cache key is the one an unmarked send has."""
    provider = PROVIDERS["anthropic-tool"]
    settings = _anthropic_prompt_mode()
    replies = [httpx.Response(200, json=anthropic_text_reply(json.dumps(verdict(p)),
                                                             cached=cached, written=written))
               for p, (cached, written) in zip(preps.values(), [(0, 0), (0, 600)], strict=True)]
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.route(url__regex=provider.url).mock(side_effect=replies)
        client = client_for(provider)
        results = [await judge(p, rubric, client, provider.model, settings=settings)
                   for p in preps.values()]
    bodies = [sent(c) for c in route.calls]
    system = preps[CASES[0]].prompt.messages[0]["content"]  # type: ignore[union-attr]
    assert bodies[0]["system"] == [{"type": "text", "text": system}]
    assert bodies[1]["system"] == [{"type": "text", "text": system,
                                    "cache_control": {"type": "ephemeral"}}]
    assert "tools" not in bodies[1] and "output_format" not in bodies[1]
    for prep, result in zip(preps.values(), results, strict=True):
        assert result.status == "scored", result.reason
        assert result.judge is not None
        unmarked = build_request(prep, provider.model, settings, 0)
        assert result.judge.cache_key == cache_key(unmarked.key_material())
    assert results[1].judge is not None and results[1].judge.cache_write_tokens == 600


async def test_anthropic_marker_skipped_while_the_schema_differs_per_case(
        preps: dict[str, Prepared], rubric: Rubric) -> None:
    """In a schema mode Anthropic's prefix starts with our schema (its citation enum differs
    per case): a marker there would only buy cache writes, so none is sent."""
    bodies = await judge_each("anthropic-tool", preps, rubric)
    assert len(bodies) == 2 and all("cache_control" not in json.dumps(b) for b in bodies)


@pytest.mark.parametrize("name,cached,written", [("openai", 1024, None),
                                                 ("anthropic-native", 1152, 128),
                                                 ("gemini", 1024, None),
                                                 ("vllm", 512, None)])
async def test_cached_prompt_tokens_reach_the_judgment_and_the_ledger(
        name: str, cached: int, written: int | None, preps: dict[str, Prepared],
        rubric: Rubric) -> None:
    provider, prep = PROVIDERS[name], preps[CASES[0]]
    text = json.dumps(verdict(prep))
    extra = {"written": written} if written is not None else {}
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        mock.route(url__regex=provider.url).mock(
            return_value=httpx.Response(200, json=provider.reply(text, cached=cached, **extra)))
        client = client_for(provider)
        result = await judge(prep, rubric, client, provider.model)
    meta = result.judge
    assert meta is not None and meta.cached_tokens == cached
    assert meta.cache_write_tokens == written
    tallies: dict[str, JudgeTally] = {}
    tally(tallies, result)
    entry = build_ledger(tallies, {provider.model: client})[provider.model]
    assert entry.cached_tokens == cached and entry.cache_write_tokens == (written or 0)
    assert entry.calls == 1


async def test_cached_tokens_lower_the_recorded_cost(preps: dict[str, Prepared],
                                                     rubric: Rubric) -> None:
    """gpt-4o-mini is in LiteLLM's bundled price map: cached tokens are priced at its cached
    rate, and the judgment records that lower cost."""
    provider, prep = PROVIDERS["openai"], preps[CASES[0]]
    text = json.dumps(verdict(prep))
    costs = []
    for cached in (0, 1024):
        with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
            mock.route(url__regex=provider.url).mock(
                return_value=httpx.Response(200, json=openai_reply(text, cached=cached)))
            result = await judge(prep, rubric, client_for(provider), provider.model)
        assert result.judge is not None and result.judge.cost_usd is not None
        costs.append(result.judge.cost_usd)
    full, reused = costs
    # 1024 of 1800 prompt tokens at half the input rate ($0.15/M -> $0.075/M).
    assert full - reused == pytest.approx(1024 * 0.075e-6, rel=1e-6)


async def test_stable_schema_makes_schema_and_system_one_prefix(preps: dict[str, Prepared],
                                                               rubric: Rubric) -> None:
    """``stable_schema``: the schema leads OpenAI's and Anthropic's cached prefix, so it is
    sent without the case's citation enum: byte-identical across cases, and Anthropic's
    marker follows from the second case on. Citations are still checked on the reply."""
    settings = JudgeSettings(stable_schema=True)
    bodies = {name: await judge_each(name, preps, rubric, settings)
              for name in ("openai", "anthropic-tool")}
    first, second = bodies["openai"]
    assert json.dumps(first["response_format"]) == json.dumps(second["response_format"])
    cites = first["response_format"]["json_schema"]["schema"]["properties"]["agentPerformance"]
    assert cites["properties"]["evidence"]["items"] == {"type": "string"}
    tools = [b["tools"] for b in bodies["anthropic-tool"]]
    assert tools[0] == tools[1]
    assert "cache_control" not in bodies["anthropic-tool"][0]["system"][0]
    assert bodies["anthropic-tool"][1]["system"][0]["cache_control"] == {"type": "ephemeral"}


async def test_stable_schema_still_refuses_an_unknown_citation(preps: dict[str, Prepared],
                                                               rubric: Rubric) -> None:
    provider, prep = PROVIDERS["openai"], preps[CASES[0]]
    bad = verdict(prep)
    bad["agentPerformance"]["evidence"] = ["commits:deadbeef0000"]
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.route(url__regex=provider.url).mock(side_effect=[
            httpx.Response(200, json=openai_reply(json.dumps(bad))),
            httpx.Response(200, json=openai_reply(json.dumps(verdict(prep))))])
        result = await judge(prep, rubric, client_for(provider), provider.model,
                             settings=JudgeSettings(stable_schema=True))
    assert route.call_count == 2
    assert "'commits:deadbeef0000'" in sent(route.calls[1])["messages"][-1]["content"]
    assert result.status == "scored" and result.judge is not None
    assert result.judge.repair_turns == 1


def test_stable_schema_is_its_own_request_in_the_cache_and_the_replay_index(
        fake_server: Any, workspace: Path) -> None:
    """A warm run without it replays offline; with it, the same cases are other requests
    (another schema): misses, not the verdicts the other schema got (via the replay index)."""
    base = {"model": ["hosted_vllm/fake-judge"], "api_base": fake_server.openai_base_url}
    warm = run_suite(Workspace.open(workspace, base, env={}),
                     RunRequest(suite=SUITE, check=False)).run.totals
    assert (warm.cache_misses, warm.calls) == (0, 14)  # the example's 14 LLM-judged cases
    for stable, misses in ((False, 0), (True, warm.calls)):
        ws = Workspace.open(workspace, {**base, "cache_mode": "offline",
                                        "stable_schema": stable}, env={})
        run = run_suite(ws, RunRequest(suite=SUITE, check=False)).run
        assert (run.totals.cache_misses, run.totals.calls) == (misses, 0)
        assert bool(run.settings.stable_schema) is stable  # the run says how it asked
