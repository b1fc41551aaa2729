"""Secrets that arrive as data: a key pasted into a case's text is masked
at load, before the prompt and the cache key; a key a judge repeats in its rationale is masked
before the reply is cached, parsed or stored. One masker: judge.core.text.secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import respx
from test_client_respx import NOW, URL, VLLM, completion, spec, verdict

from judge.app.runs.running import RunRequest, RunSetup, setup_run
from judge.app.workspace.workspace import Workspace
from judge.cache.disk import JudgmentCache
from judge.core.formats.rubric import rubric_hash
from judge.core.formats.suite import Case, SuiteLine, parse_suite
from judge.core.text.secrets import MASK
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
    assert KEY not in json.dumps(entry.data) and MASK in json.dumps(entry.data)
    assert KEY not in result.model_dump_json() and MASK in result.model_dump_json()


def _jsonl_run(tmp_path: Path, lines: list[str]) -> tuple[RunSetup, Path]:
    """A JSONL run set up (its first pass done) in a workspace with a judge named."""
    (tmp_path / "judge.toml").write_text('model = "hosted_vllm/fake"\n', encoding="utf-8")
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    setup = setup_run(Workspace.open(tmp_path, env={}), RunRequest(suite=suite, check=False))
    return setup, suite


def test_the_second_pass_masks_what_the_first_pass_masked_or_did_not_read(
        tmp_path: Path) -> None:
    plain = {"id": "a", "input": "fix the redirect", "output": "done"}
    keyed = {"id": "b", "input": f"deploy with {KEY}", "output": "done"}
    later = {"id": "c", "input": "rotate nothing", "output": "done"}
    setup, suite = _jsonl_run(tmp_path, [json.dumps(plain), json.dumps(keyed),
                                         json.dumps(later)])
    # The file changes between the passes: the third line now holds a key.
    edited = {**later, "input": f"rotate {KEY}"}
    suite.write_text("".join(json.dumps(d) + "\n" for d in (plain, keyed, edited)),
                     encoding="utf-8")
    lines = list(setup.cases())
    assert [getattr(x, "clean", None) for x in lines] == [True, False, False]
    cases = [x.case() if isinstance(x, SuiteLine) else x for x in lines]
    assert [c.input for c in cases] == ["fix the redirect", f"deploy with {MASK}",
                                        f"rotate {MASK}"]
    # A clean line read without the walk gives the case masking would have given.
    assert cases[0] == Case.model_validate(plain)
