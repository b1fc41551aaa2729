"""A loopback judge that answers 0: the degenerate-judge notice in the summary, ``--json``,
the HTML report's banner and the canary; a varied judge gets none."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, judge_env, load_fake_server, run_judge

ZERO = "hosted_vllm/fake-judge+-100"  # every integer shifted down by 100: clamped to 0
VARIED = "hosted_vllm/fake-judge"
ENV = judge_env(JUDGE_API_KEY="sk-fake-health")


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    handle = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        yield handle
    finally:
        handle.stop()


def _ws(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLE_SUITE, tmp_path / "suite.yaml")
    return tmp_path


def test_zero_judge_is_called_degenerate_at_every_door(tmp_path: Path, server: Any) -> None:
    ws = _ws(tmp_path)
    base = ["--model", ZERO, "--api-base", server.base_url + "/v1", "--no-check"]
    text = run_judge(["run", "suite.yaml", *base], ws, env=ENV)
    assert text.returncode == 0, text.stderr
    assert "⚠ the judge looks degenerate" in text.stdout
    assert "constant AI scores: all 42 are 0" in text.stdout
    as_json = run_judge(["run", "suite.yaml", *base, "--json"], ws, env=ENV)
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    health = doc["summary"]["judgeHealth"]
    assert health["problems"] == ["constant AI scores: all 42 are 0"]
    assert (health["distinctScores"], health["topScore"], health["topShare"]) == (1, 0, 1.0)
    page = run_judge(["report", doc["run"]["id"], "-o", "r.html"], ws, env=ENV)
    assert page.returncode == 0, page.stderr
    html = (ws / "r.html").read_text(encoding="utf-8")
    assert 'id="judge-health"' in html and "constant AI scores: all 42 are 0" in html
    canary = run_judge(["judges", "canary", "suite.yaml", "--sample", "6", "--model", ZERO,
                        "--api-base", server.base_url + "/v1", "--json"], ws, env=ENV)
    assert canary.returncode == 0, canary.stderr
    summary = json.loads(canary.stdout)["summary"]
    assert "judge health: constant AI scores: all 18 are 0" in summary["notices"]
    assert summary["judgeHealth"]["distinctScores"] == 1


def test_varied_judge_gets_no_notice(tmp_path: Path, server: Any) -> None:
    ws = _ws(tmp_path)
    done = run_judge(["run", "suite.yaml", "--model", VARIED, "--api-base",
                      server.base_url + "/v1", "--no-check", "--json"], ws, env=ENV)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["summary"]["judgeHealth"]["problems"] == []
    assert doc["summary"]["judgeHealth"]["distinctScores"] >= 5
    page = run_judge(["report", doc["run"]["id"], "-o", "r.html"], ws, env=ENV)
    assert page.returncode == 0, page.stderr
    assert 'id="judge-health"' not in (ws / "r.html").read_text(encoding="utf-8")
