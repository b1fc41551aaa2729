"""The OpenTelemetry adapter: OTLP/JSON traces into cases, one trace a case.

**Input.** A file or a folder of files (``*.json``, ``*.jsonl``, ``*.ndjson``, read in name
order), each either JSON lines or one JSON document. A line or document is an OTLP export
(``{"resourceSpans": [...]}``, what the collector's file exporter and
``opentelemetry-exporter-otlp-json-file`` write, ids in hex), a list of spans, or one span:
OTLP's shape (``traceId``, ``spanId``, ``attributes: [{key, value: {stringValue}}]``) or the
Python SDK's ``span.to_json()`` (``context.trace_id``, ``attributes: {...}``). Files are read
a line at a time with every limit checked as it is read (:data:`MAX_LINE_CHARS`,
:data:`MAX_DOCUMENT_BYTES`, :data:`MAX_SPANS`), and each attribute is cut to
:data:`ATTRIBUTE_LIMIT` characters the moment it is read, so memory stays bounded whatever
the file holds. Bytes that are not UTF-8 (and lone surrogates) become U+FFFD.

**Vocabularies.** OTel GenAI (``gen_ai.operation.name``, ``gen_ai.request.model``,
``gen_ai.usage.*``, ``gen_ai.input.messages``/``output.messages``, ``gen_ai.tool.*``) and
OpenInference (``openinference.span.kind``, ``llm.model_name``, ``llm.token_count.*``,
``llm.input_messages.N.message.*``, ``input.value``/``output.value``, ``tool.name``).

**Cases.** The trace's root span (no parent in the trace; the earliest if several) gives the
case's input and output (its own input/output attributes, else the first LLM call's user
message and the last LLM call's answer). Every other span, in tree order (depth first,
siblings by start time), is one evidence item whose citable id is built from its span id
(``span-<spanId>``): LLM calls and tool calls go to the profile's step group, errors and
other spans to its audit group. Refs keep timings (``startMs`` from the trace's start,
``durationMs``), token counts, model, status, finish reason, depth, and retries (an LLM call
repeating its earlier sibling's request is ``attempt`` 2, 3...; ``http.request.resend_count``
as written). Attributes neither vocabulary names are kept as at most
:data:`UNKNOWN_ATTRIBUTES` short references (``attr.<key>``), the rest counted; never blobs.

**Hostile input.** Parent links are followed without recursion; a span whose parent chain
loops (no root reaches it) starts a new root and is marked ``cycle``. An attribute whose
``key: value`` has a secret's shape is masked as it is read (the key says what it was);
every string is scrubbed again by :func:`judge.collect.case.build_case`, and span text is
untrusted evidence like any other (fenced by the renderer).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from ..core.formats.conversation import Turn
from ..core.formats.evidence import EvidenceProfile, Scalar, structured_text
from ..core.formats.limits import MAX_JSONL_SUITE_BYTES
from ..core.text.errors import UsageError
from ..core.text.secrets import MASK, is_secret_key, mask_text
from ..core.text.strict_json import loads_strict
from ..system.input_files import open_input
from .case import HEAD_TAIL_GROUPS, Collected
from .otel_messages import MESSAGE_KEYS, Message, as_turns, span_messages

__all__ = [
    "ATTRIBUTE_LIMIT",
    "MAX_DOCUMENT_BYTES",
    "MAX_FILES",
    "MAX_HELD_BYTES",
    "MAX_LINE_CHARS",
    "MAX_SPANS",
    "MESSAGES_LIMIT",
    "UNKNOWN_ATTRIBUTES",
    "Span",
    "Trace",
    "collect_trace",
    "group_traces",
    "otel_groups",
    "read_spans",
    "trace_conversation",
    "trace_items",
]

MAX_LINE_CHARS = 16 * 1024 * 1024
"""Longest JSON line read (an OTLP export batch is one line; real ones are kilobytes)."""
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Largest file read as one JSON document (not JSON lines)."""
MAX_SPANS = 50_000
"""Spans read from all files together: a bigger input is many runs, to select or split."""
MAX_HELD_BYTES = 256 * 1024 * 1024
"""What all spans read may keep, estimated as they are read (:func:`_held`): the bound on
memory, whatever the spans' count and shape (measured peaks 233-321 MB over ~100 MB files)."""
SPAN_OVERHEAD = 600
"""Bytes a span costs before its attributes (the object, its ids, name and times)."""
ATTRIBUTE_OVERHEAD = 120
"""Bytes an attribute costs beyond its text (its dict slot and two string objects)."""
MAX_FILES = 1000
"""Files read from a folder."""
ATTRIBUTE_LIMIT = 4000
"""Characters kept of an attribute's text when it is read (the excerpt is cut further)."""
MESSAGES_LIMIT = 100_000
"""Characters kept of an attribute holding a JSON list of messages (``gen_ai.input.messages``):
cut at ATTRIBUTE_LIMIT it would no longer parse, and a conversation is read from it."""
UNKNOWN_ATTRIBUTES = 12
"""Attributes of no known vocabulary kept per span as short references."""
UNKNOWN_VALUE_LIMIT = 80
"""Characters kept of an unknown attribute's value."""
ARRAY_LIMIT = 20
SUFFIXES = (".json", ".jsonl", ".ndjson")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion",
                             "embeddings", "responses"})
