"""The gate's default path against a noisy judge, typed exactly as the README types it.

Independent trials. Each is a fresh workspace (no store, cache or baselines) holding a suite
of N cases (default 60) under a one-category rubric whose final score is the judge's AI
score alone, and a ``judge.toml`` naming the loopback noisy judge (``fake-judge~8``: a latent
verdict per prompt plus Gaussian noise of sd 8 points an ask) and nothing else; the trial
is named in every case's text, so every trial has its own latent verdicts and noise. Then:

1. ``judge run suite.yaml``: the first run records the baseline (exit 0 expected);
2. the cache and the store are deleted (a CI checkout: only the committed ``baselines/``
   travels), the server draws new noise for the same requests (``ask``: a re-ask), and in
   the drop rows lowers every latent verdict by the drop (``bias``: the work got worse, the
   judge is the same);
3. ``judge run suite.yaml`` again: exit 0 passes, exit 1 is a regression.

No noise command is typed, and no flag: the default path. Each ``judge run`` goes through
the CLI's own entry point in this process (``judge.cli.main``, as the tests run it), on
loopback. For comparison the same pair is also decided by the exact rule (what the gate
did before it was noise-aware by default), from the runs' ``--json``.

Run:   .venv/bin/python bench/gate_default.py [--trials 40] [--cases 60] [--drops 0,6,10]
       (prints a Markdown table; ~1 s a run on 2 shared cores)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fakes"))  # the loopback fake judge
sys.path.insert(0, str(ROOT))

from fake_server import start_in_thread  # noqa: E402

from judge.core.formats.models import CaseResult  # noqa: E402
from judge.core.outcomes.baseline import compare, parse_baseline  # noqa: E402

__all__ = ["main"]

MODEL = "hosted_vllm/fake-judge~8"
RUBRIC = """\
version: 1
id: one-category
title: One category
description: The judge's score alone.
style: scores
blend: {deterministic: 0.7, ai: 0.3}
missing: {deterministic: ai_only, ai: deterministic_only}
partial: unscored
pass_score: 60
categories:
  - {id: quality, weight: 1.0, definition: How good the answer is.}
bands:
  - {name: failing, min: 0, max: 39}
  - {name: weak, min: 40, max: 59}
  - {name: acceptable, min: 60, max: 74}
  - {name: strong, min: 75, max: 89}
  - {name: excellent, min: 90, max: 100}
"""


@dataclass
class Row:
    """Tallies of one drop."""

    drop: int
    trials: int = 0
    first_ok: int = 0
    blocked: int = 0
    exact_blocked: int = 0
    other_exit: list[int] = field(default_factory=list)
    mean_drops: list[float] = field(default_factory=list)
    rules: set[str] = field(default_factory=set)


def _suite(n: int, trial: str) -> str:
    # The trial is in every case's text: the server draws both the latent verdict and the
    # noise from the prompt, so each trial has its own of both (independent trials).
    lines = ["id: noisy-gate", "rubric: one-category", "cases:"]
    for i in range(n):
        task = json.dumps(f"Task {i} of trial {trial}: summarise report {i * 7919 % 1000}.")
        lines += [f"  - id: c{i:03d}", f"    input: {task}",
                  f"    output: Summary {i} of the report.", "    judged_by: llm"]
    return "\n".join(lines) + "\n"


def _workspace(folder: Path, api_base: str, n: int, trial: str) -> None:
    (folder / "rubrics").mkdir(parents=True)
    (folder / "rubrics" / "one-category.yaml").write_text(RUBRIC, encoding="utf-8")
    (folder / "suite.yaml").write_text(_suite(n, trial), encoding="utf-8")
    (folder / "judge.toml").write_text(f'model = "{MODEL}"\napi_base = "{api_base}"\n',
                                       encoding="utf-8")


def _judge(args: list[str], cwd: Path) -> tuple[int, str]:
    """``judge ARGS`` in ``cwd`` through the CLI's entry point; (exit code, stdout)."""
    from judge.cli import main as judge_main

    out, saved = io.StringIO(), os.getcwd()
    os.chdir(cwd)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            try:
                judge_main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        os.chdir(saved)
    return code, out.getvalue()


def _trial(row: Row, index: int, server: Any, cases: int, scratch: Path) -> None:
    folder = scratch / f"d{row.drop}-t{index}"
    _workspace(folder, server.base_url + "/v1", cases, f"{row.drop}.{index}")
    server.set_options(ask=1, bias=0)
    first, _ = _judge(["run", "suite.yaml"], folder)
    row.first_ok += first == 0
    shutil.rmtree(folder / "cache", ignore_errors=True)
    shutil.rmtree(folder / ".judge", ignore_errors=True)
    server.set_options(ask=2, bias=-row.drop)
    code, text = _judge(["run", "suite.yaml", "--json"], folder)
    body = json.loads(text)
    row.trials += 1
    row.blocked += code == 1
    if code not in (0, 1):
        row.other_exit.append(code)
    verdict = body["baseline"] or {}
    test = verdict.get("test") or {}
    row.rules.add(str(test.get("rule")))
    row.mean_drops.append(float(test.get("meanDrop") or 0.0))
    baseline = parse_baseline((folder / "baselines" / "noisy-gate.json").read_text(), "b")
    results = [CaseResult.model_validate(c) for c in body["cases"]]
    row.exact_blocked += compare(baseline, results).has_regression
    shutil.rmtree(folder, ignore_errors=True)


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else "—"


def _table(rows: Sequence[Row], cases: int, seconds: float) -> str:
    lines = [f"Default path (`judge run suite.yaml` twice, no noise command), loopback judge "
             f"`fake-judge~8` (latent verdict + sd 8 an ask), {cases} cases, one category, "
             f"threshold 5 points; {rows[0].trials} independent trials a row; "
             f"{seconds:.0f} s.", "",
             "| real drop | first run exit 0 | blocked (default gate) | mean drop seen "
             "(mean ± sd over trials) | rule | exact rule would block | other exits |",
             "|---:|---:|---:|---:|---|---:|---|"]
    for r in rows:
        seen = statistics.fmean(r.mean_drops) if r.mean_drops else 0.0
        spread = statistics.stdev(r.mean_drops) if len(r.mean_drops) > 1 else 0.0
        lines.append(f"| {r.drop} | {_pct(r.first_ok, r.trials)} | {_pct(r.blocked, r.trials)} "
                     f"| {seen:.2f} ± {spread:.2f} | {', '.join(sorted(r.rules))} | "
                     f"{_pct(r.exact_blocked, r.trials)} | {r.other_exit or 'none'} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the trials and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--drops", default="0,6,10")
    args = parser.parse_args(argv)
    for name in [k for k in os.environ if k.startswith("JUDGE_") or k == "CI"]:
        del os.environ[name]  # the defaults, as a new user has them
    rows = [Row(drop=int(d)) for d in args.drops.split(",")]
    started = time.monotonic()
    server = start_in_thread(latency_ms=0, seed=0)
    try:
        with tempfile.TemporaryDirectory(prefix="gate-default-") as scratch:
            for row in rows:
                for index in range(args.trials):
                    _trial(row, index, server, args.cases, Path(scratch))
                print(f"drop {row.drop}: blocked {_pct(row.blocked, row.trials)}",
                      file=sys.stderr)
    finally:
        server.stop()
    print(_table(rows, args.cases, time.monotonic() - started))
    return 0 if all(r.first_ok == r.trials and not r.other_exit for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
