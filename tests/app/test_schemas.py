"""The file formats' JSON Schemas and reference page: current, valid for every shipped file,
and rejecting the bad inputs a schema can express (the loaders catch the rest)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, run_judge
from jsonschema import Draft202012Validator
from test_rubric import BROKEN

from judge.app.workspace.schemas import SchemaKind, reference_page, schema_text
from judge.app.workspace.settings import ENVIRONMENT, FLAG_ONLY, Settings, env_name

DOCS = ROOT / "docs"
SUITES = [ROOT / "examples" / "task-evaluation" / "suite.yaml",
          ROOT / "examples" / "research-agent" / "suite.yaml"]
RUBRICS = sorted((ROOT / "rubrics").glob("*.yaml"))
SCHEMA_LINE = "# yaml-language-server: $schema="


def _validator(kind: SchemaKind) -> Draft202012Validator:
    schema = json.loads((DOCS / "schemas" / f"{kind.value}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _data(text: str) -> Any:
    # As JSON would carry it (YAML timestamps become the strings written).
    return json.loads(json.dumps(yaml.safe_load(text), default=str))


def test_checked_in_copies_are_current() -> None:
    """Regenerate with `judge suite schema`, `judge rubric schema`, `judge workspace reference`."""
    for kind in SchemaKind:
        path = DOCS / "schemas" / f"{kind.value}.schema.json"
        assert path.read_text(encoding="utf-8") == schema_text(kind), path
    assert (DOCS / "reference.md").read_text(encoding="utf-8") == reference_page()


def test_the_command_prints_the_checked_in_schema(tmp_path: Path) -> None:
    done = run_judge(["rubric", "schema"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (DOCS / "schemas" / "rubric.schema.json").read_text()
    assert run_judge(["rubric", "schema", "nonsense"], tmp_path).returncode == 2


def test_every_variable_has_one_row_in_the_reference() -> None:
    """Each setting's row names its one variable; every JUDGE_* the code reads is a setting's
    or listed among the variables that are not settings; nothing listed is unread."""
    page = reference_page().split("## Settings file")[1]
    for name in Settings.model_fields:
        row = next(line for line in page.splitlines() if line.startswith(f"| `{name}` |"))
        shown = "a command's flag only" if name in FLAG_ONLY else f"`{env_name(name)}`"
        assert shown in row, row
    variables = {env_name(n) for n in Settings.model_fields} | set(ENVIRONMENT)
    read = {m for path in (ROOT / "judge").rglob("*.py")
            for m in re.findall(r"\bJUDGE_[A-Z_]+[A-Z]\b", path.read_text(encoding="utf-8"))}
    assert read - variables == set()  # a variable the code reads that the table lacks
    listed = {v for v in ENVIRONMENT if v.startswith("JUDGE_")}
    assert listed - read == set()  # a listed variable nothing reads
    for name in ENVIRONMENT:
        assert f"| `{name}` |" in page, name
    assert "| `llm` |" not in page  # --no-llm is a choice of one run, not a setting


def test_every_key_is_described() -> None:
    for kind in SchemaKind:
        schema = json.loads(schema_text(kind))
        for name, definition in schema["$defs"].items():
            for key, prop in definition.get("properties", {}).items():
                assert prop.get("description"), f"{kind.value}: {name}.{key}"


@pytest.mark.parametrize("path", [*SUITES, *RUBRICS], ids=lambda p: p.parent.name + "/" + p.name)
def test_shipped_files_validate_and_name_their_schema(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    kind = SchemaKind.rubric if path in RUBRICS else SchemaKind.suite
    errors = list(_validator(kind).iter_errors(_data(text)))
    assert not errors, [e.message for e in errors[:3]]
    first = text.splitlines()[0]
    assert first.startswith(SCHEMA_LINE)
    assert (path.parent / first.removeprefix(SCHEMA_LINE)).resolve() == \
        DOCS / "schemas" / f"{kind.value}.schema.json"


def test_a_generated_suite_and_a_bare_list_validate(tmp_path: Path) -> None:
    done = run_judge(["suite", "generate", "gen", "--count", "3"], tmp_path)
    validator = _validator(SchemaKind.suite)
    assert not list(validator.iter_errors(_data(done.stdout)))
    assert not list(validator.iter_errors([{"id": "a", "output": "x"}]))


SCHEMA_CATCHES = {"unknown_key", "unknown_top_key", "score_out_of_range", "bad_style"}
"""Of tests/core/test_rubric.py's broken rubrics, those a JSON Schema can express; sums, band
coverage, duplicates and level anchors are the loader's (that test checks it does)."""


@pytest.mark.parametrize("name", sorted(SCHEMA_CATCHES))
def test_the_rubric_schema_rejects_the_bad_fixtures(name: str) -> None:
    assert list(_validator(SchemaKind.rubric).iter_errors(_data(BROKEN[name][0]())))


BAD_SUITES = {
    "unknown top-level key": {"cases": [{"id": "a", "output": "x"}], "rubrik": "x"},
    "no cases": {"id": "s"},
    "case without id": {"cases": [{"output": "x"}]},
    "bad case id": {"cases": [{"id": "bad id!", "output": "x"}]},
    "unknown case key": {"cases": [{"id": "a", "ouptut": "x"}]},
    "score out of range": {"cases": [{"id": "a", "deterministic": {"agentPerformance": 150}}]},
    "float score": {"cases": [{"id": "a", "deterministic": {"agentPerformance": 50.5}}]},
    "unknown check type": {"cases": [{"id": "a", "checks": [{"type": "matches", "value": 1}]}]},
    "bad complexity": {"cases": [{"id": "a", "complexity": "huge"}]},
    "deterministic without a signal": {"cases": [{"id": "a", "judged_by": "deterministic"}]},
}


@pytest.mark.parametrize("name", sorted(BAD_SUITES))
def test_the_suite_schema_rejects_bad_suites(name: str, tmp_path: Path) -> None:
    data = BAD_SUITES[name]
    assert list(_validator(SchemaKind.suite).iter_errors(data)), name
    # ...and so does the loader, naming the file: the schema says nothing it does not.
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    done = run_judge(["suite", "validate", str(path)], tmp_path)
    assert done.returncode == 2 and str(path) in done.stderr, (name, done.stderr)


def test_no_output_is_a_warning_and_a_rubric_typo_names_the_suite(tmp_path: Path) -> None:
    (tmp_path / "bare.yaml").write_text("cases:\n  - id: a\n  - id: b\n    output: y\n")
    (tmp_path / "typo.yaml").write_text("rubric: task-evaluaton\ncases:\n  - id: a\n")
    done = run_judge(["suite", "validate", "bare.yaml"], tmp_path)
    assert done.returncode == 0
    assert "warning: bare.yaml: 1 case has no 'output' (a)" in done.stderr
    typo = run_judge(["suite", "validate", "typo.yaml"], tmp_path)
    assert typo.returncode == 2 and "named by suite typo.yaml" in typo.stderr
    run = run_judge(["run", "bare.yaml", "--offline", "--no-check"], tmp_path)
    assert "warning: bare.yaml: 1 case has no 'output' (a)" in run.stderr
