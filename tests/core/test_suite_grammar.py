"""One suite grammar for YAML and JSONL: YAML numbers by the 1.2 core
schema, duplicate keys refused in JSONL as in YAML, integers bounded, surrogates refused."""

from __future__ import annotations

from typing import Any

import pytest

from judge.core.formats.limits import MAX_INT_DIGITS
from judge.core.formats.suite import parse_suite
from judge.core.text.errors import SuiteError
from judge.core.text.safeyaml import load_yaml
from judge.core.text.strict_json import JsonProblem, loads_strict

# (YAML scalar, value by YAML 1.2; what PyYAML's 1.1 rules made of it, in the comment)
YAML_12: tuple[tuple[str, Any], ...] = (
    ("1:30", "1:30"),      # 1.1: 90 (base 60)
    ("190:20:30", "190:20:30"),  # 1.1: 685230
    ("017", 17),           # 1.1: 15 (octal)
    ("0o17", 15),          # 1.1: the string "0o17"
    ("0x1F", 31),
    ("yes", "yes"),        # 1.1: True
    ("no", "no"),          # 1.1: False
    ("on", "on"),          # 1.1: True
    ("off", "off"),        # 1.1: False
    ("y", "y"),
    ("True", True),
    ("false", False),
    ("1_000", "1_000"),    # 1.1: 1000
    ("1e3", 1000.0),       # 1.1: the string "1e3"
    ("1.5", 1.5),
    ("-7", -7),
    ("+7", 7),
    ("null", None),
    ("~", None),
    ("0b101", "0b101"),    # 1.1: 5
)


@pytest.mark.parametrize(("scalar", "value"), YAML_12, ids=[r[0] for r in YAML_12])
def test_yaml_scalars_resolve_by_the_1_2_core_schema(scalar: str, value: Any) -> None:
    for timestamps in (True, False):
        got = load_yaml(f"v: {scalar}\n", "t.yaml", SuiteError, max_chars=100,
                        timestamps=timestamps)["v"]
        assert got == value and type(got) is type(value), (scalar, got)


def test_a_base_60_score_is_refused_not_turned_into_90() -> None:
    with pytest.raises(SuiteError, match="agentPerformance"):
        parse_suite("cases:\n  - id: c1\n    output: x\n    deterministic: "
                    "{agentPerformance: 1:30}\n", "s.yaml", "s")


@pytest.mark.parametrize(("line", "words"), [
    ('{"id":"a","id":"b","output":"x"}', "duplicate key 'id'"),
    ('{"id":"a","deterministic":{"agentPerformance":90,"agentPerformance":10}}',
     "duplicate key 'agentPerformance'"),
    ('{"id":"a","metadata":{"n":' + "9" * 5000 + "}}", "5,000 digits"),
    ('{"id":"a","output":"\\ud800"}', "surrogate"),
    ('{"id":"a","output":"\\udfff x"}', "surrogate"),
    ('{"id":"a","metadata":{"n":NaN}}', "NaN"),
])
def test_jsonl_lines_are_refused_naming_the_line(line: str, words: str) -> None:
    with pytest.raises(SuiteError) as info:
        parse_suite('{"id":"ok","output":"x"}\n' + line + "\n", "s.jsonl", "s")
    assert info.value.where == "line 2" and words in info.value.message, info.value.render()
    assert info.value.fix


def test_the_bounds_leave_room_for_real_values() -> None:
    assert loads_strict('{"n": ' + "9" * MAX_INT_DIGITS + "}")["n"] == int("9" * MAX_INT_DIGITS)
    assert loads_strict('{"s": "\\ud83d\\ude00"}')["s"] == "\U0001f600"  # a valid pair
    assert load_yaml("n: " + "9" * MAX_INT_DIGITS + "\n", "t", SuiteError,
                     max_chars=100)["n"] == int("9" * MAX_INT_DIGITS)
    with pytest.raises(JsonProblem):
        loads_strict('{"n": ' + "9" * (MAX_INT_DIGITS + 1) + "}")
