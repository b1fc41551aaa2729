"""Masking a suite's cases at load, in process: CPU microseconds a case of ``masked_case``.

What the first pass of a run pays per case for secrets: the case-level
pre-filter, and the walk when it says "maybe". Generated task-evaluation cases (the replay
bench's), CPU time (``process_time``), the best of ``--repeats`` passes; with ``--value``,
also with that value as a configured secret (a provider key held in the environment).

Run:    .venv/bin/python bench/masking.py [--cases 2000] [--repeats 7] [--value KEY]
Another tree (a git archive of it):  PYTHONPATH=<tree> .venv/bin/python bench/masking.py
(a tree without configured values measures the plain row only). Prints one line a row.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import write_suite

from judge.core.formats.suite import masked_case


def best_us(call: Callable[[Any], object], cases: list[Any], repeats: int) -> float:
    """CPU microseconds a case of the fastest of ``repeats`` passes of ``call`` over ``cases``."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        for case in cases:
            call(case)
        best = min(best, time.process_time() - started)
    return best * 1e6 / len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--value", help="also mask this value, as a configured secret")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="judge-masking-") as folder:
        suite = Path(folder) / "suite.jsonl"
        write_suite(suite, args.cases)
        cases = [json.loads(line) for line in suite.read_text(encoding="utf-8").splitlines()]
    print(f"masked_case, {len(cases):,} generated cases: "
          f"{best_us(masked_case, cases, args.repeats):.1f} us a case")
    if args.value and "values" in inspect.signature(masked_case).parameters:
        values = re.compile(re.escape(args.value))
        print(f"masked_case with a configured value: "
              f"{best_us(lambda c: masked_case(c, values), cases, args.repeats):.1f} us a case")


if __name__ == "__main__":
    main()