# Attributes read into an item's text or refs, or bulky by design (prompts, tool schemas):
# never repeated as unknown references.
_KNOWN_PREFIXES = ("llm.", "gen_ai.", "input.", "output.", "tool.", "openinference.",
                   "session.", "user.id", "metadata", "tag.tags", "exception.", "error.type",
                   "http.request.resend_count", "retry.")
_FIX = ("give OTLP/JSON: the collector's file exporter output ({\"resourceSpans\": [...]} "
        "a line), or JSON lines of spans")


@dataclass
class Span:
    """One span as read: ids, name, times, status, bounded attributes and error events."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start_ns: int | None
    end_ns: int | None
    status: str
    """``ok``, ``error`` or ``unset``."""
    status_message: str
    attributes: dict[str, Any]
    """Scalars (arrays joined, maps as short JSON), each text cut to ATTRIBUTE_LIMIT."""
    exceptions: list[str] = field(default_factory=list)
    """``type: message`` of each exception event."""
    service: str | None = None
    position: int = 0
    """Order read, for stable sorting."""


@dataclass
class Trace:
    """The spans of one trace id, in the order read."""

    trace_id: str
    spans: list[Span]


@dataclass(frozen=True)
class _Place:
    span: Span
    depth: int
    cycle: bool
    seq: int
    """Position in tree order (0: the root)."""


# --- reading -------------------------------------------------------------------------------


def _clean(text: str, limit: int = ATTRIBUTE_LIMIT) -> str:
    if len(text) > limit:
        text = text[:limit]
    return _SURROGATE.sub("\ufffd", text)


def _any_value(value: Any, limit: int = ATTRIBUTE_LIMIT) -> Any:
    """An OTLP ``AnyValue`` (or a plain JSON value) as a bounded scalar."""
    if isinstance(value, Mapping) and len(value) == 1:
        ((kind, inner),) = value.items()
        if kind == "stringValue":
            return _clean(str(inner), limit)
        if kind == "boolValue":
            return bool(inner)
        if kind == "intValue":
            return _int(inner)
        if kind == "doubleValue":
            return float(inner) if isinstance(inner, int | float | str) else None
        if kind == "bytesValue":
            return f"<{len(str(inner)) * 3 // 4} bytes>"
        if kind == "arrayValue":
            values = inner.get("values") if isinstance(inner, Mapping) else None
            return _plain([_any_value(v) for v in (values or [])[:ARRAY_LIMIT]])
        if kind == "kvlistValue":
            values = inner.get("values") if isinstance(inner, Mapping) else None
            return _plain({str(kv.get("key")): _any_value(kv.get("value"))
                           for kv in (values or [])[:ARRAY_LIMIT] if isinstance(kv, Mapping)})
    return _plain(value, limit)


def _plain(value: Any, limit: int = ATTRIBUTE_LIMIT) -> Any:
    if isinstance(value, str):
        return _clean(value, limit)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple):
        if all(isinstance(v, str | int | float | bool) for v in value):
            return _clean(", ".join(str(v) for v in value[:ARRAY_LIMIT]), limit)
    return _clean(structured_text(value)[:limit], limit)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _masked(key: str, value: Any) -> tuple[Any, int]:
    """``value`` masked when its key names a credential (``db.password``, ``…authorization``).

    Asked of the one secret table with a placeholder value (``key=placeholder``), a short
    text: scrubbing every attribute's full text here measured ~1.5 ms a span (a 10,000-span
    trace took 22.6 s instead of 5.8 s); the texts kept are scrubbed whole by ``build_case``.
    """
    if not isinstance(value, str) or not value:
        return value, 0
    if is_secret_key(key.rsplit(".", 1)[-1]) or mask_text(f"{key}=placeholder0")[1]:
        return MASK, 1
    return value, 0


def _attributes(raw: Any) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    masked = 0
    if isinstance(raw, Mapping):
        pairs: Iterable[tuple[Any, Any]] = raw.items()
        read: Any = _plain
    elif isinstance(raw, list):
        pairs = ((kv.get("key"), kv.get("value")) for kv in raw if isinstance(kv, Mapping))
        read = _any_value
    else:
        return out, 0
    for key, value in pairs:
        name = _clean(str(key), 200)
        limit = MESSAGES_LIMIT if name in MESSAGE_KEYS else ATTRIBUTE_LIMIT
        out[name], n = _masked(name, read(value, limit))
        masked += n
    return out, masked


def _hex_id(value: Any) -> str | None:
    if not isinstance(value, str | int) or value in ("", None):
        return None
    text = str(value).lower().removeprefix("0x")
    return _clean(text, 64) if text.strip("0") else None


def _time_ns(value: Any) -> int | None:
    if isinstance(value, str) and not value.isdigit():
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
    return _int(value)


def _status(raw: Any) -> tuple[str, str]:
    if not isinstance(raw, Mapping):
        return "unset", ""
    code = raw.get("code", raw.get("status_code"))
    text = str(code).upper()
    status = ("error" if code == 2 or "ERROR" in text else
              "ok" if code == 1 or text.endswith("OK") else "unset")
    message = raw.get("message", raw.get("description"))
    return status, _clean(str(message), 500) if message else ""


def _kind(raw: Any) -> str:
    names = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer",
             5: "consumer"}
    if isinstance(raw, int):
        return names.get(raw, "unspecified")
    text = str(raw or "").lower()
    return _clean(text.removeprefix("span_kind_").removeprefix("spankind."), 40) or "internal"


def _exceptions(events: Any) -> list[str]:
    out = []
    for event in (events if isinstance(events, list) else [])[:ARRAY_LIMIT]:
        if not isinstance(event, Mapping) or event.get("name") != "exception":
            continue
        attrs, _ = _attributes(event.get("attributes"))
        kind, message = attrs.get("exception.type") or "", attrs.get("exception.message") or ""
        out.append(_clean(f"{kind}: {message}".strip(": "), 500))
    return out


def _span(raw: Mapping[str, Any], service: str | None, position: int) -> tuple[Span, int]:
    context = raw.get("context") if isinstance(raw.get("context"), Mapping) else {}
    assert isinstance(context, Mapping)
    trace_id = _hex_id(raw.get("traceId", context.get("trace_id")))
    span_id = _hex_id(raw.get("spanId", context.get("span_id")))
    if trace_id is None or span_id is None:
        raise ValueError("a span without traceId and spanId")
    attrs, masked = _attributes(raw.get("attributes"))
    resource = raw.get("resource")
    if isinstance(resource, Mapping) and service is None:
        service = _attributes(resource.get("attributes"))[0].get("service.name")
    status, message = _status(raw.get("status"))
    return Span(trace_id=trace_id, span_id=span_id,
                parent_id=_hex_id(raw.get("parentSpanId", raw.get("parent_id"))),
                name=_clean(str(raw.get("name") or "span"), 200), kind=_kind(raw.get("kind")),
                start_ns=_time_ns(raw.get("startTimeUnixNano", raw.get("start_time"))),
                end_ns=_time_ns(raw.get("endTimeUnixNano", raw.get("end_time"))),
                status=status, status_message=message, attributes=attrs,
                exceptions=_exceptions(raw.get("events")),
                service=str(service) if isinstance(service, str) else None,
                position=position), masked


def _spans_of(data: Any, position: int) -> Iterator[tuple[Span, int]]:
    """The spans of one parsed line or document."""
    if isinstance(data, list):
        for item in data:
            yield from _spans_of(item, position)
        return
    if not isinstance(data, Mapping):
        raise ValueError("neither an OTLP export ({\"resourceSpans\": ...}) nor a span")
    if "resourceSpans" in data:
        batches = data.get("resourceSpans") or []
        if not isinstance(batches, list):
            raise ValueError("resourceSpans is a list")
        for index in range(len(batches)):
            rs = batches[index]
            # the raw batch is released once its spans are converted (a Span keeps only
            # bounded fields), so a large document's tree does not outlive its spans
            batches[index] = None
            if not isinstance(rs, Mapping):
                raise ValueError("a resourceSpans entry is an object")
            resource = rs.get("resource") if isinstance(rs.get("resource"), Mapping) else {}
            assert isinstance(resource, Mapping)
            service = _attributes(resource.get("attributes"))[0].get("service.name")
            for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []:
                for raw in (ss.get("spans") or []) if isinstance(ss, Mapping) else []:
                    if not isinstance(raw, Mapping):
                        raise ValueError("a span is an object")
                    yield _span(raw, service if isinstance(service, str) else None, position)
        return
    if "spans" in data and isinstance(data["spans"], list):
        yield from _spans_of(data["spans"], position)
        return
    yield _span(data, None, position)


def _loads(text: str) -> Any:
    """A trace's JSON by the one strict grammar (a JsonProblem is a ValueError).

    Lone surrogates are kept here and become U+FFFD with every broken character.
    """
    try:
        return loads_strict(text, surrogates=True)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _lines(handle: IO[bytes], source: str) -> Iterator[tuple[int, str]]:
    lineno = 0
    while True:
        raw = handle.readline(MAX_LINE_CHARS + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > MAX_LINE_CHARS:
            raise UsageError(f"line {lineno} is longer than {MAX_LINE_CHARS:,} bytes",
                             file=source, where=f"line {lineno}",
                             fix="export spans in smaller batches, or one span a line")
        yield lineno, raw.decode("utf-8", errors="replace")


def _read_file(path: Path, shown: str, counter: list[int]) -> Iterator[Span]:
    # A regular file, or refused by type before a byte is read (a FIFO would block, a
    # device never end); what is read from it is bounded by the limits above.
    handle = open_input(path, UsageError, MAX_JSONL_SUITE_BYTES)
    with handle:
        first = True
        for lineno, line in _lines(handle, shown):
            if not line.strip():
                continue
            try:
                data = _loads(line)
            except ValueError as exc:
                if first:  # not JSON lines: one document over many lines
                    yield from _read_document(handle, path, shown, counter)
                    return
                raise _bad(shown, f"line {lineno}", f"invalid JSON: {exc}") from None
            first = False
            yield from _counted(data, shown, f"line {lineno}", counter)


def _read_document(handle: IO[bytes], path: Path, shown: str,
                   counter: list[int]) -> Iterator[Span]:
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        raise UsageError(f"the file is one JSON document of {size:,} bytes; the limit is "
                         f"{MAX_DOCUMENT_BYTES:,}", file=shown, where="judge suite collect otel",
                         fix="export JSON lines (one batch or span a line) instead")
    handle.seek(0)
    # the bytes, the text and the parsed tree are never all held at once: each is dropped
    # as soon as the next is made (the tree itself is emptied as its spans are converted)
    raw = handle.read(MAX_DOCUMENT_BYTES + 1)
    text = raw.decode("utf-8", errors="replace")
    del raw
    try:
        data = _loads(text)
    except ValueError as exc:
        raise _bad(shown, "the document", f"invalid JSON: {exc}") from None
    finally:
        del text
    yield from _counted(data, shown, "the document", counter)


def _held(span: Span) -> int:
    """About the bytes a read span keeps (its attributes' text plus Python's overheads)."""
    return SPAN_OVERHEAD + sum(
        len(k) + (len(v) if isinstance(v, str) else 8) + ATTRIBUTE_OVERHEAD
        for k, v in span.attributes.items()) + sum(len(e) for e in span.exceptions)


def _counted(data: Any, shown: str, where: str, counter: list[int]) -> Iterator[Span]:
    try:
        for span, masked in _spans_of(data, counter[0]):
            counter[0] += 1
            counter[1] += masked
            counter[2] += _held(span)
            if counter[0] > MAX_SPANS:
                raise UsageError(f"more than {MAX_SPANS:,} spans", file=shown, where=where,
                                 fix="select fewer traces (split the file, or export one "
                                     "run a file)")
            if counter[2] > MAX_HELD_BYTES:
                raise UsageError(
                    f"the spans read so far would hold more than {MAX_HELD_BYTES >> 20} MiB "
                    f"in memory ({counter[0]:,} spans)", file=shown, where=where,
                    fix="collect the traces in parts: split the file (JSON lines split at "
                        "any line, e.g. `split -l 500`) or export one run a file, and run "
                        "judge suite collect otel on each with --append")
            yield span
    except (ValueError, TypeError, AttributeError) as exc:
        raise _bad(shown, where, str(exc)) from None


def _bad(shown: str, where: str, message: str) -> UsageError:
    return UsageError(f"not an OTLP/JSON trace: {message}", file=shown, where=where, fix=_FIX)


def _files(path: Path, base: Path, shown: str) -> list[tuple[Path, str]]:
    full = base / path
    if full.is_dir():
        found = sorted(p for p in full.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        if not found:
            raise UsageError(f"no {', '.join(SUFFIXES)} files in {shown}", file=shown,
                             where="judge suite collect otel", fix="name a trace file or a folder "
                             "holding them")
        if len(found) > MAX_FILES:
            raise UsageError(f"{len(found):,} trace files; the limit is {MAX_FILES:,}",
                             file=shown, where="judge suite collect otel",
                             fix="name a smaller folder")
        return [(p, str(Path(shown) / p.relative_to(full))) for p in found]
    return [(full, shown)]


def read_spans(paths: Sequence[Path], base: Path) -> tuple[list[Span], int]:
    """Every span of the files (folders: their trace files), and how many were masked."""
    counter = [0, 0, 0]  # spans, masked attributes, bytes held (estimated)
    spans: list[Span] = []
    for path in paths:
        for file, shown in _files(path, base, str(path)):
            spans.extend(_read_file(file, shown, counter))
    return spans, counter[1]


def group_traces(spans: Iterable[Span]) -> list[Trace]:
    """Spans by trace id, traces in the order their first span was read."""
    traces: dict[str, Trace] = {}
    for span in spans:
        traces.setdefault(span.trace_id, Trace(span.trace_id, [])).spans.append(span)
    return list(traces.values())


# --- the tree ------------------------------------------------------------------------------


def _order(span: Span) -> tuple[int, int]:
    return (span.start_ns if span.start_ns is not None else 0, span.position)


def _walk(trace: Trace) -> list[_Place]:
    """Spans in tree order (depth first, siblings by start), iteratively; loops broken."""
    by_id: dict[str, Span] = {}
    for span in trace.spans:
        by_id.setdefault(span.span_id, span)  # a repeated span id: the first one read
    children: dict[str, list[Span]] = {}
    roots: list[Span] = []
    for span in by_id.values():
        parent = span.parent_id
        if parent is None or parent == span.span_id or parent not in by_id:
            roots.append(span)
        else:
            children.setdefault(parent, []).append(span)
    for kids in children.values():
        kids.sort(key=_order)
    placed: list[_Place] = []
    seen: set[str] = set()
    pending = sorted(roots, key=_order)
    cycle = False
    while len(seen) < len(by_id):
        if not pending:  # what is left hangs from a loop of parents: start at its earliest
            pending = [min((s for s in by_id.values() if s.span_id not in seen), key=_order)]
            cycle = True
        stack = [(span, 0) for span in reversed(pending)]
        pending = []
        while stack:
            span, depth = stack.pop()
            if span.span_id in seen:
                continue
            seen.add(span.span_id)
            placed.append(_Place(span, depth, cycle, len(placed)))
            stack.extend((kid, depth + 1) for kid in reversed(children.get(span.span_id, [])))
    return placed


# --- reading the vocabularies ----------------------------------------------------------------


def _role_kind(span: Span) -> str:
    a = span.attributes
    oi = str(a.get("openinference.span.kind") or "").lower()
    if oi:
        return oi
    op = str(a.get("gen_ai.operation.name") or "").lower()
    if op in _LLM_OPERATIONS:
        return "llm"
    if op == "execute_tool" or a.get("gen_ai.tool.name") or a.get("tool.name"):
        return "tool"
    if op in {"invoke_agent", "create_agent"}:
        return "agent"
    if a.get("llm.model_name") or a.get("gen_ai.request.model"):
        return "llm"
    return span.kind


def _messages(span: Span, which: str) -> list[Message]:
    return span_messages(span.attributes, which)


def _value_text(value: Any) -> str | None:
    """An ``input.value``/``output.value``: its text, or a chat request's last user text."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        data = loads_strict(value, surrogates=True)
    except (ValueError, RecursionError):  # not strict JSON: kept as the text it is
        return value
    if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
        users = [m for m in data["messages"] if isinstance(m, Mapping)
                 and m.get("role") == "user" and isinstance(m.get("content"), str)]
        if users:
            return str(users[-1]["content"])
    if isinstance(data, Mapping) and isinstance(data.get("choices"), list) and data["choices"]:
        choice = data["choices"][0]
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if isinstance(message, Mapping) and isinstance(message.get("content"), str):
            return str(message["content"])
    return value


