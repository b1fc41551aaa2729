"""JSON Schemas of the suite and rubric files, and their reference page, from the models.

The pydantic models (:class:`judge.core.formats.suite.Case`,
:class:`judge.core.formats.rubric.Rubric`...) are the one description of each file: their attribute
docstrings become the schema's ``description``s and the reference's "meaning" column, so the page,
the schema and the loader cannot drift apart. The docstrings are read from the models' source here,
on demand, rather than by pydantic at import (which would read every model's source on every
start). What a schema cannot say (rubric weights summing to 1, bands covering 0..100, a
category named in a suite existing in its rubric) is checked by the loaders and said on
the page.

Editors validate and complete YAML against a schema named in the file's first line::

    # yaml-language-server: $schema=../../docs/schemas/suite.schema.json
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
import typing
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, NotRequired, TypedDict

from pydantic import BaseModel

from ...core.formats.conversation import ToolCall, Turn
from ...core.formats.evidence import EvidenceProfile, GroupSpec
from ...core.formats.rubric import Band, Blend, Category, Level, MissingPolicy, Rubric
from ...core.formats.suite import Case, Check, HumanLabel, Suite
from .settings import ENV_ONLY, ENVIRONMENT, FLAG_ONLY, Settings, env_name

__all__ = ["SCHEMA_DIALECT", "SchemaDocument", "SchemaKind", "json_schema", "reference_page",
           "schema_text"]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_MODELS: tuple[type[BaseModel], ...] = (Suite, Case, Check, HumanLabel, Turn, ToolCall,
                                        Rubric, Category, Blend, MissingPolicy, Level, Band,
                                        EvidenceProfile, GroupSpec)

_NOTES = {
    "Case": "A case with no `output` is accepted with a warning (from `judge suite validate` "
            "and `judge run`): the judge then sees only its `input` and `evidence`, and "
            "`contains` / `not_contains` checks have nothing to look at. A "
            "`judged_by: deterministic` case needs `deterministic` scores or `checks`. "
            "Category names (in `deterministic`, `checks[].category`, `human.categories`) and "
            "evidence groups must be the rubric's: `judge suite validate` checks them. A case "
            "with a `conversation` needs no `output`.",
    "Turn": "The judge sees at most 50 turns (the first 25 and the last 25, the rest counted) "
            "of at most 2,000 characters each, marker included, under `## Conversation`; "
            "each is cited as `turn:N`, N its position as written (see "
            "`judge/core/formats/conversation.py`).",
    "Rubric": "Checked on load beyond the schema: category weights sum to 1, every blend sums "
              "to 1, the bands cover 0..100 with no gap or overlap, a `levels` rubric lists "
              "its levels and each category's anchors name them.",
}


class SchemaKind(StrEnum):
    """Which file a schema describes."""

    suite = "suite"
    rubric = "rubric"


def _field_docs(model: type[BaseModel]) -> dict[str, str]:
    """The attribute docstrings of ``model``'s fields (the string after each annotation)."""
    try:
        source = textwrap.dedent(inspect.getsource(model))
    except (OSError, TypeError):  # no source (a frozen build): descriptions stay empty
        return {}
    body = ast.parse(source).body[0]
    docs: dict[str, str] = {}
    if not isinstance(body, ast.ClassDef):
        return docs
    for node, after in zip(body.body, body.body[1:], strict=False):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[node.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return docs


def _reachable(roots: tuple[type[BaseModel], ...]) -> list[type[BaseModel]]:
    """``roots`` and every model their fields refer to (a new section is described too)."""
    seen: list[type[BaseModel]] = []
    todo: list[Any] = list(roots)
    while todo:
        item = todo.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            if item in seen:
                continue
            seen.append(item)
            todo.extend(f.annotation for f in item.model_fields.values())
        else:
            todo.extend(typing.get_args(item))
    return seen


SchemaDocument = TypedDict("SchemaDocument", {
    "$schema": str, "$id": str, "title": str, "description": str,
    "$defs": dict[str, dict[str, Any]],
    "oneOf": NotRequired[list[dict[str, Any]]], "$ref": NotRequired[str]})
"""A file's JSON Schema document: what it is, and its models' definitions by name."""


class _Definition(TypedDict):
    """What the reference page reads of a model's definition."""

    description: str
    properties: dict[str, dict[str, Any]]
    required: list[str]


def _describe(schema: SchemaDocument) -> SchemaDocument:
    """Add each model's docstring and field docstrings to its definition in ``schema``."""
    by_name = {m.__name__: m for m in _reachable(_MODELS)}
    for name, definition in schema["$defs"].items():
        model = by_name.get(name)
        if model is None:
            continue
        if model.__doc__:
            definition["description"] = " ".join(inspect.cleandoc(model.__doc__).split())
        for field, text in _field_docs(model).items():
            prop = definition.get("properties", {}).get(field)
            if prop is not None:
                prop["description"] = text
    return schema


def _definitions(model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """``model``'s schema with itself moved into ``$defs`` beside what it references."""
    schema = model.model_json_schema(ref_template="#/$defs/{model}")
    defs: dict[str, dict[str, Any]] = schema.pop("$defs", {})
    defs[model.__name__] = schema
    return defs


def _suite_schema() -> SchemaDocument:
    defs = _definitions(Case)
    case_ref = {"$ref": "#/$defs/Case"}
    # judged_by: deterministic needs a signal (the model's own validator, said in schema).
    defs["Case"]["allOf"] = [{
        "if": {"properties": {"judged_by": {"const": "deterministic"}},
               "required": ["judged_by"]},
        "then": {"anyOf": [
            {"properties": {"deterministic": {"minProperties": 1}},
             "required": ["deterministic"]},
            {"properties": {"checks": {"minItems": 1}}, "required": ["checks"]}]},
    }]
    suite_props = Suite.model_json_schema()["properties"]
    mapping = {
        "type": "object",
        "title": "Suite",
        "properties": {
            "id": {**suite_props["id"],
                   "description": "Suite id: names the baseline file and the run history "
                                  "(default: the file's name without its extension)."},
            "description": {"type": "string", "default": "",
                            "description": "What the suite is for."},
            "rubric": {"type": ["string", "null"], "default": None,
                       "description": "Default rubric id or path for the suite (default: "
                                      "setting rubric, else task-evaluation)."},
            "cases": {"type": "array", "items": case_ref,
                      "description": "The cases, each with a unique id."},
        },
        "required": ["cases"],
        "additionalProperties": False,
    }
    return _describe({
        "$schema": SCHEMA_DIALECT,
        "$id": "https://judgeflow.invalid/schemas/suite.schema.json",
        "title": "judgeflow suite file (YAML)",
        "description": "A mapping with `cases` (and optionally `id`, `description`, "
                       "`rubric`), or a bare list of cases. A `.jsonl` suite holds one case "
                       "object per line.",
        "oneOf": [mapping, {"type": "array", "items": case_ref, "title": "Bare list of cases"}],
        "$defs": defs,
    })


def _rubric_schema() -> SchemaDocument:
    defs = _definitions(Rubric)
    return _describe({
        "$schema": SCHEMA_DIALECT,
        "$id": "https://judgeflow.invalid/schemas/rubric.schema.json",
        "title": "judgeflow rubric file (YAML)",
        "description": "Categories with weights, how deterministic and AI scores blend, bands "
                       "and the pass mark.",
        "$ref": "#/$defs/Rubric",
        "$defs": defs,
    })


def json_schema(kind: SchemaKind) -> SchemaDocument:
    """The JSON Schema (draft 2020-12) of a suite or rubric file."""
    return _suite_schema() if kind is SchemaKind.suite else _rubric_schema()


def schema_text(kind: SchemaKind) -> str:
    """The schema as the checked-in file holds it: sorted keys, two-space indent, newline."""
    return json.dumps(json_schema(kind), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# -- the reference page ------------------------------------------------------------------------

def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    if "enum" in prop:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return " or ".join(_type(p) for p in prop[key])
    kind = prop.get("type")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object" and "additionalProperties" in prop:
        extra = prop["additionalProperties"]
        return f"mapping of string to {_type(extra) if isinstance(extra, dict) else 'any'}"
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind is None:
        return "any"
    bounds = [f"≥ {prop['minimum']}" if "minimum" in prop else "",
              f"> {prop['exclusiveMinimum']}" if "exclusiveMinimum" in prop else "",
              f"≤ {prop['maximum']}" if "maximum" in prop else "",
              f"length ≥ {prop['minLength']}" if "minLength" in prop else "",
              f"length ≤ {prop['maxLength']}" if "maxLength" in prop else "",
              f"pattern `{prop['pattern']}`" if "pattern" in prop else ""]
    shown = ", ".join(b for b in bounds if b)
    return f"{kind} ({shown})" if shown else str(kind)


def _default(prop: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in prop:  # a default_factory: an empty mapping or list
        kinds = {prop.get("type")} | {p.get("type") for p in prop.get("anyOf", ())}
        return "`{}`" if "object" in kinds else "`[]`" if "array" in kinds else "—"
    text = json.dumps(prop["default"], ensure_ascii=False)
    names = isinstance(prop["default"], list) and all(isinstance(v, str)
                                                      for v in prop["default"])
    if len(text) <= 60 or names:
        return f"`{text}`"  # short, or a list of names (the settings' suite globs)
    return "see the shipped rubrics"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _model_section(name: str, definition: Mapping[str, Any]) -> list[str]:
    lines = [f"### {name}", ""]
    if definition.get("description"):
        lines += [definition["description"], ""]
    if name in _NOTES:
        lines += [_NOTES[name], ""]
    lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
    required = set(definition.get("required", ()))
    for key, prop in definition.get("properties", {}).items():
        lines.append(f"| `{key}` | {_cell(_type(prop))} | {_cell(_default(prop, key in required))}"
                     f" | {_cell(prop.get('description', ''))} |")
    return [*lines, ""]


def reference_page() -> str:
    """``docs/reference.md``: every key of the suite and rubric files, from the models."""
    suite, rubric = json_schema(SchemaKind.suite), json_schema(SchemaKind.rubric)
    mapping = suite["oneOf"][0]
    lines = [
        "# Suite, rubric and settings files: reference",
        "",
        "<!-- Generated from the pydantic models by `judge workspace reference > "
        "docs/reference.md`;",
        "     tests/app/test_schemas.py fails when it is out of date. Do not edit by hand. -->",
        "",
        "Every key, its type, its default and what it means, for the three files people write.",
        "The same facts as JSON Schemas (draft 2020-12), for editors and CI:",
        "[`docs/schemas/suite.schema.json`](schemas/suite.schema.json) and",
        "[`docs/schemas/rubric.schema.json`](schemas/rubric.schema.json)",
        "(`judge suite schema`, `judge rubric schema`).",
        "",
        "**In an editor.** With the YAML language server (VS Code's YAML extension, Neovim,",
        "Helix, JetBrains), a first line naming the schema gives completion, hover text and",
        "validation as you type; the shipped examples and rubrics carry it:",
        "",
        "```yaml",
        "# yaml-language-server: $schema=../../docs/schemas/suite.schema.json",
        "```",
        "",
        "The path is relative to the YAML file (a URL works too). The loaders stay the",
        "authority: `judge suite validate` and `judge rubric validate` also check what a",
        "schema cannot (notes under each table), and name the file, the place and the fix.",
        "",
        "## Suite file",
        "",
        suite["description"],
        "",
        "### Suite (top level)",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for key, prop in mapping["properties"].items():
        lines.append(f"| `{key}` | {_cell(_type(prop))} | "
                     f"{_cell(_default(prop, key in mapping['required']))} | "
                     f"{_cell(prop.get('description', ''))} |")
    lines.append("")
    for name in ("Case", "Check", "HumanLabel", "Turn", "ToolCall"):
        lines += _model_section(name, suite["$defs"][name])
    lines += ["## Rubric file", "", rubric["description"], ""]
    for name in ("Rubric", "Category", "Blend", "MissingPolicy", "Level", "Band",
                 "EvidenceProfile", "GroupSpec"):
        lines += _model_section(name, rubric["$defs"][name])
    lines += ["## Settings file", "",
              "`judge.toml` in the workspace, else `[tool.judge]` in `pyproject.toml`. Each "
              "setting has one environment variable, which overrides the file; a command's "
              "flag overrides both. `judge workspace config` shows the values in effect and "
              "where each came from.", ""]
    return "\n".join([*lines, *_settings_section()]).rstrip() + "\n"


def _settings_section() -> list[str]:
    """The settings, each with its variable; then the variables that are not settings."""
    definition = _settings_schema()
    lines = ["### Settings", "", definition["description"], "",
             "| key | environment variable | type | default | meaning |",
             "|---|---|---|---|---|"]
    for key, prop in definition["properties"].items():
        lines.append(f"| `{key}` | {_variable(key)} | {_cell(_type(prop))} | "
                     f"{_cell(_default(prop, False))} | {_cell(prop.get('description', ''))} |")
    lines += ["", "### Environment variables that are not settings", "",
              "No file sets these: a secret never sits in a file a repository holds, and the "
              "others steer one process.", "",
              "| environment variable | meaning |", "|---|---|"]
    lines += [f"| `{name}` | {_cell(text)} |" for name, text in ENVIRONMENT.items()]
    return [*lines, ""]


def _variable(setting: str) -> str:
    """A setting's variable as the table shows it, with who alone may set it."""
    if setting in FLAG_ONLY:
        return "— (a command's flag only)"
    only = " (environment only)" if setting in ENV_ONLY else ""
    return f"`{env_name(setting)}`{only}"


def _settings_schema() -> _Definition:
    """The settings model's definition, each key described by its attribute docstring."""
    schema = Settings.model_json_schema()
    properties: dict[str, dict[str, Any]] = schema["properties"]
    for field, text in _field_docs(Settings).items():
        properties[field]["description"] = text
    return {"description": " ".join(inspect.cleandoc(Settings.__doc__ or "").split()),
            "properties": properties, "required": schema.get("required", [])}
