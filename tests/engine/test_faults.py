"""Faults lose nothing: 300 generated cases against a fake judge that fails 30% of attempts.

Every fault kind the fake server knows is on (429 with Retry-After, 500, 503, a hang past
the client timeout, a connection reset, a truncated body, a body that is not JSON, JSON that
breaks the schema, ``finish_reason: length``, citations of unknown evidence). The run must
finish with exit 0, every case scored or unscored with a reason, no traceback, a cache
with only valid verdicts in it, and totals that add up. Once the faults stop, a re-run asks
the model again for exactly the cases that were unscored, and nothing else.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from conftest import judge_env, load_fake_server, run_judge

MODEL = "hosted_vllm/fake-judge"
CASES = 300
TIMEOUT_S = 2.0
# Run-time knobs through the environment, as a user would set them (judge/config.py).
FAULT_ENV = {"JUDGE_TIMEOUT": str(TIMEOUT_S), "JUDGE_MAX_ATTEMPTS": "3"}


def write_generated_suite(path: Path, count: int, suite_id: str = "faults") -> list[Any]:
    """A JSONL suite of ``count`` seeded task-evaluation cases; returns the cases."""
    from judge.app.workspace.fixtures import generate_cases
    from judge.core.text.canonical import canonical_json
    from judge.system.resources import load_rubric

    suite = generate_cases(suite_id, count, rubric=load_rubric("task-evaluation"))
    path.write_text("".join(
        canonical_json(c.model_dump(mode="json", exclude_defaults=True)) + "\n"
        for c in suite.cases), encoding="utf-8")
    return list(suite.cases)


def assert_cache_holds_only_valid_verdicts(cache_dir: Path, cases: list[Any],
                                           keys: dict[str, str]) -> int:
    """Every entry parses into a valid verdict for its own case; returns the entry count.

    ``keys`` maps a cache key to the id of the case the run said it belongs to.
    """
    from judge.cache.disk import JudgmentCache
    from judge.core.formats.evidence import build_bundle
    from judge.core.scoring.replies import parse_verdict
    from judge.system.resources import load_rubric

    rubric = load_rubric("task-evaluation")
    by_id = {c.id: c for c in cases}
    count = 0
    with JudgmentCache(cache_dir, "read-only") as cache:
        for entry in cache.iter_entries():
            count += 1
            assert entry.key in keys, f"cache entry {entry.key[:16]} of no scored case"
            case = by_id[keys[entry.key]]
            ids = build_bundle(case.evidence, rubric.evidence).ids()
            parse_verdict(entry.turns[-1].text, rubric, ids)  # raises if invalid
    return count


def _run(workspace: Path, base_url: str) -> tuple[int, dict[str, Any], str]:
    proc = run_judge(["run", "suite.jsonl", "--model", MODEL, "--api-base", f"{base_url}/v1",
                      "--concurrency", "32", "--json", "--no-check"], workspace,
                     env=judge_env(**FAULT_ENV), timeout=240)
    payload = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, payload, proc.stderr


def test_mixed_faults_lose_nothing_and_rerun_asks_only_for_the_unscored(
        workspace: Path) -> None:
    fake = load_fake_server()
    cases = write_generated_suite(workspace / "suite.jsonl", CASES)
    llm_ids = {c.id for c in cases if c.judged_by == "llm"}
    server = fake.start_in_thread(latency_ms=0, seed=11, fault_rate=0.3,
                                  faults=list(fake.FAULT_KINDS), retry_after=0.1,
                                  hang_seconds=TIMEOUT_S + 0.5)
    try:
        code, first, err = _run(workspace, server.base_url)
        stats = server.stats()
        assert code == 0, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        results = first["cases"]
        assert len(results) == CASES and {r["id"] for r in results} == {c.id for c in cases}
        for r in results:
            assert r["status"] in {"scored", "unscored"}, r
            if r["status"] == "unscored":
                assert r["reason"], r
        unscored = {r["id"] for r in results if r["status"] == "unscored"}
        # Fault draws are a function of (seed, request, attempt): this seed leaves some
        # cases unscored every time, so the re-run below has work to do.
        assert unscored
        totals = first["run"]["totals"]
        assert totals["scored"] + totals["unscored"] == totals["cases"] == CASES
        assert totals["unscored"] == len(unscored)
        assert totals["calls"] == stats["requests"], (totals, stats)
        # The faults really happened, of every kind, and some cases survived them only
        # thanks to retries and repair turns.
        assert set(stats["faults"]) >= set(fake.FAULT_KINDS), stats["faults"]
        assert stats["requests"] > len(llm_ids)
        # No fault made the client give up structured output for the rest of the run.
        assert {r["judge"]["outputMode"] for r in results if r["status"] == "scored"} \
            == {"json_object"}

        verify = run_judge(["cache", "verify", "--json"], workspace)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        report = json.loads(verify.stdout)
        assert report["corrupt"] == [] and report["ok"] == report["checked"]
        keys = {r["judge"]["cacheKey"]: r["id"] for r in results if r["status"] == "scored"}
        entries = assert_cache_holds_only_valid_verdicts(workspace / "cache", cases, keys)
        assert entries == report["checked"] == len(llm_ids - unscored)

        # The faults stop: only what was unscored is asked again, once each.
        server.set_options(fault_rate=0)
        before = server.stats()["requests"]
        code, second, err = _run(workspace, server.base_url)
        assert code == 0, err[-3000:]
        assert "Traceback" not in err
        assert server.stats()["requests"] - before == len(unscored & llm_ids)
        assert all(r["status"] == "scored" for r in second["cases"])
        fresh = {r["id"] for r in second["cases"] if r["judge"] and not r["judge"]["cached"]}
        assert fresh == unscored & llm_ids
        assert second["run"]["totals"]["calls"] == len(unscored & llm_ids)
    finally:
        server.stop()
    print(f"faults: {stats['faults']}; {len(unscored)} unscored of {CASES}; "
          f"{stats['requests']} requests", file=sys.stderr)



async def test_a_reply_without_choices_is_a_failed_attempt_not_a_crash() -> None:
    """``200 {"choices": []}`` (a provider's content filter) is retried, then unscored.

    It used to raise a bare IndexError out of the client, which aborted the whole run.
    """
    from aiohttp import web

    from judge.core.text.errors import ProviderError
    from judge.llm.client import JudgeRequest, LiteLLMClient, ModelSpec

    seen = 0

    async def empty(_request: web.Request) -> web.Response:
        nonlocal seen
        seen += 1
        return web.json_response({"id": "x", "object": "chat.completion", "created": 1,
                                  "model": "fake-judge", "choices": []})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", empty)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        port = runner.addresses[0][1]
        client = LiteLLMClient(ModelSpec(name=MODEL, api_base=f"http://127.0.0.1:{port}/v1",
                                         timeout=5, max_attempts=2, backoff_base=0.01))
        request = JudgeRequest(model=MODEL, messages=({"role": "user", "content": "hi"},),
                               temperature=0, seed=1, schema=None, output_mode="auto")
        try:
            await client.complete(request)
        except ProviderError as exc:
            assert "malformed completion" in str(exc)
        else:
            raise AssertionError("an empty choices list must not pass as a completion")
        assert seen == client.attempts == 2
    finally:
        await runner.cleanup()
