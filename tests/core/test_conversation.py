"""Conversations as cases: bounded, citable turns; bad shapes named by file, case and turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.core.formats.conversation import (
    TURN_LIMIT,
    ToolCall,
    Turn,
    bound_conversation,
)
from judge.core.formats.suite import Case, lacks_output, parse_suite
from judge.core.text.errors import SuiteError


def _turns(n: int) -> list[Turn]:
    return [Turn(role="user" if i % 2 else "assistant", content=f"turn {i}")
            for i in range(1, n + 1)]


def test_turns_are_numbered_as_written_and_capped_head_and_tail() -> None:
    view = bound_conversation(_turns(60), cap=10)
    assert view.ids() == tuple(f"turn:{i}" for i in (1, 2, 3, 4, 5, 56, 57, 58, 59, 60))
    assert view.total == 60 and view.dropped == 50
    assert view.notice() == "50 more turns not shown" and view.gap_after == 4
    small = bound_conversation(_turns(3))
    assert small.ids() == ("turn:1", "turn:2", "turn:3") and small.notice() is None
    assert small.gap_after is None


def test_a_long_turn_is_cut_with_the_marker_and_tool_calls_are_written() -> None:
    turn = Turn(role="assistant", content="x" * 5000,
                tool_calls=(ToolCall(name="search", arguments={"q": "a" * 1000}, id="c1"),))
    (view,) = bound_conversation([turn]).turns
    assert len(view.text) == TURN_LIMIT and view.text.endswith("… [truncated]")
    assert view.truncated
    short = Turn(role="assistant", content="ok",
                 tool_calls=(ToolCall(name="search", arguments={"q": "paris"}),))
    # structured_text's form (judge.core.formats.evidence), as every other structured value in a
    # prompt: written compact here before, so such a case's cache key moved once.
    assert bound_conversation([short]).turns[0].text == 'ok\n→ search({"q": "paris"})'
    answer = Turn(role="tool", content="18C", tool_call_id="c1", name="search")
    assert bound_conversation([answer]).turns[0].label == "tool search (answers c1)"


def test_a_case_without_a_conversation_dumps_as_before() -> None:
    case = Case(id="a", output="x")
    assert "conversation" not in case.model_dump_json()
    assert "conversation" not in case.model_dump(mode="json")
    with_turns = Case(id="b", conversation=(Turn(role="user", content="hi"),))
    assert json.loads(with_turns.model_dump_json())["conversation"][0]["content"] == "hi"
    assert not lacks_output(with_turns)  # the conversation is what is judged


@pytest.mark.parametrize(("turn", "where"), [
    ('{role: robot, content: hi}', "conversation turn 2 (conversation[1].role)"),
    ('{role: user, content: hi, mood: x}', "conversation turn 2 (conversation[1].mood)"),
    ('{role: user, content: [1, 2]}', "conversation turn 2 (conversation[1].content)"),
    ('{role: assistant, tool_calls: [{arguments: {}}]}',
     "conversation turn 2 (conversation[1].tool_calls.0.name)"),
])
def test_bad_turns_name_the_file_the_case_and_the_turn(turn: str, where: str) -> None:
    text = f"cases:\n  - id: chat\n    conversation:\n      - {{role: user, content: ok}}\n" \
           f"      - {turn}\n"
    with pytest.raises(SuiteError) as info:
        parse_suite(text, "suite.yaml", default_id="s")
    message = str(info.value)
    assert "suite.yaml" in message and "case 'chat'" in message and where in message, message


def test_the_cli_validator_exits_2_on_a_bad_turn(tmp_path: Path) -> None:
    from conftest import run_judge
    (tmp_path / "s.yaml").write_text("cases:\n  - id: chat\n    conversation:\n"
                                     "      - {role: user}\n      - {content: no role}\n")
    proc = run_judge(["suite", "validate", "s.yaml"], tmp_path)
    assert proc.returncode == 2
    assert "s.yaml" in proc.stderr and "chat" in proc.stderr and "turn 2" in proc.stderr
