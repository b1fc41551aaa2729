"""The one-case API, ``judge.evaluate``, and the lazily imported public surface of ``judge``."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE_SUITE, judge_env

import judge
from judge.core.formats.models import CaseResult
from judge.core.formats.rubric import rubric_hash
from judge.system.resources import load_rubric

MODEL = "hosted_vllm/fake-judge"
CASES = yaml.safe_load(EXAMPLE_SUITE.read_text())["cases"]
LLM_CASE = next(c for c in CASES if c["id"] == "fix-login-redirect")
DET_CASE = next(c for c in CASES if c.get("judged_by") == "deterministic")


def test_evaluate_then_cached(fake_server: Any, tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"rubric": "task-evaluation", "model": MODEL,
                              "api_base": fake_server.base_url + "/v1",
                              "cache": tmp_path / "cache"}
    first = judge.evaluate(LLM_CASE, **kwargs)
    assert isinstance(first, CaseResult)
    assert first.id == "fix-login-redirect" and first.status == "scored", first.reason
    assert first.overall_score is not None and first.band and first.passed is not None
    meta = first.judge
    assert meta is not None
    assert meta.model == MODEL and meta.output_mode == "json_object"
    assert meta.seed == 42 and meta.temperature == 0 and meta.cached is False
    assert meta.rubric_hash == rubric_hash(load_rubric("task-evaluation"))
    assert meta.template_id == "judge" and len(meta.template_hash) == 64
    assert meta.prompt_tokens and meta.completion_tokens
    assert [c.category for c in first.category_scores] == \
        ["agentPerformance", "taskOutcomeQuality", "processCompliance"]
    requests = fake_server.stats()["requests"]
    assert requests == 1

    again = judge.evaluate(LLM_CASE, **kwargs)
    assert again.judge is not None and again.judge.cached is True
    assert fake_server.stats()["requests"] == requests
    assert again.model_copy(update={"judge": None}) == first.model_copy(update={"judge": None})
    assert again.judge.model_copy(update={"cached": False}) == meta


def test_evaluate_offline_empty_cache_is_a_miss(fake_server: Any, tmp_path: Path) -> None:
    result = judge.evaluate(LLM_CASE, model=MODEL, api_base=fake_server.base_url + "/v1",
                            cache=tmp_path / "empty", cache_mode="offline")
    assert result.status == "cache_miss" and result.overall_score is None
    assert result.reason and "not in the cache" in result.reason
    assert fake_server.stats()["requests"] == 0


def test_evaluate_offline_opens_no_socket_and_skips_litellm(tmp_path: Path) -> None:
    probe = (
        "import socket, sys, yaml\n"
        "def deny(*a, **k):\n"
        "    raise AssertionError('socket opened')\n"
        "socket.socket.connect = deny\n"
        "socket.create_connection = deny\n"
        "import judge\n"
        f"case = [c for c in yaml.safe_load(open({str(EXAMPLE_SUITE)!r}))['cases']"
        " if c['id'] == 'fix-login-redirect'][0]\n"
        f"r = judge.evaluate(case, model='hosted_vllm/x', cache={str(tmp_path / 'c')!r},"
        " cache_mode='offline')\n"
        "assert 'litellm' not in sys.modules, 'litellm imported'\n"
        "print(r.status)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, text=True,
                          capture_output=True, env=judge_env(), timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "cache_miss"


def test_deterministic_case_needs_no_model(fake_server: Any, tmp_path: Path) -> None:
    result = judge.evaluate(DET_CASE, model=MODEL, api_base=fake_server.base_url + "/v1",
                            cache=tmp_path / "cache")
    assert result.status == "scored" and result.judged_by == "deterministic"
    assert result.judge is None
    assert result.checks and len(result.checks) == len(DET_CASE["checks"])
    assert result.overall_score is not None
    assert all(c.rule == "deterministic_only" for c in result.category_scores)
    assert fake_server.stats()["requests"] == 0


def test_public_surface_is_sorted_complete_and_resolves() -> None:
    names = judge.__all__
    assert names == sorted(names) and len(set(names)) == len(names)
    assert set(names) == set(judge._WHERE)
    for name in names:
        value = getattr(judge, name)
        module = importlib.import_module(f"judge.{judge._WHERE[name]}")
        assert value is getattr(module, name)
        assert name in getattr(module, "__all__", [name]), f"{name} not public in {module}"
    assert sorted(dir(judge)) == sorted([*names, "__version__"])
    with pytest.raises(AttributeError):
        judge.no_such_name  # noqa: B018


def test_import_judge_is_light() -> None:
    probe = ("import sys, judge\n"
             "assert judge.compute_final_score(75, 80) == 77\n"
             "assert judge.compute_overall_score is not None\n"
             "heavy = sorted(m for m in ('litellm', 'sqlalchemy', 'httpx', 'openai')"
             " if m in sys.modules)\n"
             "print(heavy)\n")
    proc = subprocess.run([sys.executable, "-c", probe], text=True, capture_output=True,
                          env=judge_env(), timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout  # no litellm, no store, no HTTP client