def _last_text(messages: Sequence[Message], role: str | None) -> str | None:
    for message in reversed(messages):
        if (role is None or message.role == role) and message.content.strip():
            return message.content
    return None


def _io(span: Span, which: str) -> str | None:
    own = _value_text(span.attributes.get(f"{which}.value"))
    if own is not None:
        return own
    messages = _messages(span, which)
    return _last_text(messages, "user" if which == "input" else None)


def _calls_text(messages: Sequence[Message]) -> list[str]:
    return [f"→ {c.name}({c.arguments})" for m in messages for c in m.calls]


def _first(attrs: Mapping[str, Any], *keys: str) -> Any:
    return next((attrs[k] for k in keys if attrs.get(k) is not None), None)


def _unknown(attrs: Mapping[str, Any]) -> dict[str, Scalar]:
    names = sorted(k for k in attrs if not k.startswith(_KNOWN_PREFIXES))
    refs: dict[str, Scalar] = {}
    for name in names[:UNKNOWN_ATTRIBUTES]:
        value = attrs[name]
        refs[f"attr.{name}"] = (" ".join(value.split())[:UNKNOWN_VALUE_LIMIT]
                                if isinstance(value, str) else value)
    if len(names) > UNKNOWN_ATTRIBUTES:
        refs["attrsNotShown"] = len(names) - UNKNOWN_ATTRIBUTES
    return refs


