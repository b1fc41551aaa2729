"""Peak memory of `judge suite collect otel` over ~100 MB trace files.

Writes each input into a temporary folder, runs ``python -m judge suite collect otel FILE -o
out.jsonl`` there under ``/usr/bin/time -v`` (one process each, as a user runs it) and
prints the exit code, the maximum resident set size, wall and CPU seconds, and the first
line of what it said on stderr. The inputs:

- ``export``: OTLP/JSON as the collector's file exporter writes it, JSON lines of
  ``{"resourceSpans": [...]}`` batches (100 spans a line, 100 spans a trace);
- ``spans``: JSON lines of one span a line, the Python SDK's ``span.to_json()`` shape;
- ``document``: one OTLP/JSON document of the same spans (over the single-document cap);
- ``document-under-cap``: one document just under that cap, the largest read whole;
- ``tiny-attributes``: JSON lines whose spans hold many short attributes, the most
  Python objects per byte read;
- ``startup``: ``python -m judge --help``, what the process costs before reading anything.

    PYTHONPATH=$PWD .venv/bin/python bench/otel_memory.py [MB] [--only NAME]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from judge.collect.otel import MAX_DOCUMENT_BYTES

__all__ = ["main"]

START = 1_700_000_000_000_000_000
SPANS_A_TRACE = 100


def _attrs(n: int) -> dict[str, str | int]:
    """An LLM span's attributes, about 4 KB of OpenInference text."""
    words = " ".join(f"w{(n * 7 + i) % 997}" for i in range(120))
    out: dict[str, str | int] = {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": 400 + n % 50, "llm.token_count.completion": 80,
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "You are a careful assistant. " * 10,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": f"Question {n}: {words}",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": f"Answer {n}: {words} {words}",
        "input.value": f"Question {n}: {words}", "output.value": f"Answer {n}: {words}"}
    out.update({f"app.field{i}": f"value {i} of span {n}" for i in range(10)})
    return out


def _otlp(n: int, attrs: dict[str, str | int]) -> dict[str, Any]:
    trace = f"{n // SPANS_A_TRACE + 1:016x}{'ab' * 8}"
    first = n - n % SPANS_A_TRACE
    span: dict[str, Any] = {
        "traceId": trace, "spanId": f"{n + 1:016x}", "name": f"step {n}", "kind": 1,
        "startTimeUnixNano": str(START + n * 1000), "endTimeUnixNano": str(START + n * 1000 + 900),
        "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str)
                        else {"intValue": str(v)}} for k, v in attrs.items()],
        "status": {"code": 1}}
    if n != first:
        span["parentSpanId"] = f"{first + 1:016x}"
    return span


def _sdk(n: int, attrs: dict[str, str | int]) -> dict[str, Any]:
    span = _otlp(n, attrs)
    return {"name": span["name"], "context": {"trace_id": "0x" + span["traceId"],
                                              "span_id": "0x" + span["spanId"]},
            "parent_id": "0x" + span["parentSpanId"] if "parentSpanId" in span else None,
            "kind": "SpanKind.INTERNAL", "start_time": "2026-12-03T10:00:00.000000Z",
            "end_time": "2026-12-03T10:00:01.000000Z", "status": {"status_code": "OK"},
            "attributes": attrs}


def _batches(limit: int, attrs: Callable[[int], dict[str, str | int]]) -> Iterator[str]:
    size, n = 0, 0
    while size < limit:
        spans = [_otlp(n + i, attrs(n + i)) for i in range(SPANS_A_TRACE)]
        n += SPANS_A_TRACE
        line = json.dumps({"resourceSpans": [{"resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "bench"}}]},
            "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}) + "\n"
        size += len(line)
        yield line


def _write_export(path: Path, limit: int) -> None:
    with path.open("w") as out:
        out.writelines(_batches(limit, _attrs))


def _write_spans(path: Path, limit: int) -> None:
    size, n = 0, 0
    with path.open("w") as out:
        while size < limit:
            line = json.dumps(_sdk(n, _attrs(n))) + "\n"
            size += len(line)
            n += 1
            out.write(line)


def _write_document(path: Path, limit: int) -> None:
    """One ``{"resourceSpans": [...]}`` document over several lines, as a pretty dump."""
    with path.open("w") as out:
        out.write('{\n"resourceSpans": [\n')
        for i, line in enumerate(_batches(limit, _attrs)):
            batch = json.loads(line)["resourceSpans"][0]
            out.write(("," if i else "") + json.dumps(batch) + "\n")
        out.write("]\n}\n")


def _tiny(n: int) -> dict[str, str | int]:
    return {f"k{i}": i for i in range(120)}


def _write_tiny(path: Path, limit: int) -> None:
    with path.open("w") as out:
        out.writelines(_batches(limit, _tiny))


def _measure(folder: Path, args: list[str]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    proc = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "judge", *args],
                          cwd=folder, capture_output=True, text=True, env=env, timeout=1800,
                          check=False)
    stats = dict(ln.strip().rsplit(": ", 1) for ln in proc.stderr.splitlines()
                 if ln.startswith("\t") and ": " in ln)
    said = [ln for ln in proc.stderr.splitlines() if ln and not ln.startswith(("\t", " "))]
    wall = stats.get("Elapsed (wall clock) time (h:mm:ss or m:ss)", "?")
    return {"code": proc.returncode, "rss_mb": int(stats["Maximum resident set size (kbytes)"])
            / 1024, "wall": wall, "cpu": float(stats["User time (seconds)"])
            + float(stats["System time (seconds)"]),
            "said": (said[0] if said else proc.stdout.splitlines()[0] if proc.stdout else "")}


def main(argv: list[str]) -> int:
    """Write the inputs, measure each, print one line each."""
    mb = int(argv[0]) if argv and argv[0].isdigit() else 100
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    limit = mb * 1024 * 1024
    inputs: dict[str, tuple[str, Callable[[Path, int], None], int]] = {
        "export": ("export.jsonl", _write_export, limit),
        "spans": ("spans.jsonl", _write_spans, limit),
        "document": ("document.json", _write_document, limit),
        "document-under-cap": ("under.json", _write_document, MAX_DOCUMENT_BYTES - (1 << 20)),
        "tiny-attributes": ("tiny.jsonl", _write_tiny, limit),
    }
    print(f"load before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if only in (None, "startup"):
            print("startup", _measure(folder, ["--help"]))
        for name, (file, write, size) in inputs.items():
            if only not in (None, name):
                continue
            write(folder / file, size)
            got = _measure(folder, ["suite", "collect", "otel", file, "-o", f"out-{name}.jsonl"])
            print(f"{name}: {(folder / file).stat().st_size / 1e6:.1f} MB", got)
            (folder / file).unlink()
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
