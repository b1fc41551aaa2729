"""The HTTP seam: LiteLLM's async path under respx, driven by a real example case.

Every request is built exactly as a run builds it (rubric task-evaluation, the example
suite's ``fix-login-redirect``, the shipped template) and answered by respx; nothing leaves
the process (``assert_all_mocked``). What is proven: the request body (temperature, seed,
response format, max_tokens), the one retry layer (429 + Retry-After, 5xx, timeouts; 4xx
never), the output-mode fallback, repair turns, and what reaches the cache.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from judge.cache.disk import JudgmentCache
from judge.core.formats.models import CaseResult
from judge.core.formats.rubric import Rubric, rubric_hash
from judge.core.scoring.replies import parse_verdict
from judge.core.text.errors import PermanentProviderError, ProviderError
from judge.engine.judging import JudgeSettings, Prepared, build_request, judge_prepared, prepare
from judge.llm.client import LiteLLMClient, ModelSpec
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric, load_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"
BASE = "http://judge.test/v1"
URL = f"{BASE}/chat/completions"
VLLM = "hosted_vllm/judge-x"
OPENAI = "openai/judge-x"
NOW = "2025-03-03T16:00:00Z"
AI = {"agentPerformance": 90, "taskOutcomeQuality": 80, "processCompliance": 70}


# --- fixtures ----------------------------------------------------------------------------


pytestmark = pytest.mark.usefixtures("litellm_httpx")  # respx sees LiteLLM's async calls


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return load_rubric("task-evaluation")


@pytest.fixture(scope="module")
def prep(rubric: Rubric) -> Prepared:
    case = next(c for c in load_suite(SUITE).cases if c.id == "fix-login-redirect")
    return prepare(case, rubric, PromptRenderer())


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[JudgmentCache]:
    with JudgmentCache(tmp_path / "cache") as store:
        yield store


def spec(name: str = VLLM, **kw: Any) -> ModelSpec:
    defaults: dict[str, Any] = {"api_base": BASE, "backoff_base": 0.01, "backoff_max": 0.05,
                                "retry_after_cap": 1.0, "max_attempts": 3}
    return ModelSpec(name=name, **{**defaults, **kw})


# --- replies -----------------------------------------------------------------------------


def verdict(prep: Prepared, **extra_top: Any) -> dict[str, Any]:
    """A valid verdict for this bundle, citing real IDs."""
    ids = prep.bundle.ids()
    assert "commits:64803fb9ec6b" in ids and "workflow:unit" in ids
    cite = {"agentPerformance": ["commits:64803fb9ec6b"],
            "taskOutcomeQuality": ["workflow:unit", "reviews:1"],
            "processCompliance": ["runAudit:evt_7f3a02"]}
    body = {cat: {"rationale": f"{cat} is grounded in the cited items.", "evidence": cite[cat],
                  "score": AI[cat]} for cat in AI}
    return {**body, **extra_top}


def completion(text: str, *, prompt_tokens: int = 1200, completion_tokens: int = 90,
               finish: str = "stop") -> httpx.Response:
    return httpx.Response(200, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1741017600,
        "model": "judge-x",
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })


def ok(prep: Prepared, **kw: Any) -> httpx.Response:
    return completion(json.dumps(verdict(prep)), **kw)


def error(status: int, message: str = "boom", **headers: str) -> httpx.Response:
    return httpx.Response(status, headers=headers, json={"error": {"message": message}})


def body(call: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(call.request.content)
    return result


async def judge(prep: Prepared, rubric: Rubric, client: LiteLLMClient | None,
                cache: JudgmentCache | None, model: str = VLLM,
                settings: JudgeSettings | None = None) -> CaseResult:
    return await judge_prepared(prep, rubric, rubric_hash(rubric), model,
                                settings or JudgeSettings(), cache, client, now=NOW)


def half_up(value: Fraction) -> int:
    return int(value + Fraction(1, 2)) if value >= 0 else -int(-value + Fraction(1, 2))


# --- the request body --------------------------------------------------------------------


async def test_hosted_vllm_body_carries_settings_and_json_object_schema(prep: Prepared) -> None:
    request = build_request(prep, VLLM, JudgeSettings(), 0)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(return_value=ok(prep))
        turn = await LiteLLMClient(spec()).complete(request)
    assert route.call_count == 1
    sent = body(route.calls[0])
    assert sent["model"] == "judge-x"
    assert sent["temperature"] == 0
    assert sent["seed"] == 42
    assert sent["max_tokens"] == 1024
    assert sent["messages"] == [dict(m) for m in prep.prompt.messages]  # type: ignore[union-attr]
    assert sent["response_format"] == {"type": "json_object", "schema": prep.schema}
    assert prep.schema is not None
    cites = prep.schema["properties"]["agentPerformance"]["properties"]["evidence"]["items"]
    assert cites["enum"] == list(prep.bundle.ids())
    assert turn.output_mode == "json_object"
    assert turn.text == json.dumps(verdict(prep))


async def test_openai_body_carries_json_schema_and_key(prep: Prepared) -> None:
    request = build_request(prep, OPENAI, JudgeSettings(), 0)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(return_value=ok(prep))
        turn = await LiteLLMClient(spec(OPENAI, api_key="sk-test")).complete(request)
    assert route.call_count == 1
    sent = body(route.calls[0])
    assert sent["temperature"] == 0
    assert sent["seed"] == 42
    assert sent["max_tokens"] == 1024
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": prep.schema, "strict": True}}
    assert route.calls[0].request.headers["authorization"] == "Bearer sk-test"
    assert turn.output_mode == "json_schema"


# --- 429 and Retry-After -----------------------------------------------------------------


@pytest.fixture
async def warm(prep: Prepared) -> None:
    """Pay litellm's one-off cost of its first mapped error (~0.4 s of lazy imports) up front.

    Without it, that cost alone can exceed a Retry-After under test and hide that the
    header was ignored (it was, for hosted_vllm/, before the client read
    ``litellm_response_headers``).
    """
    for model in (VLLM, OPENAI):
        request = build_request(prep, model, JudgeSettings(), 0)
        with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
            mock.post(URL).mock(return_value=error(429))
            with pytest.raises(ProviderError):
                await LiteLLMClient(spec(model, api_key="sk-test", max_attempts=1)).complete(
                    request)


@pytest.mark.parametrize("model,key", [(VLLM, None), (OPENAI, "sk-test")])
async def test_429_waits_retry_after_then_succeeds(prep: Prepared, warm: None, model: str,
                                                   key: str | None) -> None:
    request = build_request(prep, model, JudgeSettings(), 0)
    client = LiteLLMClient(spec(model, api_key=key))
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[error(429, **{"Retry-After": "0.3"}), ok(prep)])
        started = time.monotonic()
        turn = await client.complete(request)
        elapsed = time.monotonic() - started
    assert route.call_count == 2
    assert 0.3 <= elapsed < 1.5
    assert client.attempts == 2 and client.retries == 1
    assert json.loads(turn.text) == verdict(prep)


async def test_429_without_retry_after_uses_the_short_backoff(prep: Prepared,
                                                              warm: None) -> None:
    # The contrast that makes the test above meaningful: no header, no 0.3 s wait.
    request = build_request(prep, VLLM, JudgeSettings(), 0)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[error(429), ok(prep)])
        started = time.monotonic()
        await LiteLLMClient(spec()).complete(request)
        elapsed = time.monotonic() - started
    assert route.call_count == 2
    assert elapsed < 0.25


@pytest.mark.parametrize("model,key", [(VLLM, None), (OPENAI, "sk-test")])
async def test_retry_after_above_the_cap_is_capped(prep: Prepared, warm: None, model: str,
                                                   key: str | None) -> None:
    request = build_request(prep, model, JudgeSettings(), 0)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[error(429, **{"Retry-After": "30"}), ok(prep)])
        started = time.monotonic()
        await LiteLLMClient(spec(model, api_key=key, retry_after_cap=0.2)).complete(request)
        elapsed = time.monotonic() - started
    assert route.call_count == 2
    assert 0.2 <= elapsed < 2.0


@pytest.mark.parametrize("value", ["soon", "Wed, 21 Oct 2015 07:28:00 -0000"])
async def test_unreadable_or_past_retry_after_falls_back_to_backoff(prep: Prepared,
                                                                    value: str) -> None:
    # A malformed header once escaped as a raw ValueError and aborted the whole run.
    request = build_request(prep, VLLM, JudgeSettings(), 0)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[error(429, **{"Retry-After": value}), ok(prep)])
        started = time.monotonic()
        await LiteLLMClient(spec()).complete(request)
    assert route.call_count == 2
    assert time.monotonic() - started < 2.0


# --- transient faults: retried, then unscored and uncached -------------------------------

TRANSIENT: dict[str, httpx.Response | Exception] = {
    "500": error(500),
    "503": error(503, "overloaded"),
    "read-timeout": httpx.ReadTimeout("read timed out"),
}


@pytest.mark.parametrize("fault", list(TRANSIENT))
async def test_transient_faults_retry_up_to_max_attempts_then_raise(prep: Prepared,
                                                                    fault: str) -> None:
    request = build_request(prep, VLLM, JudgeSettings(), 0)
    client = LiteLLMClient(spec(max_attempts=3))
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[TRANSIENT[fault]] * 10)
        with pytest.raises(ProviderError) as info:
            await client.complete(request)
    assert not isinstance(info.value, PermanentProviderError)
    assert route.call_count == 3
    assert client.attempts == 3 and client.retries == 2
    assert info.value.status == {"500": 500, "503": 503, "read-timeout": 408}[fault]


@pytest.mark.parametrize("fault", list(TRANSIENT))
async def test_transient_fault_leaves_case_unscored_and_uncached(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache, fault: str) -> None:
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[TRANSIENT[fault]] * 10)
        result = await judge(prep, rubric, LiteLLMClient(spec(max_attempts=2)), cache)
    assert route.call_count == 2
    assert result.status == "unscored"
    assert result.reason is not None and result.reason.startswith("provider error")
    assert result.overall_score is None
    assert len(cache) == 0


@pytest.mark.parametrize("status", [400, 401])
async def test_4xx_is_not_retried(prep: Prepared, rubric: Rubric, cache: JudgmentCache,
                                  status: int) -> None:
    request = build_request(prep, VLLM, JudgeSettings(), 0)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(return_value=error(status, "nope"))
        with pytest.raises(PermanentProviderError) as info:
            await LiteLLMClient(spec(max_attempts=4)).complete(request)
        assert route.call_count == 1
        assert info.value.status == status
        result = await judge(prep, rubric, LiteLLMClient(spec(max_attempts=4)), cache)
    assert route.call_count == 2  # one more request for the judged case, no retry
    assert result.status == "unscored"
    assert result.reason is not None and result.reason.startswith("provider error")
    assert len(cache) == 0


@pytest.mark.parametrize("model,key", [(VLLM, None), (OPENAI, "sk-test")])
async def test_litellm_hidden_retries_are_off(prep: Prepared, model: str,
                                              key: str | None) -> None:
    request = build_request(prep, model, JudgeSettings(), 0)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(return_value=error(500))
        with pytest.raises(ProviderError):
            await LiteLLMClient(spec(model, api_key=key, max_attempts=1)).complete(request)
    assert route.call_count == 1


# --- output-mode fallback ----------------------------------------------------------------


async def test_json_schema_rejected_falls_back_to_json_object(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache) -> None:
    client = LiteLLMClient(spec(OPENAI, api_key="sk-test"))
    rejected = error(500, "response_format type json_schema is not supported")
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[rejected, ok(prep)])
        result = await judge(prep, rubric, client, cache, model=OPENAI)
    assert route.call_count == 2
    first, second = body(route.calls[0]), body(route.calls[1])
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object", "schema": prep.schema}
    assert first["messages"] == second["messages"]
    assert result.status == "scored"
    assert result.judge is not None and result.judge.output_mode == "json_object"
    entry = cache.get(result.judge.cache_key)
    assert entry is not None
    assert [t.output_mode for t in entry.turns] == ["json_object"]
    assert entry.request["outputMode"] == "auto"  # the configured mode keys the cache

    # The client remembers: the next request for that model starts in json_object.
    request = build_request(prep, OPENAI, JudgeSettings(seed=7), 0)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(return_value=ok(prep))
        turn = await client.complete(request)
    assert route.call_count == 1
    assert body(route.calls[0])["response_format"]["type"] == "json_object"
    assert turn.output_mode == "json_object"


async def test_plain_500_is_not_a_mode_rejection(prep: Prepared) -> None:
    request = build_request(prep, OPENAI, JudgeSettings(), 0)
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(return_value=error(500, "upstream crashed"))
        with pytest.raises(ProviderError):
            await LiteLLMClient(spec(OPENAI, api_key="sk-test", max_attempts=2)).complete(request)
    assert [body(c)["response_format"]["type"] for c in route.calls] == ["json_schema"] * 2


# --- repair turns ------------------------------------------------------------------------

BAD_JSON = '{"agentPerformance": {"rationale": "fine", "evidence": [], "score": oops}}'


async def test_malformed_reply_gets_one_repair_turn_then_scores_and_caches(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache) -> None:
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[
            completion(BAD_JSON, prompt_tokens=1200, completion_tokens=30),
            ok(prep, prompt_tokens=1300, completion_tokens=90)])
        result = await judge(prep, rubric, LiteLLMClient(spec()), cache)
        assert route.call_count == 2

        original = [dict(m) for m in prep.prompt.messages]  # type: ignore[union-attr]
        repair = body(route.calls[1])["messages"]
        assert repair[:2] == original
        assert repair[2] == {"role": "assistant", "content": BAD_JSON}
        assert repair[3]["role"] == "user" and len(repair) == 4
        assert "invalid JSON" in repair[3]["content"]
        assert repair[3]["content"].startswith("Your reply was not a valid verdict:")
        # Same settings on the repair turn.
        assert body(route.calls[1])["seed"] == 42
        assert body(route.calls[1])["response_format"] == body(route.calls[0])["response_format"]

        assert result.status == "scored"
        assert result.judge is not None
        assert result.judge.repair_turns == 1 and result.judge.cached is False
        assert result.judge.prompt_tokens == 2500 and result.judge.completion_tokens == 120
        assert len(cache) == 1
        entry = cache.get(result.judge.cache_key)
        assert entry is not None
        assert [t.text for t in entry.turns] == [BAD_JSON, json.dumps(verdict(prep))]

        # Judged again: from the cache, no request, same scores.
        again = await judge(prep, rubric, LiteLLMClient(spec()), cache)
        assert route.call_count == 2
    assert again.status == "scored"
    assert again.judge is not None and again.judge.cached is True
    assert again.judge.repair_turns == 1
    assert again.overall_score == result.overall_score
    assert again.category_scores == result.category_scores
    assert again.model_dump(exclude={"judge"}) == result.model_dump(exclude={"judge"})


async def test_still_invalid_after_repair_is_unscored_and_uncached(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache) -> None:
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[completion(BAD_JSON),
                                                 completion("I cannot judge this.")])
        result = await judge(prep, rubric, LiteLLMClient(spec()), cache)
    assert route.call_count == 2
    assert result.status == "unscored"
    assert result.reason is not None and "invalid verdict" in result.reason
    assert result.judge is not None and result.judge.repair_turns == 1
    assert result.overall_score is None
    assert len(cache) == 0


async def test_unknown_evidence_id_is_rejected_and_shown_in_the_repair(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache) -> None:
    bad = verdict(prep)
    bad["taskOutcomeQuality"]["evidence"] = ["commits:deadbeef0000"]
    assert "commits:deadbeef0000" not in prep.bundle.ids()
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[completion(json.dumps(bad)), ok(prep)])
        result = await judge(prep, rubric, LiteLLMClient(spec()), cache)
    assert route.call_count == 2
    repair = body(route.calls[1])["messages"][-1]["content"]
    assert "'commits:deadbeef0000'" in repair
    assert "taskOutcomeQuality.evidence" in repair
    assert result.status == "scored"
    assert {e.id for e in result.evidence} <= set(prep.bundle.ids())
    assert "commits:deadbeef0000" not in {e.id for e in result.evidence}


# --- the model's own numbers are ignored -------------------------------------------------


async def test_model_written_overall_and_final_scores_are_ignored(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache) -> None:
    reply = verdict(prep, overallScore=100, finalScore=100, band="excellent")
    for cat in AI:
        reply[cat]["finalScore"] = 100
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        route = mock.post(URL).mock(return_value=completion(json.dumps(reply)))
        result = await judge(prep, rubric, LiteLLMClient(spec()), cache)
    assert route.call_count == 1
    assert result.status == "scored"

    # Recomputed here from the contract: 0.7 deterministic + 0.3 AI, half-up, then weights.
    det = prep.case.deterministic
    assert det == {"agentPerformance": 86, "taskOutcomeQuality": 84, "processCompliance": 82}
    weights = {"agentPerformance": Fraction(30, 100), "taskOutcomeQuality": Fraction(45, 100),
               "processCompliance": Fraction(25, 100)}
    finals = {c: half_up(Fraction(7, 10) * det[c] + Fraction(3, 10) * AI[c]) for c in AI}
    assert finals == {"agentPerformance": 87, "taskOutcomeQuality": 83, "processCompliance": 78}
    overall = half_up(sum((finals[c] * weights[c] for c in AI), Fraction(0)))
    assert overall == 83
    assert result.overall_score == overall != 100
    assert {c.category: c.final_score for c in result.category_scores} == finals
    assert {c.category: c.ai_score for c in result.category_scores} == AI
    assert result.band == "strong"


# --- usage and cost ----------------------------------------------------------------------


async def test_usage_recorded_and_unknown_cost_is_none(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache) -> None:
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        mock.post(URL).mock(return_value=ok(prep, prompt_tokens=1234, completion_tokens=56))
        result = await judge(prep, rubric, LiteLLMClient(spec()), cache)
    meta = result.judge
    assert meta is not None
    assert meta.prompt_tokens == 1234 and meta.completion_tokens == 56
    assert meta.cost_usd is None
    assert meta.model_reported == "judge-x"
    assert meta.finish_reason == "stop"
    assert meta.latency_ms is not None and meta.latency_ms >= 0
    entry = cache.get(meta.cache_key)
    assert entry is not None and entry.data["turns"][0]["costUsd"] is None


async def test_the_embedded_judge_costs_nothing(
        prep: Prepared, rubric: Rubric, cache: JudgmentCache) -> None:
    """A judge served on this machine has a known price, zero: "no paid calls", not unknown."""
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        mock.post(URL).mock(return_value=ok(prep, prompt_tokens=1234, completion_tokens=56))
        result = await judge(prep, rubric, LiteLLMClient(spec(on_this_machine=True)), cache)
    assert result.judge is not None and result.judge.cost_usd == 0.0
    entry = cache.get(result.judge.cache_key)
    assert entry is not None and entry.data["turns"][0]["costUsd"] == 0.0
    # The parser agrees with what was scored (no hidden second parse path).
    parsed = parse_verdict(entry.turns[-1].text, rubric, prep.bundle.ids())
    assert {c: s.score for c, s in parsed.items()} == AI


def test_litellm_still_has_what_quiet_exit_reads() -> None:
    # judge.llm.client.quiet_exit asks litellm's callback manager whether any callback is
    # registered (public), then unregisters its logging worker's exit flush (a private
    # name, registered with atexit by litellm): this fails when a release moves either.
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    from judge.llm.client import load_litellm

    lit = load_litellm()
    assert lit.logging_callback_manager.get_all_callbacks() == []

    def hook(*_: object) -> None:
        """A user's callback."""

    lit.success_callback.append(hook)
    try:
        assert hook in lit.logging_callback_manager.get_all_callbacks()
    finally:
        lit.success_callback.remove(hook)
    assert callable(GLOBAL_LOGGING_WORKER._flush_on_exit)
    assert callable(lit.close_litellm_async_clients)  # aclose_clients: the public name
