"""The agent-log adapter: JSONL transcripts into ``agentLogs`` steps with stable ids.

Two line shapes, mixable: an OpenAI chat message (``{"role", "content", "tool_calls"...}``;
a line holding ``{"messages": [...]}`` gives each of its messages) and a plain log record
(``{"ts", "level", "message"}``). Step *n* is the n-th message or record, cited as
``agentLogs:step-n``: the same file gives the same ids. Tool calls are written into the
step's text as ``→ name(arguments)``. The first user message is the case's input and the
last assistant message its output, unless a task file says otherwise. Credentials are
scrubbed from every step by :func:`judge.collect.case.build_case`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NotRequired, TypedDict

from ..core.formats.evidence import structured_text
from ..core.text.errors import UsageError
from .case import Collected
from .shape import Fields, ShapeError, load_json
from .sources import read_source

__all__ = ["ERROR_LEVELS", "WARNING_LEVELS", "StepItem", "collect_agent_log", "parse_agent_log"]

ERROR_LEVELS = frozenset({"error", "err", "critical", "fatal"})
WARNING_LEVELS = frozenset({"warn", "warning"})


def _content(record: Fields, key: str) -> str:
    value = record.data.get(key)
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}, ...]
        parts = record.objects(key)
        return "\n".join(text for text in (p.text("text") for p in parts) if text is not None)
    if isinstance(value, Mapping):  # a structured log message
        return structured_text(value)
    return record.text(key) or ""


def _tool_calls(message: Fields) -> list[tuple[str, str]]:
    calls = []
    for call in message.objects("tool_calls"):
        function = call.obj("function") or call
        name = function.text("name") or "tool"
        arguments = function.data.get("arguments")
        if isinstance(arguments, Mapping | list):  # some logs keep the parsed object
            arguments = structured_text(arguments)
        else:
            arguments = function.text("arguments")
        calls.append((name, arguments or ""))
    return calls


def _records(text: str) -> Iterator[tuple[int, Fields]]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = load_json(line)
        except ShapeError as exc:
            raise ValueError(f"line {lineno}: {exc}") from None
        if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
            for n, message in enumerate(data["messages"]):
                if not isinstance(message, Mapping):
                    raise ValueError(f"line {lineno}: messages[{n}]: a message is a JSON "
                                     "object")
                yield lineno, Fields(message, f"messages[{n}]")
        elif isinstance(data, Mapping) and ("role" in data or "message" in data):
            yield lineno, Fields(data)
        else:
            raise ValueError(f"line {lineno}: neither a chat message (role, content) nor a "
                             "log record (ts, level, message)")


def _timestamp(record: Fields) -> str | int | float | None:
    for key in ("ts", "timestamp"):
        value = record.data.get(key)
        if value is None:
            continue
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return value
        raise ShapeError(record.where(key), "expected a string or a number (a time)")
    return None


class StepItem(TypedDict):
    """An ``agentLogs`` item: one line of the log (a message, or a logged event)."""

    id: str
    step: int
    line: int
    role: NotRequired[str]
    tools: NotRequired[list[str]]
    toolCall: NotRequired[str]
    level: NotRequired[str]
    text: NotRequired[str]
    body: NotRequired[str]
    at: NotRequired[str | int | float]


def _step(n: int, lineno: int, record: Fields, counts: dict[str, int]) -> StepItem:
    step: StepItem = {"id": f"step-{n}", "step": n, "line": lineno}
    if record.has("role"):
        role = record.text("role") or ""
        body = _content(record, "content")
        calls = _tool_calls(record)
        counts["tool_calls"] += len(calls)
        lines = [body] if body.strip() else []
        lines += [f"→ {name}({args})" for name, args in calls]
        step["role"] = role
        if calls:
            step["tools"] = [name for name, _ in calls]
        call_id = record.ident("tool_call_id")
        if role == "tool" and call_id:
            step["toolCall"] = call_id
        if record.flag("is_error") is True or record.text("status") == "error":
            step["level"] = "error"
            counts["errors"] += 1
        step["text"] = "\n".join(lines)
        step["body"] = body
    else:
        level = (record.text("level") or "info").lower()
        step["level"] = level
        counts["errors"] += level in ERROR_LEVELS
        counts["warnings"] += level in WARNING_LEVELS
        step["text"] = _content(record, "message")
    at = _timestamp(record)
    if at is not None:
        step["at"] = at
    return step


def parse_agent_log(text: str) -> tuple[list[StepItem], dict[str, int], str | None,
                                         str | None]:
    """Steps, counts (steps, ok_steps, errors, ...), first user and last assistant text.

    The counts are steps, ok_steps, errors, warnings and tool_calls; a step is an error at
    most once, so ``ok_steps = steps - errors``.

    ValueError names the line and the path of a value of the wrong type (``line 3:
    tool_calls: expected a list, got a number (5)``).
    """
    steps: list[StepItem] = []
    counts = {"steps": 0, "ok_steps": 0, "errors": 0, "warnings": 0, "tool_calls": 0}
    first_user: str | None = None
    last_assistant: str | None = None
    for n, (lineno, record) in enumerate(_records(text), start=1):
        try:
            step = _step(n, lineno, record, counts)
        except ShapeError as exc:
            raise ValueError(f"line {lineno}: {exc}") from None
        body = step.pop("body", "")
        if step.get("role") == "user" and first_user is None and body.strip():
            first_user = body
        if step.get("role") == "assistant" and body.strip():
            last_assistant = body
        steps.append(step)
    counts["steps"] = len(steps)
    counts["ok_steps"] = sum(s.get("level") not in ERROR_LEVELS for s in steps)
    return steps, counts, first_user, last_assistant


def collect_agent_log(path: Path, base: Path) -> Collected:
    """``--agent-log FILE`` (relative to ``base``): steps, ``agent.*`` facts, input, output."""
    text = read_source(base / path, "--agent-log", "agent log")
    try:
        steps, counts, first_user, last_assistant = parse_agent_log(text)
    except ValueError as exc:
        raise UsageError(str(exc), file=str(path), where="--agent-log",
                         fix="one JSON object a line: {\"role\": ..., \"content\": ...} or "
                             "{\"ts\": ..., \"level\": ..., \"message\": ...}") from None
    return Collected(source={"kind": "agent-log", "file": str(path), "steps": len(steps)},
                     evidence={"agentLogs": steps} if steps else {},
                     facts={f"agent.{k}": v for k, v in counts.items()},
                     input=first_user, output=last_assistant)
