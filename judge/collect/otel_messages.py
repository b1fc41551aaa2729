"""The messages of an LLM span, in the three ways traces write them, and as conversation turns.

- **OpenInference**: ``llm.input_messages.N.message.role``/``content``/``name``/
  ``tool_call_id``, ``…contents.M.message_content.text``,
  ``…tool_calls.M.tool_call.id``/``function.name``/``function.arguments``
  (``llm.output_messages.N…`` for the answer).
- **OTel GenAI, current**: ``gen_ai.input.messages``/``gen_ai.output.messages``, JSON lists of
  ``{role, parts: [{type: text, content} | {type: tool_call, id, name, arguments} |
  {type: tool_call_response, id, response}]}``; the older ``gen_ai.prompt``/
  ``gen_ai.completion`` JSON texts are read the same way.
- **OTel GenAI, numbered** (OpenLLMetry and the conventions before 1.28):
  ``gen_ai.prompt.N.role``/``content``/``tool_call_id``/``tool_calls.M.id``/``name``/
  ``arguments``, and ``gen_ai.completion.N…`` for the answer.

Attributes arrive already bounded and masked (:mod:`judge.collect.otel`); turns are cut as a
case's conversation is shown (:data:`judge.core.formats.conversation.TURN_LIMIT`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.formats.conversation import TURN_LIMIT, ToolCall, Turn
from ..core.formats.evidence import structured_text, truncate
from ..core.text.strict_json import loads_strict

__all__ = ["MESSAGE_KEYS", "Call", "Message", "as_turns", "span_messages"]

MESSAGE_KEYS = frozenset({"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt",
                          "gen_ai.completion"})
"""Attributes holding a whole JSON list of messages: read longer than others, to parse."""
_OI_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_TOOL_CALL = re.compile(
    r"^tool_calls\.(\d+)\.tool_call\.(?:function\.)?(name|arguments|id)$")
_OI_CONTENT = re.compile(r"^contents\.(\d+)\.message_content\.text$")
_NUMBERED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_NUMBERED_CALL = re.compile(r"^tool_calls\.(\d+)\.(name|arguments|id)$")
_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user",
          "assistant": "assistant", "ai": "assistant", "model": "assistant",
          "tool": "tool", "function": "tool", "ipython": "tool"}
_ID_LIMIT = 200


@dataclass(frozen=True)
class Call:
    """A tool call a message made."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class Message:
    """One message as a span recorded it (role as written, possibly empty)."""

    role: str
    content: str
    calls: tuple[Call, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return structured_text(value)


def _opt(value: Any) -> str | None:
    return _text(value) or None


def _collected(raw: Mapping[str, Any]) -> Message:
    calls = tuple(Call(_text(c.get("name")) or "tool", _text(c.get("arguments")),
                       _opt(c.get("id"))) for _, c in sorted(raw["calls"].items()))
    return Message(role=_text(raw.get("role")), content=_text(raw.get("content")),
                   calls=calls, tool_call_id=_opt(raw.get("tool_call_id")),
                   name=_opt(raw.get("name")))


def _keyed(attrs: Mapping[str, Any], pattern: re.Pattern[str], which: str,
           call: re.Pattern[str]) -> list[Message]:
    """Messages spread over numbered attributes (OpenInference's and the numbered GenAI)."""
    messages: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = pattern.match(key)
        if not match or match[1] != which:
            continue
        message = messages.setdefault(int(match[2]), {"calls": {}})
        rest = match[3]
        called = call.match(rest)
        content = _OI_CONTENT.match(rest)
        if called:
            message["calls"].setdefault(int(called[1]), {})[called[2]] = value
        elif content:
            message["content"] = f"{message.get('content', '')}{value}"
        elif rest in {"role", "content", "name", "tool_call_id"}:
            message[rest] = value
    return [_collected(messages[i]) for i in sorted(messages)]


def _json_messages(value: Any) -> list[Message]:
    if not isinstance(value, str):
        return []
    try:
        data = loads_strict(value, surrogates=True)
    except (ValueError, RecursionError):  # not strict JSON: kept as the text it is
        return [Message(role="", content=value)]
    out = []
    for message in data if isinstance(data, list) else []:
        if isinstance(message, Mapping):
            out.append(_json_message(message))
    return out


def _json_message(message: Mapping[str, Any]) -> Message:
    texts, calls, answers = [], [], None
    for part in message.get("parts") or []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "tool_call":
            calls.append(Call(_text(part.get("name")) or "tool", _text(part.get("arguments")),
                              _opt(part.get("id"))))
        elif kind == "tool_call_response":
            texts.append(_text(part.get("response")))
            answers = answers or _opt(part.get("id"))
        elif isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif isinstance(kind, str):
            texts.append(f"[{kind}]")
    if isinstance(message.get("content"), str):
        texts.append(message["content"])
    for raw in message.get("tool_calls") or []:  # the OpenAI shape some exporters keep
        function = raw.get("function") if isinstance(raw, Mapping) else None
        if isinstance(function, Mapping):
            calls.append(Call(_text(function.get("name")) or "tool",
                              _text(function.get("arguments")), _opt(raw.get("id"))))
    return Message(role=_text(message.get("role")), content="\n".join(texts),
                   calls=tuple(calls),
                   tool_call_id=answers or _opt(message.get("tool_call_id")),
                   name=_opt(message.get("name")))


def span_messages(attrs: Mapping[str, Any], which: str) -> list[Message]:
    """The ``input`` or ``output`` messages an LLM span recorded, else none.

    Read in the first vocabulary that has them: OpenInference, GenAI JSON, GenAI numbered.
    """
    return (_keyed(attrs, _OI_MESSAGE, which, _OI_TOOL_CALL)
            or _json_messages(attrs.get(f"gen_ai.{which}.messages"))
            or _json_messages(attrs.get("gen_ai.prompt" if which == "input" else
                                        "gen_ai.completion"))
            or _keyed(attrs, _NUMBERED, "prompt" if which == "input" else "completion",
                      _NUMBERED_CALL))


def _turn(message: Message) -> Turn:
    role = _ROLES.get(message.role.strip().lower())
    name = message.name
    if role is None:  # a role of no vocabulary: kept as the speaker's name
        role, name = "user", name or message.role.strip() or None
    return Turn(role=role, content=truncate(message.content, TURN_LIMIT)[0],
                tool_calls=tuple(ToolCall(name=c.name[:_ID_LIMIT] or "tool",
                                          arguments=c.arguments,
                                          id=c.id[:_ID_LIMIT] if c.id else None)
                                 for c in message.calls),
                tool_call_id=message.tool_call_id[:_ID_LIMIT] if message.tool_call_id
                else None, name=name[:_ID_LIMIT] if name else None)


def as_turns(messages: Sequence[Message]) -> tuple[Turn, ...]:
    """Messages as a case's conversation turns, in order.

    Roles are mapped to the four a turn has; each text is cut to TURN_LIMIT with the marker
    (the judge sees no more); the renderer keeps the head and tail of a long conversation,
    as for every case.
    """
    return tuple(_turn(m) for m in messages if m.content.strip() or m.calls)
