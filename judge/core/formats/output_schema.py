"""The judge's output schema, generated from the rubric and the case's evidence IDs.

Built from pydantic models whose field descriptions are the instructions the judge sees,
then flattened (no ``$ref``) because local servers' grammar builders handle plain schemas
best. Every category is required: with a looser schema small models return nothing.
Order of properties inside a category is a decision: ``rationale`` first, so the model
writes its reasons before it commits to a number, then ``evidence``, then the verdict.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..text.canonical import canonical_json
from ..text.secrets import secret_paths
from .rubric import Rubric

__all__ = ["EXPECTED_CITATIONS", "EXPECTED_RATIONALE_LIMIT", "MAX_CITATIONS", "RATIONALE_LIMIT",
           "expected_schema", "output_schema",
           "output_schema_json", "stable_schema", "verdict_model"]

RATIONALE_LIMIT = 1000
MAX_CITATIONS = 10
EXPECTED_RATIONALE_LIMIT = 160
"""Characters of a rationale in ``score_mode = "expected"`` (written after the answer)."""
EXPECTED_CITATIONS = 3
"""Citations per category in ``score_mode = "expected"``."""

RATIONALE_DOC = "Why this score: one to three sentences grounded in the evidence."
EVIDENCE_DOC = "IDs of the evidence items that support the score, copied exactly from ## Evidence."
SCORE_DOC = "Score from 0 (worst) to 100 (best) for this category."
LEVEL_DOC = "The level that fits best, by name."


def _category_model(rubric: Rubric, category_id: str, ids: tuple[str, ...]) -> type[BaseModel]:
    cat = rubric.category(category_id)
    cite_type: Any = Literal[ids] if ids else str
    fields: dict[str, Any] = {
        "rationale": (str, Field(max_length=RATIONALE_LIMIT, description=RATIONALE_DOC)),
        "evidence": (list[cite_type], Field(max_length=MAX_CITATIONS if ids else 0,
                                            description=EVIDENCE_DOC)),
    }
    if rubric.style == "levels":
        names = tuple(lv.name for lv in rubric.levels)
        anchors = "; ".join(f"{n}: {cat.anchors[n].rstrip('.')}" if n in cat.anchors else n
                            for n in names)
        fields["level"] = (Literal[names], Field(description=f"{LEVEL_DOC} {anchors}"))
    else:
        fields["score"] = (int, Field(ge=0, le=100, description=SCORE_DOC))
    model: type[BaseModel] = create_model(
        f"Category_{category_id}",
        __config__=ConfigDict(extra="forbid"),
        __doc__=cat.definition,
        **fields,
    )
    return model


def verdict_model(rubric: Rubric, ids: tuple[str, ...]) -> type[BaseModel]:
    """A pydantic model of a valid verdict for this rubric and these evidence IDs."""
    fields: dict[str, Any] = {
        c.id: (_category_model(rubric, c.id, ids), Field(description=c.definition))
        for c in rubric.categories
    }
    model: type[BaseModel] = create_model(
        "Verdict", __config__=ConfigDict(extra="forbid"),
        __doc__=f"Verdict under rubric {rubric.id}.", **fields)
    return model


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            merged = {**_inline(target, defs), **{k: v for k, v in node.items() if k != "$ref"}}
            return merged
        return {k: _inline(v, defs) for k, v in node.items() if k not in {"$defs", "title"}}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


_PLACEHOLDER = "\x00id"


def _base_schema(rubric: Rubric) -> str:
    raw = verdict_model(rubric, (_PLACEHOLDER,)).model_json_schema()
    return json.dumps(_inline(raw, raw.get("$defs", {})))


_MARK = "\x00ids\x00"


def _has_float(node: Any) -> bool:
    if isinstance(node, float):
        return True
    if isinstance(node, dict):
        return any(_has_float(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_float(v) for v in node)
    return False


def _canonical_parts(rubric: Rubric) -> tuple[str, ...] | None:
    schema = output_schema(rubric, (_MARK,))
    if _has_float(schema):  # the text must read the same as a cache key normalises it
        return None
    if secret_paths(schema):  # a category named like a credential: each entry is scanned
        return None
    parts = tuple(canonical_json(schema).split(canonical_json([_MARK])))
    return parts if len(parts) == len(schema["properties"]) + 1 else None


def output_schema_json(rubric: Rubric, ids: tuple[str, ...]) -> str | None:
    """``canonical_json(output_schema(rubric, ids))``, joined from a per-rubric template.

    A case's schema differs from its rubric's only in the list of citable IDs, so its
    canonical JSON is the rubric's with that list put in: the cache key and the stored
    entry reuse it (:func:`judge.cache.entry.key_request`). None for a case with no
    evidence (the schema has another shape then) or a schema holding a float.
    """
    if not ids:
        return None
    parts = rubric.derived("schema.canonical", _canonical_parts)
    return None if parts is None else canonical_json(list(ids)).join(parts)


def output_schema(rubric: Rubric, ids: tuple[str, ...]) -> dict[str, Any]:
    """The JSON schema a verdict must satisfy, with no ``$ref`` and no titles.

    Generating it through pydantic costs milliseconds, so it is built once per rubric with
    a placeholder ID and the case's IDs are put in per call.
    """
    schema: dict[str, Any] = json.loads(rubric.derived("schema.base", _base_schema))
    for prop in schema["properties"].values():
        cites = prop["properties"]["evidence"]
        if ids:
            cites["items"] = {"enum": list(ids), "type": "string"}
        else:
            cites["items"] = {"type": "string"}
            cites["maxItems"] = 0
    return schema


def stable_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the case's citation enum: the same schema for every case of a rubric.

    JSON door: a JSON Schema document, sent to the provider as it is.

    Providers put the structured-output schema ahead of the messages in their prompt cache
    (OpenAI documents it as a prefix of the system message; Anthropic's tools and output
    format precede the system prompt), so a per-case enum leaves no prefix to reuse. Sent
    this way, citations are plain strings checked after the reply (an unknown ID gets the
    repair turn), instead of being constrained while the model writes them.
    """
    props: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        inner = dict(prop["properties"])
        cites = {k: v for k, v in inner["evidence"].items() if k != "maxItems"}
        cites["items"] = {"type": "string"}
        inner["evidence"] = cites
        props[name] = {**prop, "properties": inner}
    return {**schema, "properties": props}


