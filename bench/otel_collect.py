"""How long `judge collect otel` takes over a big trace, with and without the cap stubs.

A trace of N spans (a chain, so 10,000 deep) is written to a temporary folder and collected
into a case with the task rubric, in process, twice: as shipped (items the profile's cap will
drop are reduced to their id before the scrubber runs) and with that step turned off (every
item scrubbed in full, then dropped). Prints wall seconds of each (best of 3).

    .venv/bin/python bench/otel_collect.py [N]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import judge.collect.otel as otel
from judge.collect.case import build_case
from judge.system.resources import load_rubric

__all__ = ["main"]

T = "0af7651916cd43dd8448eb211c80319c"


def _line(n: int) -> str:
    span: dict[str, Any] = {"traceId": T, "spanId": f"{n:016x}", "name": "step",
                            "startTimeUnixNano": str(n), "endTimeUnixNano": str(n + 1),
                            "attributes": [{"key": "output.value", "value": {
                                "stringValue": f"step {n} wrote some output " * 20}}]}
    if n > 1:
        span["parentSpanId"] = f"{n - 1:016x}"
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n"


def _once(folder: Path) -> float:
    rubric = load_rubric("task-evaluation", folder)
    start = time.perf_counter()
    spans, _ = otel.read_spans([Path("t.jsonl")], folder)
    (trace,) = otel.group_traces(spans)
    build_case("c", [otel.collect_trace(trace, rubric.evidence, "t.jsonl")], rubric)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    """Write the trace, time both ways, print."""
    n = int(argv[0]) if argv else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "t.jsonl").write_text("".join(_line(i) for i in range(1, n + 1)))
        shipped = min(_once(folder) for _ in range(3))
        stub = otel._stubbed
        otel._stubbed = lambda groups, profile: groups  # type: ignore[assignment]
        try:
            full = min(_once(folder) for _ in range(3))
        finally:
            otel._stubbed = stub  # type: ignore[assignment]
    print(f"{n} spans: {shipped:.2f} s as shipped, {full:.2f} s scrubbing every item")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
