"""Hostile and mistaken input: every row is refused with exit 2 naming the file and place.

``HOSTILE_YAML`` and ``MALFORMED`` are the tables docs/integrity-hostile.md counts; each
row was accepted silently, or crashed (exit 70), before. The controls after them are real
uses of the same features (anchors, merges, nesting, long ids) that must keep working.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_judge

import judge.core.formats.suite
from judge.app.runs.baselines import suite_id_of
from judge.core.formats.limits import MAX_ALIAS_NODES, MAX_DEPTH, MAX_SUITE_ID
from judge.core.formats.rubric import parse_rubric
from judge.core.formats.suite import parse_suite, validate_against_rubric
from judge.core.text.errors import ConfigError, RubricError, SuiteError
from judge.core.text.safeyaml import load_yaml
from judge.core.text.terminal_text import visible
from judge.system.resources import load_rubric, load_suite, open_suite, shipped_dir


def _laughs() -> str:
    """The classic alias bomb as a valid suite: nine levels of nine aliases, 10^9 strings.

    The anchors sit in a case's free-form ``metadata``, so every key is one a suite allows
    and the file passed ``judge suite validate`` before; 555 bytes, as first reported.
    """
    lines = ["id: laughs", "description: nested lists", "cases:", "  - id: c1", "    output: ok",
             "    metadata:",
             '      a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"      {name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines += ["    input: *i", "    tags: [" + ",".join(["laughs"] * 7) + "]"]
    return "\n".join(lines) + "\n"


LAUGHS = _laughs()
RUBRIC = (shipped_dir("rubrics") / "task-evaluation.yaml").read_text(encoding="utf-8")
CASE = "  - id: c1\n    output: ok\n"

# (name, suite YAML text, words the message must hold, line it must name)
HOSTILE_YAML: tuple[tuple[str, str, str, int], ...] = (
    ("billion laughs", LAUGHS, "aliases expand", 12),
    ("two-level alias bomb", "id: t\ncases:\n  - id: c\n    metadata:\n      x: &x ["
     + ",".join(["1"] * 400) + "]\n      y: &y [" + ",".join(["*x"] * 400) + "]\n"
     "    input: *y\n", "aliases expand", 6),
    ("recursive alias", "id: t\ncases: &c\n  - id: c1\n    input: *c\n", "contains it", 4),
    ("duplicate deterministic", "id: t\ncases:\n  - id: c1\n    output: ok\n"
     "    deterministic: {agentPerformance: 90}\n    checks: []\n"
     "    deterministic: {agentPerformance: 10}\n", "first at line 5", 7),
    ("duplicate top-level cases", f"id: t\ncases:\n{CASE}cases: []\n", "'cases'", 5),
    ("duplicate id key", "id: t\nid: u\ncases: []\n", "first at line 1", 2),
    ("duplicate in flow mapping", "id: t\ncases:\n  - {id: a, output: x, output: y}\n",
     "'output'", 3),
    ("duplicate quoted and plain", "id: t\ncases:\n  - id: c1\n    metadata: {\"k\": 1, k: 2}\n",
     "duplicate key 'k'", 4),
    ("flow nesting 200,000 deep", "id: t\ncases: " + "[" * 200_000 + "]" * 200_000 + "\n",
     f"deeper than {MAX_DEPTH}", 2),
    ("block nesting 80 deep", "id: t\ncases:\n  - id: c1\n    input:\n"
     + "".join("      " + "  " * i + "k:\n" for i in range(80)) + "      " + "  " * 80 + "v\n",
     f"deeper than {MAX_DEPTH}", 0),
    ("undefined alias", "id: t\ncases: *nope\n", "invalid YAML", 2),
)


@pytest.mark.parametrize(("name", "text", "words", "line"), HOSTILE_YAML,
                         ids=[row[0] for row in HOSTILE_YAML])
def test_hostile_yaml_is_refused_naming_file_and_line(name: str, text: str, words: str,
                                                      line: int) -> None:
    with pytest.raises(SuiteError) as info:
        parse_suite(text, "hostile.yaml", "hostile")
    err = info.value
    assert err.exit_code == 2 and err.file == "hostile.yaml"
    assert words in err.message, err.render()
    if line:
        assert err.where is not None and err.where.startswith(f"line {line},"), err.render()


def test_the_laughs_are_small_and_would_expand_beyond_any_bound() -> None:
    assert len(LAUGHS.encode()) == 555
    assert 9 ** 9 > 1000 * MAX_ALIAS_NODES


def test_duplicate_keys_in_a_rubric_name_both_lines() -> None:
    text = RUBRIC.replace("pass_score:", "pass_score: 10\npass_score:", 1)
    assert text != RUBRIC
    with pytest.raises(RubricError) as info:
        parse_rubric(text, "dup.yaml")
    line = text.splitlines().index("pass_score: 10") + 1
    assert f"first at line {line}" in info.value.message
    assert info.value.where == f"line {line + 1}, column 1"


def test_an_alias_bomb_rubric_is_refused() -> None:
    with pytest.raises(RubricError, match="aliases expand"):
        parse_rubric(RUBRIC + LAUGHS.split("    metadata:\n", 1)[1].replace(
            "      ", "").replace("input: *i", "description: *i"), "bomb.yaml")


# --- what still works -------------------------------------------------------------------

SHARED = ("  - id: c0\n    output: ok\n    evidence: &shared {commits: [{sha: abc, subject: s}]}\n"
          + "\n".join(f"  - id: c{i}\n    output: ok\n    evidence: *shared"
                      for i in range(1, 300)))


def test_real_uses_of_anchors_merges_and_nesting_still_load() -> None:
    merged = load_yaml("base: &b {output: x, tags: [a]}\ncase:\n  <<: *b\n  output: y\n",
                       "m.yaml", SuiteError, max_chars=10_000)
    assert merged["case"] == {"output": "y", "tags": ["a"]}
    shared = parse_suite("cases:\n" + SHARED, "s.yaml", "s")
    assert len(shared.cases) == 300 and shared.cases[299].evidence == shared.cases[0].evidence
    deep = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert load_yaml(f"x: {deep}\n", "d.yaml", SuiteError, max_chars=10_000) is not None
    assert load_yaml("when: 2025-03-03T16:00:00Z\n", "t.yaml", SuiteError, max_chars=100,
                     timestamps=False) == {"when": "2025-03-03T16:00:00Z"}


# --- malformed input ----------------------------------------------------------------------

def _rubric(old: str, new: str) -> Callable[[], object]:
    text = RUBRIC.replace(old, new, 1)
    assert text != RUBRIC, old
    return lambda: parse_rubric(text, "r.yaml")


def _suite(text: str, name: str = "s.yaml") -> Callable[[], object]:
    return lambda: parse_suite(text, name, Path(name).stem)


def _against_rubric(case: str) -> Callable[[], object]:
    def check() -> None:
        suite = parse_suite(f"id: t\ncases:\n{case}", "h.yaml", "h")
        validate_against_rubric(suite, load_rubric("task-evaluation"), "h.yaml")
    return check


DEEP_JSON = '{"id": "c1", "input": ' + "[" * 200_000 + "]" * 200_000 + "}\n"
MALFORMED: tuple[tuple[str, Callable[[], object], str], ...] = (
    ("JSONL line nested 200,000 deep", _suite(DEEP_JSON, "deep.jsonl"), "deeper than"),
    ("JSONL line nested 70 deep", _suite('{"id": "c1", "input": ' + "[" * 70 + "]" * 70 + "}",
                                         "deep.jsonl"), "deeper than"),
    ("JSONL mappings nested 70 deep", _suite('{"id": "c1", "input": ' + '{"k": ' * 70 + "1"
                                             + "}" * 70 + "}", "deep.jsonl"), "deeper than"),
    ("JSONL suite id not a file-safe id", _suite('{"id": "c1"}\n', "my suite!.jsonl"),
     "invalid suite id"),
    ("suite id of 300 characters", _suite(f"id: {'a' * 300}\ncases:\n{CASE}"),
     f"at most {MAX_SUITE_ID}"),
    ("suite id of 129 characters", _suite(f"id: {'a' * 129}\ncases:\n{CASE}"),
     f"at most {MAX_SUITE_ID}"),
    ("weight written as a string", _rubric("weight: 0.45", 'weight: "0.45"'), "valid number"),
    ("weight written as true", _rubric("weight: 0.45", "weight: true"), "valid number"),
    ("pass mark written as a string", _rubric("pass_score: 60", 'pass_score: "60"'),
     "valid integer"),
    ("pass mark written as 60.0", _rubric("pass_score: 60", "pass_score: 60.0"), "valid integer"),
    ("blend weight as a string", _rubric("blend: {deterministic: 0.7,",
                                         "blend: {deterministic: '0.7',"), "valid number"),
    ("human band the rubric lacks", _against_rubric(
        "  - id: c1\n    output: ok\n    human: {band: superb}\n"), "unknown band 'superb'"),
    ("human category the rubric lacks", _against_rubric(
        "  - id: c1\n    output: ok\n    human: {categories: {speed: 50}}\n"),
     "unknown category 'speed'"),
    ("--suite id too long for a file name", lambda: suite_id_of("x" * 300), "invalid suite id"),
)


@pytest.mark.parametrize(("name", "call", "words"), MALFORMED, ids=[r[0] for r in MALFORMED])
def test_malformed_input_is_a_clear_config_error(name: str, call: Callable[[], object],
                                                 words: str) -> None:
    with pytest.raises(ConfigError) as info:
        call()
    assert info.value.exit_code == 2
    assert info.value.file or info.value.where, info.value.render()
    assert words in info.value.render(), info.value.render()


def test_limits_leave_room_for_real_input(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    ok = '{"id": "c1", "input": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}\n"
    assert len(parse_suite(ok, "ok.jsonl", "ok").cases) == 1
    assert parse_suite(f"id: {'a' * MAX_SUITE_ID}\ncases:\n{CASE}", "s.yaml", "s").id \
        == "a" * MAX_SUITE_ID
    # Sizes: the limits are patched small here rather than writing 64 MB.
    monkeypatch.setattr(judge.core.formats.suite, "MAX_JSONL_LINE_CHARS", 100)
    with pytest.raises(SuiteError, match="line too long") as info:
        parse_suite('{"id": "c1", "output": "' + "x" * 200 + '"}\n', "big.jsonl", "big")
    assert info.value.where == "line 1"
    monkeypatch.setattr(judge.core.formats.suite, "MAX_SUITE_CHARS", 100)
    with pytest.raises(SuiteError, match="file too large"):
        parse_suite(f"id: t\ncases:\n{CASE}" + "#" * 200, "big.yaml", "big")


def test_a_streamed_jsonl_suite_checks_its_id(tmp_path: Path) -> None:
    bad = tmp_path / ("x" * 200 + ".jsonl")
    bad.write_text('{"id": "c1", "output": "ok"}\n', encoding="utf-8")
    for load in (open_suite, load_suite):
        with pytest.raises(SuiteError, match="invalid suite id"):
            load(bad)
    good = tmp_path / "fine.jsonl"
    good.write_text('{"id": "c1", "output": "ok"}\n', encoding="utf-8")
    assert open_suite(good).id == "fine"


# --- judge render on a terminal -----------------------------------------------------------

HIDDEN = "\u202e\u2066\u200b\u200d\ufeff\u2028\x1b\U000e0041"


def test_visible_escapes_bidi_and_zero_width_and_keeps_the_rest() -> None:
    shown = visible(f"a{HIDDEN}b\n\tçé中😀")
    assert shown == ("a\\u202e\\u2066\\u200b\\u200d\\ufeff\\u2028\\u001b\\udb40\\udc41b"
                     "\n\tçé中😀")
    assert json.loads(visible(json.dumps(HIDDEN, ensure_ascii=False))) == HIDDEN


def test_render_prints_no_hidden_characters(tmp_path: Path) -> None:
    suite = {"id": "t", "cases": [{
        "id": "c1", "input": "fix\u202eexe.txt", "output": "done\u200b",
        "evidence": {"commits": [{"sha": "abc123def4567890",
                                  "subject": "\u2066evil\u2069 subject"}]}}]}
    (tmp_path / "suite.yaml").write_text(json.dumps(suite), encoding="utf-8")
    text = run_judge(["render", "suite.yaml", "--case", "c1"], tmp_path)
    assert text.returncode == 0, text.stderr
    assert "fix\\u202eexe.txt" in text.stdout and "\\u2066evil\\u2069" in text.stdout
    as_json = run_judge(["render", "suite.yaml", "--case", "c1", "--json"], tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    for out in (text.stdout, as_json.stdout):
        assert not any(ch in out for ch in "\u202e\u2066\u2069\u200b")
    user = json.loads(as_json.stdout)["messages"][1]["content"]
    assert "fix\u202eexe.txt" in user  # the JSON still decodes to exactly what is sent


def test_cli_refuses_the_laughs_fast_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "laughs.yaml").write_text(LAUGHS, encoding="utf-8")
    # `judge run` and `judge render` read the suite through the same load_suite (in-process
    # rows above); one subprocess proves the exit code end to end.
    proc = run_judge(["suite", "validate", "laughs.yaml"], tmp_path, timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "laughs.yaml" in proc.stderr and "aliases expand" in proc.stderr
