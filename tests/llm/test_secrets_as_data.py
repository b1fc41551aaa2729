"""Secrets that arrive as data (issue 34, item 8): a key pasted into a case's text is masked
at load, before the prompt and the cache key; a key a judge repeats in its rationale is masked
before the reply is cached, parsed or stored. One masker: judge.core.secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import respx
from test_client_respx import NOW, URL, VLLM, completion, spec, verdict

from judge.cache.disk import JudgmentCache
from judge.core.rubric import rubric_hash
from judge.core.secrets import MASK
from judge.core.suite import Case, parse_suite
from judge.engine.judging import JudgeSettings, judge_prepared, prepare
from judge.llm.client import LiteLLMClient
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric, load_suite

pytestmark = pytest.mark.usefixtures("litellm_httpx")

KEY = "sk-proj-Zq8mT3vX9bK2nW5rY7cH1dF4"
ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"


def test_a_key_in_evidence_input_or_output_is_masked_at_load() -> None:
    case = Case.model_validate({
        "id": "c1", "input": f"deploy with {KEY}", "output": {"text": f"used {KEY}"},
        "evidence": {"commits": [{"sha": "abc123", "subject": f"add key {KEY}"}]},
        "metadata": {"note": f"OPENAI_API_KEY={KEY}"}})
    dumped = json.dumps(case.model_dump(mode="json"))
    assert KEY not in dumped and dumped.count(MASK) == 4
    # The compiled form of a YAML suite is written from the masked text too.
    suite = parse_suite(f"cases:\n  - id: c1\n    output: 'key {KEY}'\n", "s.yaml", "s")
    assert KEY not in suite.cases[0].model_dump_json()


def test_the_prompt_and_cache_key_cover_the_masked_text() -> None:
    rubric = load_rubric("task-evaluation")
    renderer = PromptRenderer()
    with_key = Case.model_validate({"id": "c1", "input": f"use {KEY} now", "output": "ok"})
    masked = Case.model_validate({"id": "c1", "input": f"use {MASK} now", "output": "ok"})
    one, two = prepare(with_key, rubric, renderer), prepare(masked, rubric, renderer)
    assert KEY not in json.dumps(one.prompt.messages)
    assert one.prompt.messages == two.prompt.messages  # the key covers the masked text


def test_a_case_without_secrets_is_unchanged() -> None:
    case = next(c for c in load_suite(SUITE).cases if c.id == "fix-login-redirect")
    raw = Case.model_validate(case.model_dump(mode="json"))
    assert raw == case and MASK not in case.model_dump_json()


async def test_a_key_repeated_by_the_judge_never_reaches_the_cache_or_result(
        tmp_path: Path) -> None:
    rubric = load_rubric("task-evaluation")
    case = next(c for c in load_suite(SUITE).cases if c.id == "fix-login-redirect")
    prep = prepare(case, rubric, PromptRenderer())
    reply = verdict(prep)
    reply["agentPerformance"]["rationale"] = f"The agent printed the key {KEY} in a log."
    client = LiteLLMClient(spec(VLLM))
    with JudgmentCache(tmp_path / "cache") as cache, \
            respx.mock(assert_all_mocked=True, assert_all_called=True) as mock:
        mock.post(URL).mock(return_value=completion(json.dumps(reply)))
        result = await judge_prepared(prep, rubric, rubric_hash(rubric), VLLM,
                                      JudgeSettings(), cache, client, now=NOW)
        assert result.status == "scored" and result.judge is not None
        entry = cache.get(result.judge.cache_key)
    assert entry is not None
    assert KEY not in json.dumps(entry) and MASK in json.dumps(entry)
    assert KEY not in result.model_dump_json() and MASK in result.model_dump_json()
