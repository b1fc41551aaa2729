"""What the strict JSON reader costs where a record is machine-written and checked anyway.

Files a person edits or a tool hands over are read by ``judge.core.text.strict_json``; a store
value (read after its seal) and a cache entry (checked by its digest) keep ``json.loads``
where the strict reader measured slower. This measures, in one process, medians of 7 rounds
and same-run ratios:

- parsing the result values of a stored run and the entries of its cache export, and the
  shipped local cache's entries (``examples/task-evaluation/local-smollm2.cache.jsonl``);
- ``judge cache import`` of the export, with the strict reader (as shipped) and with
  ``json.loads`` in its place;
- the gate's missing-row check (``RunStore.check_rows``) on a run of 100,000 result rows.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/strict_json_cost.py`` (about a minute).
"""

from __future__ import annotations

import importlib
import io
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import judge.cache.interchange as interchange
from judge.cache.disk import JudgmentCache
from judge.cli import main
from judge.core.formats.models import RunInfo, RunTotals
from judge.core.text.strict_json import loads_strict
from judge.store.runs import RunStore

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 7


def _median(work: Callable[[], object]) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _judge(args: list[str], cwd: Path) -> None:
    saved = Path.cwd()
    try:
        os.chdir(cwd)
        try:
            main(args)
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
    finally:
        os.chdir(saved)


def _workspace() -> Path:
    """A workspace after one run of the example suite against the loopback fake judge."""
    sys.path.insert(0, str(ROOT / "tests" / "fakes"))  # the loopback fake judge
    fake = importlib.import_module("fake_server")
    ws = Path(tempfile.mkdtemp(prefix="strict-json-"))
    shutil.copy(ROOT / "examples" / "task-evaluation" / "suite.yaml", ws / "suite.yaml")
    server = fake.start_in_thread(latency_ms=0, seed=7)
    try:
        _judge(["run", "suite.yaml", "--model", "hosted_vllm/fake-judge", "--api-base",
                f"{server.base_url}/v1", "--no-check"], ws)
        _judge(["cache", "export", "export.jsonl"], ws)
    finally:
        server.stop()
    return ws


def _parse_row(label: str, texts: list[str]) -> str:
    fast = _median(lambda: [json.loads(t) for t in texts]) / len(texts)
    strict = _median(lambda: [loads_strict(t) for t in texts]) / len(texts)
    size = statistics.mean(len(t) for t in texts)
    return (f"| {label} | {len(texts)} | {size / 1024:.1f} KB | {fast * 1e6:.1f} | "
            f"{strict * 1e6:.1f} | {strict / fast:.2f}x |")


def _import_time(text: str, parse: Any) -> float:
    def once() -> None:
        folder = Path(tempfile.mkdtemp())
        interchange.CacheInterchange(JudgmentCache(folder, "read-write")).import_jsonl(
            io.StringIO(text))
        shutil.rmtree(folder)
    saved = interchange.loads_strict
    interchange.loads_strict = parse  # type: ignore[assignment]
    try:
        return _median(once)
    finally:
        interchange.loads_strict = saved


def _check_rows_time() -> float:
    folder = Path(tempfile.mkdtemp())
    url = f"sqlite:///{folder / 'j.db'}"
    with RunStore(url) as store:
        run = RunInfo(id="r1", suite="s", rubric="task-evaluation", rubric_hash="h",
                      models=("m",), seed=0, temperature=0.0, template_id="t",
                      template_hash="h", created_at="2026-12-06T00:00:00Z")
        store.create_run(run)
        run = store.finish_run("r1", totals=RunTotals(cases=100_000, judgments=100_000),
                               status="complete")
    with sqlite3.connect(folder / "j.db") as conn:
        conn.executemany("INSERT INTO case_results VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                         [("r1", f"c{i:06d}", "m", 0, "scored", 50, "weak", 0, "{}", 1, None)
                          for i in range(100_000)])
    with RunStore(url) as store:
        took = _median(lambda: store.check_rows(run))
    shutil.rmtree(folder)
    return took


def main_bench() -> None:
    """Print the tables."""
    ws = _workspace()
    with sqlite3.connect(ws / ".judge" / "judge.db") as conn:
        results = [str(t) for (t,) in conn.execute("SELECT result_json FROM case_results")]
    export = (ws / "export.jsonl").read_text(encoding="utf-8")
    shipped = (ROOT / "examples" / "task-evaluation" / "local-smollm2.cache.jsonl").read_text(
        encoding="utf-8")
    print("| records | count | mean size | json.loads us | strict us | strict/loads |")
    print("|---|---|---|---|---|---|")
    print(_parse_row("stored result values", results))
    print(_parse_row("cache entries (fake judge)", export.splitlines()))
    print(_parse_row("cache entries (shipped local cache)", shipped.splitlines()))
    lines = len(export.splitlines())
    strict, fast = _import_time(export, loads_strict), _import_time(export, json.loads)
    print(f"\n`judge cache import` of {lines} entries: strict {strict * 1e3:.1f} ms, json.loads "
          f"{fast * 1e3:.1f} ms, ratio {strict / fast:.2f}x")
    print(f"`RunStore.check_rows` on 100,000 result rows: {_check_rows_time() * 1e3:.1f} ms")
    shutil.rmtree(ws)


if __name__ == "__main__":
    main_bench()
