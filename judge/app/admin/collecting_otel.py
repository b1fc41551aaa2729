"""``judge suite collect otel``: OpenTelemetry traces into cases, one a trace, written to a suite.

Every trace of the files is a case unless selected: ``--trace ID`` (repeatable) or
``--where KEY=VALUE`` (a span of the trace has that attribute, e.g. ``session.id=s1``).
A case is named ``--id`` (only when one trace is selected), else by the value of
``--id-attr`` (e.g. ``session.id``), else ``trace-<first 16 hex digits>``. Cases are built
by :func:`judge.collect.case.build_case` like every collected case (caps, truncation,
scrubbing, signals); ``--conversation`` adds the agent's turns to each. The suite file is
written as ``judge suite collect`` writes one: checked whole, then atomically; nothing is written
when any trace or case is bad.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...collect.case import build_case
from ...collect.otel import Trace, collect_trace, group_traces, read_spans
from ...core.formats.rubric import Rubric
from ...core.formats.suite import Case, Suite, iter_cases, iter_jsonl, validate_cases
from ...core.text.errors import UsageError
from ...core.text.frozen import Frozen
from ...system.resources import load_suite, read_suite_text
from ..workspace.workspace import Workspace
from .collecting import (
    CollectRequest,
    _append_yaml,
    _check_request,
    _existing_jsonl,
    _jsonl_line,
    _new_suite_text,
    _suite_id,
    _validated,
    _write_atomic,
)

__all__ = ["OtelCollectRequest", "OtelCollectResult", "collect_otel"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._:/-]+")


class OtelCollectRequest(Frozen):
    """Which traces make cases, and the suite file they go to."""

    paths: tuple[Path, ...]
    """Trace files or folders (relative to the workspace)."""
    suite: Path
    case_id: str | None = None
    """The case's id when one trace is selected."""
    id_attr: str | None = None
    """Attribute whose value names each case (``session.id``)."""
    traces: tuple[str, ...] = ()
    """Trace ids to keep (hex)."""
    where: tuple[str, ...] = ()
    """``KEY=VALUE`` filters: a span of the trace has the attribute with that value."""
    rubric: str | None = None
    append: bool = False
    conversation: bool = False
    """Each case also carries the agent's conversation (:func:`judge.collect.otel.
    trace_conversation`): the last LLM call's messages and answer, as turns."""


@dataclass(frozen=True)
class OtelCollectResult:
    """What was written."""

    path: Path
    suite_id: str
    rubric: str
    cases: tuple[Case, ...]
    traces: int
    """Traces the files held (before selection)."""
    redactions: int
    total_cases: int
    appended: bool


def _filters(where: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for item in where:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"--where {item!r} is not KEY=VALUE", where="--where",
                             fix="write e.g. --where session.id=s1")
        out.append((key, value))
    return out


def _attr(trace: Trace, key: str) -> str | None:
    for span in trace.spans:
        value = span.attributes.get(key)
        if value is not None:
            return str(value)
    return None


def _selected(traces: list[Trace], request: OtelCollectRequest) -> list[Trace]:
    filters = _filters(request.where)
    wanted = {t.lower().removeprefix("0x") for t in request.traces}
    kept = [t for t in traces
            if (not wanted or t.trace_id in wanted)
            and all(any(str(s.attributes.get(k)) == v for s in t.spans) for k, v in filters)]
    if not kept:
        raise UsageError(f"no trace matches (the files hold {len(traces)})",
                         where="--trace" if wanted else "--where",
                         fix="check the trace ids and KEY=VALUE filters")
    return kept


def _case_id(trace: Trace, request: OtelCollectRequest, single: bool) -> str:
    if request.case_id is not None:
        if not single:
            raise UsageError("--id names one case, but several traces are selected",
                             where="--id", fix="select one with --trace or --where, or name "
                             "cases by an attribute with --id-attr")
        return request.case_id
    if request.id_attr:
        value = _attr(trace, request.id_attr)
        if value is None:
            raise UsageError(f"trace {trace.trace_id} has no attribute {request.id_attr!r}",
                             where="--id-attr", fix="name an attribute every selected trace "
                             "has, or leave --id-attr out")
        cleaned = _UNSAFE.sub("-", value).strip("-._:/")[:200]
        return cleaned or f"trace-{trace.trace_id[:16]}"
    return f"trace-{trace.trace_id[:16]}"


