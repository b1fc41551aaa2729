"""A JSON file a person edits or a tool hands over (core/text/strict_json.py): every refusal is
a ConfigError (exit 2) naming the file, the line and column, and a fix; never a value kept
silently (the last of two keys), never exit 70 (5,000 digits, 100,000 levels)."""

from __future__ import annotations

import pytest

from judge.core.stats.noise import NoiseEstimate
from judge.core.text.errors import ConfigError
from judge.core.text.strict_json import loads_strict, strict_document, strict_model

REFUSED = [
    ('{"sd": 2,\n "df": 3, "df": 4}', "line 2, column 11", "duplicate key 'df'"),
    ('{"a": {"b": 1}, "c": [{"b": 2, "b": 3}]}', "line 1, column 32", "duplicate key 'b'"),
    ('{\n  "df": ' + "9" * 5000 + "}", "line 2, column 9", "5,000 digits"),
    ('{"sd": Infinity}', "line 1, column 8", "Infinity is not a JSON number"),
    ('{"sd": -Infinity}', "line 1, column 8", "-Infinity is not a JSON number"),
    ('{"sd": NaN}', "line 1, column 8", "NaN is not a JSON number"),
    ('{"sd": [1, 1e999]}', "line 1, column 12", "infinity"),
    ('{"ok": "\\ud83d\\ude00", "s": "x\\udc00"}', "line 1, column 29", "lone surrogate"),
    ('{"sd": 2,', "line 1, column 10", "invalid JSON"),
    ("[" * 70 + "]" * 70, None, "nested deeper than 64 levels"),
    ("[" * 100_000 + "]" * 100_000, None, "nested deeper than 64 levels"),
]


@pytest.mark.parametrize(("text", "where", "words"), REFUSED,
                         ids=[w for _, _, w in REFUSED[:-2]] + ["70 deep", "100,000 deep"])
def test_each_refusal_names_the_file_the_place_and_a_fix(text: str, where: str | None,
                                                         words: str) -> None:
    with pytest.raises(ConfigError) as err:
        strict_document(text, "noise.json", ConfigError, "measure it again")
    assert err.value.file == "noise.json" and words in err.value.message
    assert err.value.where == where and err.value.fix


def test_a_json_lines_line_is_placed_by_its_line_number() -> None:
    with pytest.raises(ConfigError) as err:
        strict_document('{"case": "a", "case": "b"}', "l.jsonl", ConfigError, "x", line=7)
    assert err.value.where == "line 7, column 15"


def test_a_valid_document_reads_as_json_loads_does() -> None:
    text = '{"sd": 2.5, "df": 20, "s": "\\ud83d\\ude00", "n": null, "l": [1, -0.5e3]}'
    assert strict_document(text, "f", ConfigError, "x") == loads_strict(text)
    assert loads_strict('{"s": "\\ud800"}', surrogates=True) == {"s": "\ud800"}


@pytest.mark.parametrize(("value", "where"), [
    ({"sd": 2.5, "low": 1, "high": 4, "df": True}, "df"),  # true is not a number
    ({"sd": 2.5, "low": 1, "high": 4, "df": "20"}, "df"),  # nor is a string of digits
    ({"sd": "2.5", "low": 1, "high": 4, "df": 20}, "sd"),
    ({"sd": 2.5, "low": 1, "high": 4, "df": 20, "extra": 1}, "extra"),
])
def test_types_are_the_schemas_strictly(value: dict[str, object], where: str) -> None:
    with pytest.raises(ConfigError) as err:
        strict_model(NoiseEstimate, value, "n.json", ConfigError, "measure it again")
    assert err.value.where == where and err.value.file == "n.json"
    assert strict_model(NoiseEstimate, {"sd": 2, "low": 1, "high": 4, "df": 20}, "n.json",
                        ConfigError, "x").sd == 2.0  # an integer is a valid float