def _llm_text(span: Span) -> str:
    out = _messages(span, "output")
    lines = []
    asked = _last_text(_messages(span, "input"), "user")
    if asked:
        lines.append(f"asked: {asked}")
    answer = _last_text(out, None) or _value_text(span.attributes.get("output.value"))
    if answer:
        lines.append(f"answered: {answer}")
    lines += _calls_text(out)
    return "\n".join(lines)


def _tool_text(span: Span) -> str:
    a = span.attributes
    name = _first(a, "tool.name", "gen_ai.tool.name") or span.name
    args = _first(a, "gen_ai.tool.call.arguments", "tool.parameters", "input.value")
    result = _first(a, "gen_ai.tool.call.result", "output.value")
    lines = [f"→ {name}({args if args is not None else ''})"]
    if result is not None:
        lines.append(f"← {result}")
    return "\n".join(lines)


def _refs(place: _Place, start: int | None, role: str) -> dict[str, Scalar]:
    span, a = place.span, place.span.attributes
    refs: dict[str, Scalar] = {"spanId": span.span_id, "seq": place.seq, "kind": role,
                            "status": span.status}
    if span.parent_id:
        refs["parentSpanId"] = span.parent_id
    refs["depth"] = place.depth
    if place.cycle:
        refs["cycle"] = True
    if span.start_ns is not None and start is not None:
        refs["startMs"] = (span.start_ns - start) // 1_000_000
    if span.start_ns is not None and span.end_ns is not None:
        refs["durationMs"] = max(0, span.end_ns - span.start_ns) // 1_000_000
    found = {
        "model": _first(a, "gen_ai.response.model", "gen_ai.request.model", "llm.model_name"),
        "provider": _first(a, "gen_ai.provider.name", "gen_ai.system", "llm.provider",
                           "llm.system"),
        "inputTokens": _first(a, "gen_ai.usage.input_tokens", "llm.token_count.prompt"),
        "outputTokens": _first(a, "gen_ai.usage.output_tokens", "llm.token_count.completion"),
        "totalTokens": _first(a, "llm.token_count.total"),
        "finishReason": _first(a, "gen_ai.response.finish_reasons", "llm.finish_reason"),
        "tool": _first(a, "gen_ai.tool.name", "tool.name") if role == "tool" else None,
        "resendCount": _first(a, "http.request.resend_count"),
        "errorType": _first(a, "error.type"),
    }
    refs.update({k: v for k, v in found.items() if v is not None})
    if span.status_message:
        refs["statusMessage"] = span.status_message
    refs.update(_unknown(a))
    return refs