def expected_schema(schema: dict[str, Any], scale: tuple[int, ...] | None) -> dict[str, Any]:
    """``schema`` for ``score_mode = "expected"``: the answer first, from a closed set.

    JSON door: a JSON Schema document, sent to the provider as it is.

    The verdict (``score`` or ``level``) moves before the rationale, so its probabilities are
    the judge's reading of the case, not of the words it happened to write first (sampled
    words would otherwise move them from seed to seed). A scores rubric's score is limited to
    ``scale`` (:data:`judge.core.scoring.expected.SCALE`). Only this mode's keys see it.
    """
    props: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        inner = dict(prop["properties"])
        answer = "level" if "level" in inner else "score"
        if answer == "score" and scale is not None:
            inner["score"] = {k: v for k, v in inner["score"].items()
                              if k not in {"minimum", "maximum"}} | {"enum": list(scale)}
        # Once the answer comes first, the words after it cannot move it: they are kept short
        # (a CPU judge spends most of a judgment writing them).
        inner["rationale"] = {**inner["rationale"], "maxLength": EXPECTED_RATIONALE_LIMIT}
        inner["evidence"] = {**inner["evidence"], "maxItems": min(
            EXPECTED_CITATIONS, int(inner["evidence"].get("maxItems", EXPECTED_CITATIONS)))}
        ordered = {answer: inner.pop(answer), **inner}
        required = [answer, *(r for r in prop.get("required", ()) if r != answer)]
        props[name] = {**prop, "properties": ordered, "required": required}
    return {**schema, "properties": props}
