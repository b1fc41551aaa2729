"""Two `judge run` processes at once, overlapping suites, one workspace and one cache.

Cases 0-59 and 30-89 of one generated suite are judged at the same time through the
fake judge, into the same cache directory (and the same run store). Afterwards
`judge cache verify` finds no corrupt entry and exactly one entry per case of the union,
and an offline replay of all 90 cases misses nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import judge_env, load_fake_server, run_judge
from forked import spawn_judge
from test_faults import write_generated_suite

MODEL = "hosted_vllm/fake-judge"
CONCURRENCY = 8
HALF, OVERLAP = 30, 30
"""Each process judges HALF + OVERLAP cases; OVERLAP of them are the other's too."""


def test_two_processes_share_one_cache_without_loss(workspace: Path) -> None:
    cases = write_generated_suite(workspace / "all.jsonl", 2 * HALF + OVERLAP,
                                  suite_id="shared-cache")
    lines = (workspace / "all.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (workspace / "first.jsonl").write_text("".join(lines[:HALF + OVERLAP]), encoding="utf-8")
    (workspace / "second.jsonl").write_text("".join(lines[HALF:]), encoding="utf-8")
    llm = [c for c in cases if c.judged_by == "llm"]
    # A slow judge until both processes are calling it (however late the second one starts
    # on a busy machine), then a fast one: their calls and cache writes interleave.
    server = load_fake_server().start_in_thread(latency_ms=1000, seed=5)
    try:
        procs = [spawn_judge(
            ["run", name, "--model", MODEL, "--api-base", f"{server.base_url}/v1",
             "--concurrency", str(CONCURRENCY), "--json", "--no-check"], workspace, judge_env())
            for name in ("first.jsonl", "second.jsonl")]
        deadline = time.monotonic() + 120
        while (server.stats()["in_flight"] <= CONCURRENCY and time.monotonic() < deadline
               and all(p.poll() is None for p in procs)):
            time.sleep(0.05)
        server.set_options(latency_ms=20)
        outputs = []
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=180)
            finally:
                proc.kill()  # no-op once it has exited; never leave one behind
            assert proc.returncode == 0, err[-3000:]
            assert "Traceback" not in err
            outputs.append(json.loads(out))
        stats = server.stats()
    finally:
        server.stop()

    # Both were calling the server at the same time (one alone never exceeds its limit).
    assert stats["max_in_flight"] > CONCURRENCY, stats
    for payload in outputs:
        totals = payload["run"]["totals"]
        assert totals["cases"] == totals["scored"] == HALF + OVERLAP
        assert totals["calls"] + totals["cacheHits"] == HALF + OVERLAP
    calls = sum(p["run"]["totals"]["calls"] for p in outputs)
    assert calls == stats["requests"]
    # Each case of the union was asked at least once; the overlap at most twice.
    assert len(llm) <= stats["requests"] <= len(llm) + OVERLAP
    assert stats["distinct_requests"] == len(llm)

    verify = run_judge(["cache", "verify", "--json"], workspace)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    report = json.loads(verify.stdout)
    assert report["corrupt"] == []
    assert report["checked"] == report["ok"] == len(llm)

    replay = run_judge(["run", "all.jsonl", "--model", MODEL, "--offline", "--json",
                        "--no-check"], workspace)
    assert replay.returncode == 0, replay.stderr[-3000:]
    payload = json.loads(replay.stdout)
    assert payload["run"]["totals"]["cacheMisses"] == 0
    assert payload["run"]["totals"]["cacheHits"] == len(llm)
    assert all(c["status"] == "scored" for c in payload["cases"])