def _attempts(places: Sequence[_Place]) -> dict[str, tuple[int, str]]:
    """LLM calls that repeat an earlier sibling's request: span id → (attempt, first id)."""
    first: dict[tuple[str | None, str], tuple[int, str]] = {}
    out: dict[str, tuple[int, str]] = {}
    for place in places:
        span = place.span
        if _role_kind(span) != "llm":
            continue
        asked = repr(_messages(span, "input")) + str(span.attributes.get("input.value"))
        key = (span.parent_id, hashlib.sha256(asked.encode("utf-8", "replace")).hexdigest())
        if key in first:
            n, origin = first[key]
            first[key] = (n + 1, origin)
            out[span.span_id] = (n + 1, origin)
        else:
            first[key] = (1, span.span_id)
    return out


def otel_groups(profile: EvidenceProfile) -> tuple[str, str]:
    """The (steps, audit) groups of ``profile`` a trace's items go to; UsageError if none."""
    names = profile.names()
    steps = next((g for g in ("spans", "steps", "agentLogs", "toolCalls") if g in names), None)
    audit = next((g for g in ("errors", "runAudit", "spans", "agentLogs") if g in names), None)
    if steps is None or audit is None:
        raise UsageError(
            f"the rubric's evidence groups ({', '.join(names)}) have none for a trace's spans",
            where="--rubric", fix="use a rubric whose profile has agentLogs and runAudit "
            "(such as task-evaluation), or groups named spans/steps and errors")
    return steps, audit


