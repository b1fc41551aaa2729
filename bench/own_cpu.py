"""judgeflow's own CPU per judgment of a cold run, in-process, with no model client at all.

``run_suite`` (the operation behind ``judge run``) over N generated task-evaluation cases
into a fresh workspace (its cache, store and replay index written as a real run writes
them), the judge an in-process completer that answers at once with a schema-valid verdict.
So neither LiteLLM nor HTTP is in the figure: what is left is ours (prepare, render, key,
cache write, parse, score, store, summary). The completer's own CPU (drawing the verdict)
is measured and taken out. Marginal: (CPU(N) - CPU(n)) / (N - n), which drops the fixed
cost of opening a workspace. The process is tuned as the CLI tunes its own (collector
thresholds, heap settled before the run).

Rerun (about a minute quiet):

    PYTHONPATH=. .venv/bin/python bench/own_cpu.py             # median of 3, 2,000 cases
    PYTHONPATH=. .venv/bin/python bench/own_cpu.py --profile   # + cProfile, our functions

``--write`` puts the row into ``bench/RESULTS.md`` between its markers.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fakes"))  # the loopback fake judge

from fake_server import generate_instance  # noqa: E402

from judge.app.runs.running import RunRequest, run_suite  # noqa: E402
from judge.app.workspace.fixtures import generate_cases  # noqa: E402
from judge.app.workspace.workspace import Workspace  # noqa: E402
from judge.core.text.canonical import canonical_json  # noqa: E402
from judge.llm.client import Completion  # noqa: E402
from judge.system.resources import load_rubric  # noqa: E402
from judge.system.tuning import settle_heap, tune_process  # noqa: E402

MODEL = "hosted_vllm/fake-judge"
RESULTS = ROOT / "bench" / "RESULTS.md"
MARK_START = "<!-- bench/own_cpu.py: start -->"
MARK_END = "<!-- bench/own_cpu.py: end -->"


class FakeCompleter:
    """Answers at once with a schema-valid verdict (as the fake server would); its CPU is kept."""

    engine = None
    max_concurrency = None
    attempts = 0
    retries = 0

    def __init__(self) -> None:
        self.cpu = 0.0

    async def complete(self, request: Any, messages: Any = None) -> Any:
        start = time.process_time()
        seed = request.messages[-1]["content"]
        text = json.dumps(generate_instance(dict(request.schema or {}), random.Random(seed)))
        turn = Completion(text=text, finish_reason="stop", model_reported="fake-judge",
                          prompt_tokens=1, completion_tokens=1, cost_usd=None, latency_ms=0.0,
                          output_mode="json_object")
        self.attempts += 1
        self.cpu += time.process_time() - start
        return turn


@dataclass
class _Pool:
    clients: Mapping[str, Any]

    async def aclose(self) -> None:
        return None


@dataclass
class FakeJudges:
    completer: FakeCompleter = field(default_factory=FakeCompleter)

    def open(self, workspace: Workspace, models: Sequence[str]) -> _Pool:
        return _Pool({m: self.completer for m in models})


def write_suite(path: Path, count: int) -> None:
    """``count`` generated cases as JSONL (as bench/run.py writes them)."""
    suite = generate_cases("own-cpu", count, rubric=load_rubric("task-evaluation"))
    with path.open("w", encoding="utf-8") as fp:
        for case in suite.cases:
            fp.write(canonical_json(case.model_dump(mode="json", exclude_defaults=True)) + "\n")


def one_run(work: Path, suite: Path, name: str, *, profile: cProfile.Profile | None = None
            ) -> tuple[float, int]:
    """CPU seconds of one cold ``run_suite`` (the completer's taken out) and its judgments."""
    root = work / name
    root.mkdir()
    judges = FakeJudges()
    ws = Workspace.open(root, {"model": [MODEL], "concurrency": 32}, env={}, judges=judges)
    settle_heap()
    start = time.process_time()
    if profile is not None:
        profile.enable()
    report = run_suite(ws, RunRequest(suite=suite, check=False))
    if profile is not None:
        profile.disable()
    cpu = time.process_time() - start - judges.completer.cpu
    t = report.run.totals
    assert t.scored == t.cases and t.judged_anew == judges.completer.attempts, t
    gc.unfreeze()
    return cpu, t.judged_anew


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--write", action="store_true", help="write the row to RESULTS.md")
    parser.add_argument("--label", default="", help="what the row measured (e.g. a commit)")
    args = parser.parse_args(argv)
    tune_process()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="own-cpu-") as tmp:
        work = Path(tmp)
        big, small = work / "big.jsonl", work / "small.jsonl"
        write_suite(big, args.cases)
        write_suite(small, args.small)
        one_run(work, small, "warm-up")
        marginals = []
        for k in range(args.repeats):
            cpu_small, n_small = one_run(work, small, f"small-{k}")
            cpu_big, n_big = one_run(work, big, f"big-{k}")
            marginal = (cpu_big - cpu_small) / (n_big - n_small) * 1000
            marginals.append(marginal)
            print(f"run {k + 1}: {n_big} judgments {cpu_big:.2f} s CPU, {n_small}: "
                  f"{cpu_small:.2f} s; marginal {marginal:.3f} ms/judgment", flush=True)
        if args.profile:
            prof = cProfile.Profile()
            one_run(work, big, "profiled", profile=prof)
            stats = pstats.Stats(prof)
            stats.sort_stats("tottime").print_stats(r"judge/", 30)
            stats.sort_stats("cumulative").print_stats(r"judge/", 40)
    median = statistics.median(marginals)
    spread = ", ".join(f"{m:.3f}" for m in marginals)
    row = (f"| {args.label or 'this tree'} | {args.cases} | {median:.3f} | {spread} | "
           f"{load:.1f} / {os.getloadavg()[0]:.1f} |")
    print(f"median marginal CPU per judgment: {median:.3f} ms (runs {spread}); "
          f"load {load:.1f} -> {os.getloadavg()[0]:.1f}")
    if args.write:
        write_row(row)
    return 0


def write_row(row: str) -> None:
    """Append ``row`` to the table between the markers (created at the end if missing)."""
    text = RESULTS.read_text(encoding="utf-8")
    if MARK_START not in text:
        text += "\n" + "\n".join([
            MARK_START,
            "| code | cases | own CPU ms/judgment (median) | runs | load before / after |",
            "|---|---|---|---|---|", MARK_END]) + "\n"
    head, rest = text.split(MARK_START, 1)
    body, tail = rest.split(MARK_END, 1)
    RESULTS.write_text(head + MARK_START + body.rstrip("\n") + "\n" + row + "\n" + MARK_END
                       + tail, encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
