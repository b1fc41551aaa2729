"""Replay at scale: a YAML suite's compiled form, the batched index, the one-pass JSONL check.

Each fast path must give what the plain path gives, byte for byte, and keep every rule of
the input it stands for (hostile YAML, bad JSONL lines).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE_SUITE, run_judge

# The same cold run (2 judges x 2 samples), once for this module too: the `recorded`
# fixture and the copy into a test's workspace.
from test_replay_index import _cold, recorded_workspace  # noqa: F401

from judge.cache.disk import JudgmentCache
from judge.cache.entry import with_digest
from judge.core.formats.suite import iter_cases, iter_jsonl, iter_jsonl_cases, parse_suite
from judge.core.text import safeyaml
from judge.core.text.errors import SuiteError
from judge.system.resources import open_suite

MODELS = ("hosted_vllm/fake-judge", "hosted_vllm/fake-judge+3")


def _run(workspace: Path, *extra: str, base_url: str | None = None) -> dict[str, Any]:
    args = ["run", "suite.yaml", "--json", "--no-check", "--samples", "2", "--seed", "42"]
    for model in MODELS:
        args += ["--model", model]
    args += ["--api-base", f"{base_url}/v1"] if base_url else ["--offline"]
    proc = run_judge([*args, *extra], workspace)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _comparable(payload: dict[str, Any]) -> str:
    return json.dumps({"cases": payload["cases"], "summary": payload["summary"],
                       "summaries": payload["summaries"]}, sort_keys=True)


def _compiled(workspace: Path) -> list[Path]:
    return sorted((workspace / "cache" / "suites").glob("*.jsonl"))


def test_yaml_suite_replays_from_its_compiled_form(recorded: tuple[Path, dict[str, Any]],
                                                   workspace: Path) -> None:
    cold = _cold(workspace, recorded)
    judgments = cold["run"]["totals"]["judgments"]
    (form,) = _compiled(workspace)  # written by the cold run, once the cache folder existed
    fast = _run(workspace)
    assert fast["run"]["totals"]["indexHits"] == judgments

    # The plain path: no compiled form, no index: the YAML parsed, every prompt rendered.
    form.unlink()
    (workspace / "cache" / "replay-index.sqlite").unlink()
    plain = _run(workspace)
    assert plain["run"]["totals"]["indexHits"] == 0
    assert _comparable(plain) == _comparable(fast)
    assert _compiled(workspace) == [form]  # compiled again, by name: the same bytes, code, id

    # A flipped bit anywhere in it: ignored (the YAML is parsed again) and rewritten.
    good = form.read_bytes()
    for at in (5, len(good) // 2, len(good) - 3):
        damaged = bytearray(good)
        damaged[at] ^= 0x01
        form.write_bytes(bytes(damaged))
        again = _run(workspace)
        assert _comparable(again) == _comparable(fast)
        assert again["run"]["totals"]["indexHits"] == judgments
        assert form.read_bytes() == good

    # An edited suite is another file: its own form; the old one never answers for it.
    text = (workspace / "suite.yaml").read_text(encoding="utf-8")
    (workspace / "suite.yaml").write_text(text + "\n# edited\n", encoding="utf-8")
    _run(workspace)
    assert len(_compiled(workspace)) == 2


HOSTILE = {
    "duplicate key": "id: s\ncases:\n- id: a\n  output: x\n  output: y\n",
    "alias bomb": "id: s\na: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
        for i in range(6)) + "cases: []\n",
    "nested deeper": "id: s\ncases:\n- id: a\n  output: " + "[" * 100 + "]" * 100 + "\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_compiled_path_keeps_the_hostile_yaml_rules(tmp_path: Path, name: str) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(HOSTILE[name], encoding="utf-8")
    compiled = tmp_path / "cache" / "suites"
    compiled.parent.mkdir()
    with pytest.raises(SuiteError) as plain:
        open_suite(suite)
    with pytest.raises(SuiteError) as fast:
        open_suite(suite, compiled_dir=compiled, salt=b"code")
    assert str(fast.value) == str(plain.value)
    assert not compiled.exists()


def test_a_good_suite_turned_hostile_is_refused_despite_its_old_form(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    compiled = tmp_path / "cache" / "suites"
    compiled.parent.mkdir()
    suite.write_text("id: s\ncases:\n- id: a\n  output: x\n", encoding="utf-8")
    source = open_suite(suite, compiled_dir=compiled, salt=b"code")
    assert source.save_compiled() and source.lines == ('{"id":"a","output":"x"}',)
    again = open_suite(suite, compiled_dir=compiled, salt=b"code")
    assert again.lines == source.lines and again.unsaved is None  # read from the form
    # Another code digest is another name: a form other code made is never read.
    assert open_suite(suite, compiled_dir=compiled, salt=b"other").unsaved is not None
    suite.write_text("id: s\ncases:\n- id: a\n  output: x\n  output: y\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"duplicate key 'output' at line 5 \(first at line 4\)"):
        open_suite(suite, compiled_dir=compiled, salt=b"code")


def test_values_json_cannot_hold_keep_the_plain_yaml_path(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("id: s\ncases:\n- id: a\n  output: x\n  input: {1: one}\n",
                     encoding="utf-8")
    compiled = tmp_path / "cache" / "suites"
    compiled.parent.mkdir()
    source = open_suite(suite, compiled_dir=compiled, salt=b"code")
    assert source.lines is None and source.loaded is not None
    assert next(source.cases()).input == {1: "one"}  # the key stays an int
    assert not source.save_compiled()


BAD_LINES = {
    "not json": "{nope",
    "not a mapping": "[1, 2]",
    "bad field": '{"id": "a", "judged_by": "robot"}',
    "too deep": '{"id": "a", "input": ' + "[" * 80 + "]" * 80 + "}",
    "bad id": '{"id": "../x"}',
    "NaN is JSON to Python": '{"id": "a", "input": NaN}',
}


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_one_pass_jsonl_check_says_what_the_plain_one_says(name: str) -> None:
    lines = ['{"id": "ok", "output": "x"}', "", BAD_LINES[name]]

    def outcome(cases: Any) -> str:
        try:
            return json.dumps([c.model_dump(mode="json") for c in cases])
        except SuiteError as exc:
            return str(exc)

    assert outcome(iter_jsonl_cases(lines, "s.jsonl")) == outcome(
        iter_cases(iter_jsonl(lines, "s.jsonl"), "s.jsonl"))
    dup = ['{"id": "a"}', '{"id": "a"}']
    assert outcome(iter_jsonl_cases(dup, "s.jsonl")) == outcome(
        iter_cases(iter_jsonl(dup, "s.jsonl"), "s.jsonl"))


PY_LOADERS = (safeyaml._BoundedLoader, safeyaml._BoundedTextLoader)
WORDS = {"duplicate key": "duplicate key 'output' at line 5", "alias bomb": "alias bomb",
         "nested deeper": "nested deeper than 64"}


@pytest.mark.parametrize("python_parser", [False, True])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_libyaml_and_python_parsers_keep_the_same_rules(monkeypatch: pytest.MonkeyPatch,
                                                        name: str, python_parser: bool) -> None:
    if yaml.__with_libyaml__:
        assert safeyaml._LOADERS[0].__name__ == "_CBoundedLoader"  # the fast parser is used
    if python_parser:
        monkeypatch.setattr(safeyaml, "_LOADERS", PY_LOADERS)
    with pytest.raises(SuiteError, match=WORDS[name]):
        parse_suite(HOSTILE[name], "s.yaml", "s")
    deep_flow = "id: s\ncases: " + "[" * 200_000 + "\n"
    with pytest.raises(SuiteError, match="nested deeper than 64"):
        parse_suite(deep_flow, "s.yaml", "s")


def test_libyaml_and_python_parsers_read_the_same_data(monkeypatch: pytest.MonkeyPatch) -> None:
    text = EXAMPLE_SUITE.read_text(encoding="utf-8") + "extra: &x {a: 1, when: 2025-03-03}\n"
    fast = safeyaml.load_yaml(text, "s.yaml", SuiteError, max_chars=10**6, timestamps=False)
    monkeypatch.setattr(safeyaml, "_LOADERS", PY_LOADERS)
    plain = safeyaml.load_yaml(text, "s.yaml", SuiteError, max_chars=10**6, timestamps=False)
    assert fast == plain and fast["extra"]["when"] == "2025-03-03"


def test_a_record_answers_only_for_the_entry_it_was_made_from(
        recorded: tuple[Path, dict[str, Any]], workspace: Path) -> None:
    cold = _cold(workspace, recorded)
    judgments = cold["run"]["totals"]["judgments"]
    before = _run(workspace)
    assert before["run"]["totals"]["indexHits"] == judgments
    # Rewrite one entry soundly (a new digest over a changed verdict: a refresh would).
    key = next(c["judge"]["cacheKey"] for c in before["cases"]
               if c["judgedBy"] == "llm" and c["judge"]["aggregate"] is None)
    with JudgmentCache(workspace / "cache") as cache:
        entry = cache.get(key)
        assert entry is not None
        verdict = json.loads(entry.turns[-1].text)
        scores = verdict.get("categories", verdict)
        next(v for v in scores.values() if isinstance(v, dict))["rationale"] = "rewritten"
        entry.data["turns"][-1]["text"] = json.dumps(verdict)
        assert cache.put(with_digest(entry.data))
    after = _run(workspace)
    # That case (its 2 judges x 2 samples, from the first the index cannot vouch for on):
    # the plain path.
    assert judgments - 4 <= after["run"]["totals"]["indexHits"] < judgments
    changed = [c for c in after["cases"] if c["judge"] and c["judge"]["cacheKey"] == key]
    was = [c for c in before["cases"] if c["judge"] and c["judge"]["cacheKey"] == key]
    assert changed != was  # scored from the entry as it is now, not from the old record
    again = _run(workspace)
    assert again["run"]["totals"]["indexHits"] == judgments
    assert _comparable(again) == _comparable(after)
