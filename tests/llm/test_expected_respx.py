"""``score_mode = "expected"`` over the HTTP seam: OpenAI-style ``logprobs`` through LiteLLM,
kept in the cache, read again on replay; no log-probabilities means unscored, never a
silent fallback to the written answer."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from judge.cache.disk import JudgmentCache
from judge.core.formats.rubric import rubric_hash
from judge.engine.judging import JudgeSettings, Prepared, build_request, judge_prepared, prepare
from judge.llm.client import LiteLLMClient, ModelSpec
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric, load_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"
BASE = "http://judge.test/v1"
URL = f"{BASE}/chat/completions"
OPENAI = "openai/judge-x"
RUBRIC = load_rubric("task-evaluation")
EXPECTED = JudgeSettings(score_mode="expected",
                         params={"max_tokens": 1024, "logprobs": True, "top_logprobs": 20})
WRITTEN = {"agentPerformance": "75", "taskOutcomeQuality": "50", "processCompliance": "100"}
# Alternatives at each answer's first digit: (token, probability)
ALTS = {"agentPerformance": [("7", 0.6), ("5", 0.3), ("x", 0.1)],     # 0.6*75+0.3*50 / 0.9
        "taskOutcomeQuality": [("5", 1.0)],
        "processCompliance": [("1", 0.5), ("0", 0.5)]}

pytestmark = pytest.mark.usefixtures("litellm_httpx")


@pytest.fixture(scope="module")
def prep() -> Prepared:
    case = next(c for c in load_suite(SUITE).cases if c.id == "fix-login-redirect")
    return prepare(case, RUBRIC, PromptRenderer(template="judge-small"))


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[JudgmentCache]:
    with JudgmentCache(tmp_path / "cache") as store:
        yield store


def _reply() -> tuple[str, list[dict[str, Any]]]:
    """The reply's text and its ``logprobs.content``: one token per character."""
    text, starts = "{", {}
    for n, (cat, value) in enumerate(WRITTEN.items()):
        text += (", " if n else "") + f'"{cat}": {{"score": '
        starts[len(text)] = cat
        text += value + ', "rationale": "Six unit tests and an approving review.", ' \
                        '"evidence": ["reviews:1"]}'
    text += "}"
    content = []
    for pos, ch in enumerate(text):
        alts = ALTS[starts[pos]] if pos in starts else [(ch, 1.0)]
        own = dict(alts).get(ch, 1.0)
        content.append({"token": ch, "logprob": math.log(own), "bytes": None,
                        "top_logprobs": [{"token": a, "logprob": math.log(p), "bytes": None}
                                         for a, p in alts]})
    return text, content


def _completion(text: str, content: list[dict[str, Any]] | None) -> httpx.Response:
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": text}}
    if content is not None:
        choice["logprobs"] = {"content": content}
    return httpx.Response(200, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1741017600,
        "model": "judge-x", "choices": [choice],
        "usage": {"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020}})


async def test_expected_scores_from_openai_logprobs_cached_and_replayed(
        prep: Prepared, cache: JudgmentCache) -> None:
    text, content = _reply()
    client = LiteLLMClient(ModelSpec(name=OPENAI, api_base=BASE, api_key="sk-test"))
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(URL).mock(return_value=_completion(text, content))
        result = await judge_prepared(prep, RUBRIC, rubric_hash(RUBRIC), OPENAI, EXPECTED,
                                      cache, client, now="2026-12-02T07:00:00Z")
    sent = json.loads(route.calls[0].request.content)
    assert sent["logprobs"] is True and sent["top_logprobs"] == 20
    score = sent["response_format"]["json_schema"]["schema"]["properties"]["agentPerformance"]
    assert next(iter(score["properties"])) == "score"
    assert score["properties"]["score"]["enum"] == [0, 25, 50, 75, 100]
    ai = {c.category: c.ai_score for c in result.category_scores}
    # (0.6*75 + 0.3*50) / 0.9 = 66.67 -> 67; 50; (0.5*100 + 0.5*0) = 50
    assert ai == {"agentPerformance": 67, "taskOutcomeQuality": 50, "processCompliance": 50}
    assert result.judge is not None and result.judge.score_mode == "expected"
    # Replayed from the cache with no client: the same expected scores, from stored logprobs.
    again = await judge_prepared(prep, RUBRIC, rubric_hash(RUBRIC), OPENAI, EXPECTED, cache,
                                 None, now="2026-12-02T07:01:00Z")
    assert again.judge is not None and again.judge.cached
    assert {c.category: c.ai_score for c in again.category_scores} == ai
    # The direct mode reads the written answers, under another key.
    direct = build_request(prep, OPENAI, JudgeSettings(), 0)
    assert direct.key_material() != build_request(prep, OPENAI, EXPECTED, 0).key_material()


async def test_no_logprobs_is_unscored_never_the_written_answer(
        prep: Prepared, cache: JudgmentCache) -> None:
    text, _ = _reply()
    client = LiteLLMClient(ModelSpec(name=OPENAI, api_base=BASE, api_key="sk-test"))
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(URL).mock(return_value=_completion(text, None))
        result = await judge_prepared(prep, RUBRIC, rubric_hash(RUBRIC), OPENAI, EXPECTED,
                                      cache, client, now="2026-12-02T07:00:00Z")
    assert route.call_count == 2  # the reply and one repair turn, both without logprobs
    assert result.status == "unscored"
    assert "no log-probabilities" in (result.reason or "")
    assert all(c.ai_score is None for c in result.category_scores)
