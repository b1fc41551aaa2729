"""Issue 16: shared-tier hit latency, against a local hit.

N entries of a realistic size (a ~10 KB prompt each) are pushed to a fresh PostgreSQL
database; then, per key, the time of one ``turns(key)`` (what a judgment reads):

- local hit: :class:`judge.cache.disk.JudgmentCache` holding every entry;
- local miss -> shared hit, read-write: :class:`judge.cache.tiers.TieredCache` over an
  empty folder (fetch, digest and full entry check, copy into the local folder);
- local miss -> shared hit, read-only: the same without the copy (the fetch and checks);
- after the copy: the same TieredCache again, now local hits.

Median and p95 in microseconds per hit. PostgreSQL: JUDGE_TEST_POSTGRES_URL, else a throwaway
cluster from .ci/postgres.sh (as bench/shards.py).
Run:   .venv/bin/python bench/shared_tier.py [--entries N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from shards import fresh_db, postgres  # noqa: E402

from judge.cache.disk import JudgmentCache  # noqa: E402
from judge.cache.entry import CacheEntry, build_entry  # noqa: E402
from judge.cache.tiers import TieredCache  # noqa: E402
from judge.core.formats.turns import CachedTurn  # noqa: E402
from judge.core.text.canonical import canonical_json  # noqa: E402

PROMPT = "Evidence: the agent ran the tests and they passed. " * 200  # ~10 KB


def entries(n: int) -> list[CacheEntry]:
    out: list[CacheEntry] = []
    for i in range(n):
        request = {"model": "openai/gpt-4o-mini", "temperature": 0, "seed": 42,
                   "messages": [{"role": "system", "content": "You are a judge."},
                                {"role": "user", "content": f"case {i}\n{PROMPT}"}],
                   "outputMode": "json_schema", "params": {"max_tokens": 1024}}
        turn = {"text": '{"scores": {"correctness": {"score": 4, "rationale": "ok"}}}',
                "finishReason": "stop", "promptTokens": 2500, "completionTokens": 40}
        out.append(build_entry(request, [CachedTurn(turn)],
                               {"createdAt": "2026-01-01T00:00:00Z", "templateId": "judge"}))
    return out


def timed(cache: JudgmentCache, keys: list[str]) -> list[float]:
    """Microseconds per ``turns(key)``; every one must hit."""
    took: list[float] = []
    for key in keys:
        start = time.perf_counter_ns()
        found = cache.turns(key)
        took.append((time.perf_counter_ns() - start) / 1000)
        assert found is not None, key
    return took


def line(name: str, took: list[float]) -> str:
    p95 = statistics.quantiles(took, n=20)[-1]
    return f"| {name} | {statistics.median(took):,.0f} | {p95:,.0f} | {len(took)} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=2000)
    args = parser.parse_args()
    server, ours = postgres()
    try:
        url = fresh_db(server, "bench_shared_tier")
        made = entries(args.entries)
        keys = [e.key for e in made]
        with tempfile.TemporaryDirectory() as tmp:
            full = Path(tmp) / "full"
            with JudgmentCache(full) as local:
                for e in made:
                    local.put(e)
            with TieredCache(Path(tmp) / "seed", shared_url=url) as seeder:
                tier = seeder.shared()
                assert tier is not None
                tier.put_many([(e.key, canonical_json(e.data).encode()) for e in made])
            rows = []
            with JudgmentCache(full, "read-only") as local:
                timed(local, keys[:100])  # warm the page cache and the connection
                rows.append(line("local hit (JudgmentCache)", timed(local, keys)))
            with TieredCache(Path(tmp) / "ro", "read-only", shared_url=url) as ro:
                timed(ro, keys[:100])
                rows.append(line("local miss -> shared hit, read-only (no copy)",
                                 timed(ro, keys)))
            with TieredCache(Path(tmp) / "rw", shared_url=url) as rw:
                rows.append(line("local miss -> shared hit, read-write (copied locally)",
                                 timed(rw, keys)))
                assert rw.counters()["copiedLocal"] == len(keys)
                rows.append(line("the same keys again (now local hits)", timed(rw, keys)))
        size = len(canonical_json(made[0]))
        print(f"{args.entries} entries of {size:,} bytes; PostgreSQL on loopback\n")
        print("| path | median µs/hit | p95 µs | hits |")
        print("|---|---:|---:|---:|")
        print("\n".join(rows))
    finally:
        if ours:
            subprocess.run([str(ROOT / ".ci" / "postgres.sh"), "stop"], check=False,
                           capture_output=True, timeout=120)


if __name__ == "__main__":
    main()
