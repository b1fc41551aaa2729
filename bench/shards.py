"""Issue 16's benchmarks: sharded runs into one PostgreSQL store, and reading a big store.

(a) throughput of 2 shard processes (``--shard 1/2`` and ``2/2``, one group, one store)
    against 1 process judging the whole suite, fake judge at 0 ms latency (target >= 1.6x
    on 2 cores). The fake judge runs in its own process; each run has its own cold cache.
(b) ``judge history`` and ``judge show RUN`` (whole process) on a store holding 100,000
    case results (100 runs of 1,000), on PostgreSQL and on SQLite (target <= 0.5 s each);
    plus the store's own part in-process: get_run + iter_results of one run.

PostgreSQL: JUDGE_TEST_POSTGRES_URL, else a throwaway cluster from .ci/postgres.sh.
Run:   .venv/bin/python bench/shards.py [--cases N] [--results N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from run import MODEL, clean_env, judge_cmd, write_suite  # noqa: E402

from judge.models import CaseResult, CategoryScore, JudgeMeta, RunInfo  # noqa: E402
from judge.store import RunStore  # noqa: E402


def postgres() -> tuple[str, bool]:
    """A server URL, and whether we started it (and must stop it)."""
    url = os.environ.get("JUDGE_TEST_POSTGRES_URL")
    if url:
        return url, False
    out = subprocess.run([str(ROOT / ".ci" / "postgres.sh"), "start", "55499"], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    for line in out.splitlines():
        if "JUDGE_TEST_POSTGRES_URL=" in line:
            return line.split("=", 1)[1].strip(), True
    raise RuntimeError(out)


def fresh_db(server: str, name: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    admin = create_engine(server, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server).set(database=name).render_as_string(hide_password=False)


def fake_judge() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fake_server.py"), "--port",
                             "0", "--latency-ms", "0", "--seed", "7"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"fake judge: {line!r}")
    return proc, line.split()[1]


def timed_runs(commands: list[list[str]], cwd: list[Path]) -> float:
    """Start every command at once; the wall time until the last one ends."""
    started = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=d, env=clean_env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
             for c, d in zip(commands, cwd, strict=True)]
    for p in procs:
        _, err = p.communicate(timeout=1800)
        if p.returncode != 0:
            raise RuntimeError(f"exit {p.returncode}: {err[-2000:]}")
    return time.perf_counter() - started


def shards(server: str, cases: int, tmp: Path, repeats: int) -> dict[str, Any]:
    suite = tmp / "suite.jsonl"
    write_suite(suite, cases)
    judge_proc, base = fake_judge()
    one: list[float] = []
    two: list[float] = []
    try:
        for k in range(repeats):
            for label, parts in (("one", 1), ("two", 2)):
                url = fresh_db(server, f"bench_shards_{label}_{k}")
                dirs, cmds = [], []
                for i in range(1, parts + 1):
                    d = tmp / f"{label}{k}-{i}"
                    d.mkdir()
                    args = ["run", str(suite), "--model", MODEL, "--api-base", base + "/v1",
                            "--store", url, "--concurrency", "32", "--no-check"]
                    if parts > 1:
                        args += ["--shard", f"{i}/{parts}", "--group", f"bench-{k}"]
                    dirs.append(d)
                    cmds.append(judge_cmd(*args))
                (one if parts == 1 else two).append(timed_runs(cmds, dirs))
    finally:
        judge_proc.kill()
        judge_proc.wait(timeout=10)
    w1, w2 = statistics.median(one), statistics.median(two)
    return {"cases": cases, "one_process_s": w1, "two_shards_s": w2,
            "one_cases_per_s": cases / w1, "two_cases_per_s": cases / w2, "speedup": w1 / w2}


def result(i: int, run_id: str) -> CaseResult:
    meta = JudgeMeta(model=MODEL, outputMode="json_object", temperature=0.0, seed=42,
                     templateId="judge", templateHash="t" * 64, rubricHash="r" * 64,
                     cacheKey=f"{i:064x}", cached=False, promptTokens=1800,
                     completionTokens=240, latencyMs=12.5)
    score = 40 + i % 60
    cats = tuple(CategoryScore(category=c, weight=w, deterministicScore=score, aiScore=score,
                               finalScore=score, band="acceptable")
                 for c, w in (("agentPerformance", 0.3), ("taskOutcomeQuality", 0.45),
                              ("processCompliance", 0.25)))
    return CaseResult(id=f"case-{i:06d}", status="scored", overallScore=score,
                      band="acceptable", passed=score >= 60, categoryScores=cats, judge=meta)


def fill(url: str, total: int, per_run: int) -> str:
    with RunStore(url) as store:
        last = ""
        for r in range(total // per_run):
            run = RunInfo(id=f"run-{r:04d}", suite="bench", rubric="task-evaluation",
                          rubricHash="r" * 64, models=(MODEL,), seed=42, temperature=0.0,
                          templateId="judge", templateHash="t" * 64,
                          createdAt=f"2026-01-01T00:{r // 60:02d}:{r % 60:02d}Z",
                          status="complete")
            store.create_run(run)
            batch = [result(i, run.id) for i in range(per_run)]
            for start in range(0, per_run, 1000):
                store.add_results(run.id, batch[start:start + 1000])
            last = run.id
    return last


def reading(url: str, run_id: str, tmp: Path, repeats: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, args in (("history", ["history", "--store", url]),
                       ("show", ["show", run_id, "--store", url])):
        walls = []
        for _ in range(repeats):
            started = time.perf_counter()
            subprocess.run(judge_cmd(*args), cwd=tmp, env=clean_env(), check=True,
                           capture_output=True, timeout=300)
            walls.append(time.perf_counter() - started)
        out[name] = statistics.median(walls)
    with RunStore(url) as store:
        started = time.perf_counter()
        store.get_run(run_id)
        n = sum(1 for _ in store.iter_results(run_id))
        out["store_read_one_run_s"] = time.perf_counter() - started
        out["store_read_rows"] = n
        started = time.perf_counter()
        store.list_runs(limit=20)
        out["store_list_runs_s"] = time.perf_counter() - started
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--per-run", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    server, ours = postgres()
    try:
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            load = os.getloadavg()[0]
            s = shards(server, args.cases, tmp, args.repeats)
            print(f"(a) {s['cases']} cases, 0 ms judge, PostgreSQL store: 1 process "
                  f"{s['one_process_s']:.2f} s ({s['one_cases_per_s']:.0f} cases/s), 2 shard "
                  f"processes {s['two_shards_s']:.2f} s ({s['two_cases_per_s']:.0f} cases/s): "
                  f"**{s['speedup']:.2f}x** (target >= 1.6x); load average before {load:.2f}")
            for engine in ("postgresql", "sqlite"):
                url = (fresh_db(server, "bench_read") if engine == "postgresql"
                       else f"sqlite:///{tmp / 'read.db'}")
                started = time.perf_counter()
                run_id = fill(url, args.results, args.per_run)
                filled = time.perf_counter() - started
                r = reading(url, run_id, tmp, args.repeats)
                print(f"(b) {engine}: store of {args.results:,} case results "
                      f"({args.results // args.per_run} runs, written in {filled:.1f} s): "
                      f"`judge history` {r['history']:.2f} s, `judge show RUN` "
                      f"({args.per_run:,} cases) {r['show']:.2f} s whole process; in-process "
                      f"list_runs {r['store_list_runs_s'] * 1000:.0f} ms, get_run + "
                      f"iter_results of one run {r['store_read_one_run_s'] * 1000:.0f} ms")
    finally:
        if ours:
            subprocess.run([str(ROOT / ".ci" / "postgres.sh"), "stop"], check=False,
                           timeout=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
