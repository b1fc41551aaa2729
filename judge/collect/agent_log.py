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

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from .case import Collected
from .sources import read_source

__all__ = ["ERROR_LEVELS", "WARNING_LEVELS", "collect_agent_log", "parse_agent_log"]

ERROR_LEVELS = frozenset({"error", "err", "critical", "fatal"})
WARNING_LEVELS = frozenset({"warn", "warning"})


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "\n".join(str(p.get("text")) for p in value
                         if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return "" if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _tool_calls(message: Mapping[str, Any]) -> list[tuple[str, str]]:
    calls = []
    for call in message.get("tool_calls") or []:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function") if isinstance(call.get("function"), Mapping) else call
        assert isinstance(function, Mapping)
        name = str(function.get("name") or "tool")
        arguments = function.get("arguments")
        calls.append((name, arguments if isinstance(arguments, str)
                      else json.dumps(arguments, sort_keys=True, ensure_ascii=False)))
    return calls


def _records(text: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {lineno}: invalid JSON: {exc.msg}") from None
        if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
            for message in data["messages"]:
                if not isinstance(message, Mapping):
                    raise ValueError(f"line {lineno}: a message is a JSON object")
                yield lineno, message
        elif isinstance(data, Mapping) and ("role" in data or "message" in data):
            yield lineno, data
        else:
            raise ValueError(f"line {lineno}: neither a chat message (role, content) nor a "
                             "log record (ts, level, message)")


def parse_agent_log(text: str) -> tuple[list[dict[str, Any]], dict[str, int], str | None,
                                         str | None]:
    """Steps, counts (steps, errors, warnings, tool_calls), first user and last assistant text."""
    steps: list[dict[str, Any]] = []
    counts = {"steps": 0, "errors": 0, "warnings": 0, "tool_calls": 0}
    first_user: str | None = None
    last_assistant: str | None = None
    for n, (lineno, record) in enumerate(_records(text), start=1):
        ts = record.get("ts") or record.get("timestamp")
        step: dict[str, Any] = {"id": f"step-{n}", "step": n, "line": lineno}
        if "role" in record:
            role = str(record.get("role"))
            body = _content(record.get("content"))
            calls = _tool_calls(record)
            counts["tool_calls"] += len(calls)
            lines = [body] if body.strip() else []
            lines += [f"→ {name}({args})" for name, args in calls]
            step["role"] = role
            if calls:
                step["tools"] = [name for name, _ in calls]
            if role == "tool" and record.get("tool_call_id"):
                step["toolCall"] = str(record["tool_call_id"])
            failed = record.get("is_error") is True or str(record.get("status")) == "error"
            if failed:
                step["level"] = "error"
                counts["errors"] += 1
            if role == "user" and first_user is None and body.strip():
                first_user = body
            if role == "assistant" and body.strip():
                last_assistant = body
            step["text"] = "\n".join(lines)
        else:
            level = str(record.get("level") or "info").lower()
            step["level"] = level
            counts["errors"] += level in ERROR_LEVELS
            counts["warnings"] += level in WARNING_LEVELS
            step["text"] = _content(record.get("message"))
        if isinstance(ts, str | int | float) and not isinstance(ts, bool):
            step["at"] = ts
        steps.append(step)
    counts["steps"] = len(steps)
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
