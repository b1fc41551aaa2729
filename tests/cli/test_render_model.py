"""`judge render --model M` shows what that judge receives: the loopback fake judge records
every request a run sends, and the render must equal it, judge by judge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, judge_env, run_judge

CASE = "add-csv-export"
FAKE = "hosted_vllm/fake-judge"


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLE_SUITE, tmp_path / "suite.yaml")
    return tmp_path


def _render(root: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = run_judge(["render", "suite.yaml", "--case", CASE, "--json", *args], root, env=env)
    assert done.returncode == 0, done.stderr
    rendered: dict[str, Any] = json.loads(done.stdout)
    return rendered


def _sent(fake_server: Any, root: Path, env: dict[str, str] | None = None,
          exit_code: int = 0) -> dict[str, Any]:
    """The first request body a run of CASE sent the fake judge."""
    fake_server.reset_stats()
    done = run_judge(["run", "suite.yaml", "--case", CASE, "--model", FAKE, "--api-base",
                      fake_server.openai_base_url, "--no-check", "--json"], root, env=env)
    assert done.returncode == exit_code, done.stderr
    body: dict[str, Any] = fake_server.received()[0]
    return body


def _assert_sent(rendered: dict[str, Any], body: dict[str, Any]) -> None:
    """The body is the rendered request, as LiteLLM adapts it to an OpenAI-style server."""
    request = rendered["request"]
    assert body["messages"] == rendered["messages"]
    assert body["response_format"] == request["response_format"]
    assert body["response_format"]["schema"] == rendered["schema"]
    assert body["model"] == request["model"].removeprefix("hosted_vllm/")
    # Everything else sent is rendered; the seed may be left out where LiteLLM says the
    # provider does not take it.
    sent = {k: v for k, v in body.items() if k not in ("messages", "model")}
    assert sent.get("seed", request["seed"]) == request["seed"] == 42
    assert sent | {"seed": 42} == {k: v for k, v in request.items() if k != "model"}


def test_render_for_a_hosted_judge_is_what_a_run_sends(fake_server: Any,
                                                       suite_dir: Path) -> None:
    rendered = _render(suite_dir, "--model", FAKE)
    assert rendered["templateId"] == "judge"
    assert rendered["judge"] == {"model": FAKE, "sentAs": FAKE, "outputMode": "json_object",
                                 "fallbacks": ["prompt"], "scoreMode": "direct"}
    _assert_sent(rendered, _sent(fake_server, suite_dir))


def test_render_for_a_local_judge_is_what_its_server_is_sent(fake_server: Any,
                                                             suite_dir: Path) -> None:
    """A local/ judge gets judge-small and the expected score: what a run sends with those
    settings to an OpenAI-style server on loopback, as the embedded judge's server is one."""
    rendered = _render(suite_dir, "--model", "local/smollm2")
    assert rendered["templateId"] == "judge-small"
    assert rendered["judge"] == {"model": "local/smollm2", "sentAs": "hosted_vllm/smollm2",
                                 "outputMode": "json_object", "fallbacks": ["prompt"],
                                 "scoreMode": "expected"}
    assert rendered["request"]["logprobs"] is True
    # The answer first, on the closed scale: the expected score's schema, not the rubric's.
    category = rendered["schema"]["properties"]["agentPerformance"]
    assert category["required"][0] == "score" and "enum" in category["properties"]["score"]
    as_local = judge_env(JUDGE_TEMPLATE="judge-small", JUDGE_SCORE_MODE="expected")
    # The fake answers without log-probabilities, so the case ends unscored (exit 4): the
    # request is what is compared.
    body = _sent(fake_server, suite_dir, env=as_local, exit_code=4)
    _assert_sent({**rendered, "request": {**rendered["request"], "model": FAKE}}, body)
    # A hosted judge named explicitly keeps the hosted defaults; a flag still wins.
    assert _render(suite_dir, "--model", "openai/gpt-4o-mini")["judge"]["outputMode"] == \
        "json_schema"
    assert _render(suite_dir, "--model", "local/smollm2", "--template",
                   "judge")["templateId"] == "judge"


def test_render_text_names_the_judge_and_its_request(suite_dir: Path) -> None:
    done = run_judge(["render", "suite.yaml", "--case", CASE, "--model", "local/smollm2"],
                     suite_dir)
    assert done.returncode == 0, done.stderr
    heads = [line for line in done.stdout.splitlines() if line.startswith("=== ")]
    assert heads == ["=== system ===", "=== user ===", "=== template ===", "=== judge ===",
                     "=== request (without its messages) ===", "=== response schema ==="]
    assert "(default for local/ judges)" in done.stdout
    assert ("local/smollm2 (sent as hosted_vllm/smollm2): output mode json_object (if "
            "refused: prompt); score mode expected") in done.stdout
