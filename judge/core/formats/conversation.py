"""Conversations as cases: turns (role, content, tool calls and results), bounded and citable.

A case may carry ``conversation:`` instead of (or beside) ``output``: the turns of a chat,
an agent's messages, a support thread. The judge reads them under ``## Conversation`` in
order, each turn in its own fence under a citable id (``turn:3``), and may cite turns as it
cites evidence. The rules are those of evidence (:mod:`judge.core.formats.evidence`), set here once:

- at most :data:`TURN_CAP` turns are shown; past it the head (how it started) and the tail
  (how it ended) are kept and the middle is dropped, counted and said, never silent;
- a turn's text is at most :data:`TURN_LIMIT` characters including the ``… [truncated]``
  marker; tool calls are written into it as ``→ name(arguments)``;
- a turn's id is its position in the conversation as written (``turn:1`` is the first),
  so a dropped middle never renumbers the tail and the same turns give the same ids;
- every string is untrusted: the renderer prints it only through its fence filters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from ..text.frozen import Frozen
from .evidence import structured_text, truncate

__all__ = [
    "CONVERSATION_GROUP",
    "TOOL_ARGUMENTS_LIMIT",
    "TURN_CAP",
    "TURN_LIMIT",
    "ConversationView",
    "ToolCall",
    "Turn",
    "TurnView",
    "bound_conversation",
]

TURN_CAP = 50
"""Most turns shown to the judge (head and tail kept; the middle counted)."""
TURN_LIMIT = 2000
"""Longest turn text shown, the truncation marker included."""
TOOL_ARGUMENTS_LIMIT = 300
"""Longest tool-call argument text written into a turn, the marker included."""
CONVERSATION_GROUP = "conversation"
"""The group a cited turn is recorded under in a result's evidence."""


class ToolCall(Frozen):
    """A tool the turn's speaker called."""

    name: str = Field(min_length=1, max_length=200)
    """The tool's name."""
    arguments: Any = None
    """Its arguments (text, or JSON data written as canonical JSON)."""
    id: str | None = Field(default=None, max_length=200)
    """The call's id, which a ``tool`` turn's ``tool_call_id`` answers."""


class Turn(Frozen):
    """One turn of a conversation."""

    role: Literal["system", "user", "assistant", "tool"]
    """Who spoke: ``system``, ``user``, ``assistant`` or ``tool`` (a tool's result)."""
    content: str = ""
    """What was said (or what the tool returned)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tools the assistant called in this turn."""
    tool_call_id: str | None = Field(default=None, max_length=200)
    """For a ``tool`` turn: the call it answers."""
    name: str | None = Field(default=None, max_length=200)
    """A speaker's or tool's name, when given."""


class TurnView(Frozen):
    """A turn as the judge sees it: its citable id, role, label and bounded text."""

    id: str
    role: str
    label: str
    """``assistant``, ``tool search (call_1)``...: the role and what the turn is about."""
    text: str
    truncated: bool = False


class ConversationView(Frozen):
    """The turns shown, in order, and how many the cap dropped (between head and tail)."""

    turns: tuple[TurnView, ...] = ()
    total: int = 0
    dropped: int = 0
    gap_after: int | None = None
    """Index in ``turns`` after which the dropped turns sat (None: nothing dropped)."""

    def ids(self) -> tuple[str, ...]:
        """Every citable turn id, in order."""
        return tuple(t.id for t in self.turns)

    def notice(self) -> str | None:
        """What the cap dropped, in words, or None."""
        if not self.dropped:
            return None
        return f"{self.dropped} more turns not shown"


def _arguments(value: Any) -> str:
    return truncate(" ".join(structured_text(value).split()), TOOL_ARGUMENTS_LIMIT)[0]


def _label(turn: Turn) -> str:
    parts: list[str] = [turn.role]
    if turn.name:
        parts.append(turn.name)
    if turn.tool_call_id:
        parts.append(f"(answers {turn.tool_call_id})")
    return " ".join(" ".join(p.split()) for p in parts)


def _turn_text(turn: Turn) -> str:
    lines = [turn.content] if turn.content.strip() else []
    lines += [f"→ {c.name}({_arguments(c.arguments)})" for c in turn.tool_calls]
    return "\n".join(lines)


def _view(turn: Turn, position: int, limit: int) -> TurnView:
    text, cut = truncate(_turn_text(turn), limit)
    return TurnView(id=f"turn:{position}", role=turn.role, label=_label(turn), text=text,
                    truncated=cut)


def bound_conversation(turns: Sequence[Turn] | None, cap: int = TURN_CAP,
                       limit: int = TURN_LIMIT) -> ConversationView:
    """The turns the judge sees: at most ``cap`` (head and tail), each at most ``limit``."""
    turns = tuple(turns or ())
    total = len(turns)
    positions = list(range(1, total + 1))
    gap: int | None = None
    if total > cap:
        head = (cap + 1) // 2
        positions = positions[:head] + positions[total - (cap - head):]
        gap = head - 1
    return ConversationView(
        turns=tuple(_view(turns[p - 1], p, limit) for p in positions), total=total,
        dropped=max(0, total - cap), gap_after=gap)
