"""Reading a judge's reply: what is forgiven around and inside the JSON object."""

from __future__ import annotations

import pytest

from judge.core.scoring.replies import extract_json
from judge.core.text.errors import OutputError


@pytest.mark.parametrize("text", [
    '{"a": {"rationale": "line one\nline two", "score": 50}}',
    '{"a": {"rationale": "tab\there", "score": 50},}',
    'Here it is:\n```json\n{"a": {"rationale": "cr\r\nlf", "score": 50}}\n```',
])
def test_raw_control_characters_inside_strings_are_read_as_text(text: str) -> None:
    value = extract_json(text)
    assert value["a"]["score"] == 50
    assert any(ch in value["a"]["rationale"] for ch in "\n\t\r")


@pytest.mark.parametrize("text", ['{"a": 1,, "b": 2}', '{"a": }', '{"a": 1'])
def test_what_is_not_json_stays_an_error(text: str) -> None:
    with pytest.raises(OutputError):
        extract_json(text)