def trace_items(trace: Trace, steps: str, audit: str) -> tuple[
        dict[str, list[dict[str, Any]]], dict[str, int], Span]:
    """Evidence items by group, counts for the facts, and the root span."""
    places = _walk(trace)
    root = places[0].span
    start = min((s.start_ns for s in trace.spans if s.start_ns is not None), default=None)
    attempts = _attempts(places)
    groups: dict[str, list[dict[str, Any]]] = {}
    counts = {"steps": 0, "ok_steps": 0, "errors": 0, "warnings": 0, "tool_calls": 0}
    for place in places[1:]:
        span = place.span
        role = _role_kind(span)
        refs = _refs(place, start, role)
        if span.span_id in attempts:
            refs["attempt"], refs["retryOf"] = attempts[span.span_id]
        failed = span.status == "error" or bool(span.exceptions)
        if role == "llm":
            text, title = _llm_text(span), f"LLM {span.name}"
        elif role == "tool":
            text, title = _tool_text(span), f"tool {refs.get('tool') or span.name}"
        else:
            text, title = _io(span, "output") or "", f"{role} {span.name}"
        if failed:
            detail = dict.fromkeys(d for d in [span.status_message, *span.exceptions] if d)
            text = "\n".join([*detail, text]).strip()
            counts["errors"] += 1
        counts["steps"] += role in {"llm", "tool"}
        counts["ok_steps"] += role in {"llm", "tool"} and not failed
        counts["tool_calls"] += role == "tool"
        item = {"id": f"span-{span.span_id}", "title": title, "text": text, **refs}
        group = steps if role in {"llm", "tool"} and not failed else audit
        groups.setdefault(group, []).append(item)
    if root.status == "error" or root.exceptions:
        counts["errors"] += 1
        groups.setdefault(audit, []).append({
            "id": f"span-{root.span_id}", "title": f"run {root.name}",
            "text": "\n".join(d for d in [root.status_message, *root.exceptions] if d),
            **_refs(places[0], start, _role_kind(root))})
    return groups, counts, root


