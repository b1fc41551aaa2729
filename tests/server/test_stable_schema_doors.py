"""``stable_schema`` through every door: ``judge run --stable-schema``, ``judge.evaluate``
and the HTTP run body all change the reply schema sent, and the results stay scored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from conftest import EXAMPLE_SUITE, judge_env, run_judge

import judge
from judge.server.schemas import HarnessBody

MODEL = "hosted_vllm/fake-judge"
CASES = yaml.safe_load(EXAMPLE_SUITE.read_text())["cases"]
LLM_CASES = [c for c in CASES if c.get("judged_by") != "deterministic"]


def _run(fake_server: Any, cwd: Path, *flags: str, **env: str) -> dict[str, Any]:
    fake_server.reset_stats()
    out = run_judge(["run", str(EXAMPLE_SUITE), "--model", MODEL, "--api-base",
                     fake_server.openai_base_url, "--no-check", "--cache-mode", "refresh",
                     "--json", *flags], cwd, env=judge_env(**env))
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def test_run_flag_sends_one_schema_per_rubric(fake_server: Any, workspace: Path) -> None:
    per_case = _run(fake_server, workspace, "--no-stable-schema", JUDGE_STABLE_SCHEMA="true")
    assert fake_server.stats()["distinct_schemas"] == len(LLM_CASES)  # each case's enum
    assert "stableSchema" not in per_case["run"]["settings"]
    stable = _run(fake_server, workspace, "--stable-schema")
    stats = fake_server.stats()
    assert stats["distinct_schemas"] == 1 and stats["requests"] == len(LLM_CASES)
    assert stable["run"]["settings"]["stableSchema"] is True
    assert stable["summary"]["scored"] == per_case["summary"]["scored"] == len(CASES)
    assert {c["status"] for c in stable["cases"]} == {"scored"}


def test_evaluate_takes_stable_schema(fake_server: Any, tmp_path: Path) -> None:
    kwargs = {"model": MODEL, "api_base": fake_server.openai_base_url,
              "cache": str(tmp_path / "c"), "workspace": tmp_path}
    for case in LLM_CASES[:2]:
        result = judge.evaluate(case, stable_schema=True, **kwargs)
        assert result.status == "scored"
    assert fake_server.stats()["distinct_schemas"] == 1
    judge.evaluate(LLM_CASES[0], **kwargs)  # the per-case schema is another request
    assert fake_server.stats()["distinct_schemas"] == 2


def test_http_run_body_maps_stable_schema() -> None:
    assert HarnessBody(stable_schema=True).overrides()["stable_schema"] is True
    assert HarnessBody().overrides()["stable_schema"] is None  # unset: the workspace's
