"""A JSONL suite named ``suite.jsonl``, named from inside its folder, works with every command
that takes a suite: each sees the folder's suite, the id ``judge run`` stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import load_fake_server, run_judge

MODEL = "hosted_vllm/fake-judge"
FOLDER = "checkout-agent"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, Any]]:
    root = tmp_path_factory.mktemp("jsonl") / FOLDER
    root.mkdir()
    cases = [{"id": f"c{i}", "input": f"task {i}", "output": f"answer {i}",
              "deterministic": {"agentPerformance": 40 + 10 * i, "taskOutcomeQuality": 50,
                                "processCompliance": 60},
              "human": {"overall": 30 + 12 * i}} for i in range(5)]
    (root / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        proc = run_judge(["run", "suite.jsonl", "--model", MODEL, "--api-base",
                          f"{server.base_url}/v1", "--seed", "1", "--json"], root)
        assert proc.returncode == 0, proc.stderr
        run = json.loads(proc.stdout)["run"]
        assert run["suite"] == FOLDER
        yield root, run["id"], server
    finally:
        server.stop()


def _ok(root: Path, *args: str) -> str:
    proc = run_judge(list(args), root)
    assert proc.returncode == 0, (args, proc.stderr)
    assert "is suite 'suite'" not in proc.stderr
    return proc.stdout


def test_every_command_that_takes_a_suite_sees_the_folders_suite(
        ws: tuple[Path, str, Any]) -> None:
    root, run_id, server = ws
    base = ["--model", MODEL, "--api-base", f"{server.base_url}/v1", "--seed", "1"]
    assert json.loads(_ok(root, "check", "--suite", "suite.jsonl", "--json"))["suite"] == FOLDER
    assert FOLDER in _ok(root, "baseline", "show", "suite.jsonl")
    _ok(root, "baseline", "record", "suite.jsonl")
    history = json.loads(_ok(root, "agreement", "--suite", "suite.jsonl", "--json"))
    assert history["suite"] == FOLDER and history["rows"][0]["runId"] == run_id
    assert json.loads(_ok(root, "agreement", run_id, "--suite", "suite.jsonl",
                          "--json"))["labelled"] == 5
    compared = json.loads(_ok(root, "compare", run_id, "--suite", "suite.jsonl", "--json"))
    assert compared["humanLabelled"] == 5
    _ok(root, "suite", "validate", "suite.jsonl")
    assert FOLDER in _ok(root, "suite", "show", "suite.jsonl")
    assert "answer 0" in _ok(root, "render", "suite.jsonl", "--case", "c0")
    (root / "judged.jsonl").write_text(json.dumps({"case": "c1", "judge": "recorded", "scores": {
        "agentPerformance": 50, "taskOutcomeQuality": 60, "processCompliance": 70}}) + "\n")
    imported = json.loads(_ok(root, "import", "judged.jsonl", "--suite", "suite.jsonl",
                              "--json"))
    assert imported["runs"][0]["run"]["suite"] == FOLDER
    probe = json.loads(_ok(root, "noise", "probe", "suite.jsonl", *base, "--cases", "2",
                           "--samples", "2", "--json"))
    assert probe["suite"] == FOLDER
    canary = _ok(root, "canary", "suite.jsonl", "--sample", "2", "--model", MODEL,
                 "--api-base", f"{server.base_url}/v1", "--judge-seed", "1", "--json")
    shown = json.loads(_ok(root, "show", json.loads(canary)["run"], "--json"))
    assert shown["run"]["suite"] == f"{FOLDER}:canary"