def _root_io(trace: Trace, root: Span) -> tuple[str | None, str | None]:
    llm = [s for s in trace.spans if _role_kind(s) == "llm"]
    asked = _io(root, "input") or next((t for t in (_io(s, "input") for s in llm) if t), None)
    answer = _io(root, "output") or next(
        (t for t in (_last_text(_messages(s, "output"), None) for s in reversed(llm)) if t),
        None)
    return asked, answer


def _stubbed(groups: dict[str, list[dict[str, Any]]],
             profile: EvidenceProfile) -> dict[str, list[dict[str, Any]]]:
    """Items the group's cap will drop reduced to their id (still counted, never scrubbed).

    :func:`judge.collect.case.build_case` scrubs every item before it caps a group; a trace
    of 10,000 spans would spend seconds scrubbing what no one sees.
    """
    caps = {g.name: g.cap for g in profile.groups}
    out = {}
    for name, items in groups.items():
        cap = caps.get(name, len(items))
        if len(items) <= cap:
            out[name] = items
            continue
        head = (cap + 1) // 2 if name in HEAD_TAIL_GROUPS else cap
        tail = cap - head
        keep = set(range(head)) | set(range(len(items) - tail, len(items)))
        out[name] = [item if i in keep else {"id": item["id"]} for i, item in enumerate(items)]
    return out