def collect_otel(ws: Workspace, request: OtelCollectRequest) -> OtelCollectResult:
    """Build the selected traces' cases and write them; UsageError (exit 2) on bad input."""
    path = ws.path(request.suite)
    _check_request(_as_plain(request), path)
    existing: Suite | None = None
    appending = request.append and path.exists()
    if appending and path.suffix != ".jsonl":
        existing = load_suite(path)
    rubric = ws.rubric(request.rubric, default=existing.rubric if existing else None)
    spans, masked = read_spans(request.paths, ws.root)
    traces = group_traces(spans)
    del spans
    if not traces:
        raise UsageError("the files hold no spans", file=str(request.paths[0]),
                         where="judge suite collect otel", fix="export a run's traces first")
    held = len(traces)
    chosen: list[Trace | None] = list(_selected(traces, request))
    del traces
    cases, redactions = [], masked
    single = len(chosen) == 1
    for index, trace in enumerate(chosen):
        assert trace is not None
        chosen[index] = None  # a trace's spans are let go once its case is built
        case_id = _case_id(trace, request, single)
        built = build_case(case_id, [collect_trace(
            trace, rubric.evidence, str(request.paths[0]), masked if single else 0,
            conversation=request.conversation)], rubric, ws.secret_pattern)
        del trace
        cases.append(built.case)
        redactions += built.redactions
    text, suite_id, _ = _suite_text(path, request, existing, tuple(cases), rubric.id)
    count = _validated_text(text, path, rubric, suite_id)
    _write_atomic(path, text)
    return OtelCollectResult(path=path, suite_id=suite_id, rubric=rubric.id,
                             cases=tuple(cases), traces=held, redactions=redactions,
                             total_cases=count, appended=appending)


def _as_plain(request: OtelCollectRequest) -> CollectRequest:
    """What :func:`judge.app.admin.collecting._check_request` reads, for a trace collection."""
    return CollectRequest(case_id=request.case_id or "trace", suite=request.suite,
                          documents=request.paths, append=request.append)


def _validated_text(text: str, path: Path, rubric: Rubric, suite_id: str) -> int:
    """The cases the file will hold, every one checked as ``judge suite validate`` would."""
    if path.suffix == ".jsonl":
        lines = text.splitlines()
        count = 0
        for _ in iter_cases(iter_jsonl(lines, str(path)), str(path)):
            count += 1
        validate_cases(iter_cases(iter_jsonl(lines, str(path)), str(path)), rubric, str(path))
        return count
    return len(_validated(text, path, rubric, suite_id).cases)


def _suite_text(path: Path, request: OtelCollectRequest, existing: Suite | None,
                cases: tuple[Case, ...], rubric_id: str) -> tuple[str, str, int]:
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise UsageError(f"two selected traces give the case id {dup!r}", where="--id-attr",
                         fix="name cases by an attribute unique to each trace, or leave "
                             "--id-attr out (trace ids)")
    if request.append and path.exists() and path.suffix == ".jsonl":
        text, count = "", 0
        for case in cases:  # each id checked against the file's
            text, count = _existing_jsonl(path, case.id)
        sep = "" if not text or text.endswith("\n") else "\n"
        return text + sep + "".join(_jsonl_line(c) for c in cases), _suite_id(path), \
            count + len(cases)
    if existing is not None:
        taken = {c.id for c in existing.cases}
        clash = next((i for i in ids if i in taken), None)
        if clash is not None:
            raise UsageError(f"suite {path} already has a case {clash!r}", where="--id",
                             fix="choose other ids, or remove that case from the file first")
        text = read_suite_text(path)
        suite = existing
        for case in cases:
            text, _ = _append_yaml(text, suite, case, str(path))
            suite = suite.model_copy(update={"cases": (*suite.cases, case)})
        return text, existing.id, len(suite.cases)
    fresh = Suite(id=_suite_id(path), rubric=request.rubric or rubric_id,
                  description="Cases collected from OpenTelemetry traces by judge suite "
                              "collect otel.",
                  cases=cases)
    return _new_suite_text(path, fresh), fresh.id, len(cases)