def _failed(span: Span) -> bool:
    return span.status == "error" or bool(span.exceptions)


def _conversation_call(places: Sequence[_Place]) -> Span | None:
    """The top-level agent's last LLM call that did not fail (else the trace's last one).

    The top-level agent is the shallowest agent span (else the root); its calls are the LLM
    spans whose nearest agent above them is it, not a sub-agent.
    """
    agents = [p for p in places if _role_kind(p.span) == "agent"]
    top = min(agents, key=lambda p: (p.depth, p.seq)).span if agents else places[0].span
    owner: dict[str, str] = {}
    for place in places:  # parents come before their children in tree order
        span = place.span
        above = owner.get(span.parent_id or "", places[0].span.span_id)
        owner[span.span_id] = span.span_id if span is top or _role_kind(span) == "agent" \
            else above
    calls = [p.span for p in places if _role_kind(p.span) == "llm" and not _failed(p.span)]
    own = [s for s in calls if owner.get(s.parent_id or "", places[0].span.span_id)
           == top.span_id]
    return max(own or calls, key=_order, default=None)


def trace_conversation(trace: Trace, shown: str) -> tuple[tuple[Turn, ...], str]:
    """The trace agent's conversation and the span id it comes from.

    The input messages of :func:`_conversation_call` and its answer, as turns; UsageError
    (exit 2) when there is no such call or it recorded no messages.
    """
    call = _conversation_call(_walk(trace))
    if call is None:
        raise UsageError(f"trace {trace.trace_id} has no LLM call that did not fail, so no "
                         f"conversation", file=shown, where="--conversation",
                         fix="leave --conversation out, or select the traces that have one "
                             "with --trace/--where")
    turns = as_turns([*_messages(call, "input"), *_messages(call, "output")])
    if not turns:
        raise UsageError(f"LLM call span-{call.span_id} of trace {trace.trace_id} records no "
                         f"messages", file=shown, where="--conversation",
                         fix="record message content in the traces (the instrumentor's "
                             "content capture, e.g. OTEL_INSTRUMENTATION_GENAI_CAPTURE_"
                             "MESSAGE_CONTENT), or leave --conversation out")
    return turns, call.span_id


def collect_trace(trace: Trace, profile: EvidenceProfile, shown: str, masked: int = 0,
                  conversation: bool = False) -> Collected:
    """One trace as one case's collection: input, output, span items and ``agent.*`` facts.

    With ``conversation``, also the turns of :func:`trace_conversation`.
    """
    steps, audit = otel_groups(profile)
    groups, counts, root = trace_items(trace, steps, audit)
    groups = _stubbed(groups, profile)
    asked, answer = _root_io(trace, root)
    source: dict[str, Any] = {"kind": "otel", "file": shown, "traceId": trace.trace_id,
                              "rootSpanId": root.span_id, "spans": len(trace.spans)}
    if root.service:
        source["service"] = root.service
    if masked:
        source["maskedAttributes"] = masked
    turns = None
    if conversation:
        turns, source["conversationSpanId"] = trace_conversation(trace, shown)
    return Collected(source=source, evidence=groups,
                     facts={f"agent.{k}": v for k, v in counts.items()},
                     input=asked, output=answer, conversation=turns)
