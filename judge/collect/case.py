"""Collected artefacts made into one case: scrubbed, bounded by the evidence profile, signalled.

Each source adapter (``judge/collect/*``) reads its artefact into a :class:`Collected`:
evidence items by group (each with a citable id from its source), facts for the signal
rules, and perhaps the case's input, output, tags and complexity. :func:`build_case` is the
one place they meet, so every rule holds for every source:

- every string is scrubbed of credentials (:mod:`judge.core.text.secrets`) before anything else;
- each group is capped at the profile's cap and each excerpt and title truncated to its
  limits with :func:`judge.core.formats.evidence.truncate` (an excerpt's trailing spaces dropped);
  what a cap drops is counted in the case's ``metadata.collected.capped``, never silent.
  Groups keep their items' source order (newest commit first, reports before failures),
  except ``agentLogs``: its head (the plan) and tail (the outcome) are kept, the middle
  dropped;
- signals come from the rubric's ``signals`` rules (:mod:`judge.core.scoring.signal_rules`) over the
  facts; ``metadata.signals`` records each one's rule and terms;
- evidence groups follow the profile's order and facts are sorted, so equal artefacts give
  equal bytes and a re-collected case reads well in a diff.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..core.formats.conversation import Turn
from ..core.formats.evidence import TEXT_KEYS, TITLE_KEYS, EvidenceProfile, GroupSpec, truncate
from ..core.formats.rubric import Rubric, format_validation_error
from ..core.formats.suite import Case
from ..core.scoring.signal_rules import FACTS, Fact, SignalOutcome, evaluate_signals
from ..core.text.errors import UsageError
from ..core.text.secrets import mask_value

__all__ = ["LIST_LIMIT", "Collected", "CollectedCase", "bound_group", "build_case"]

LIST_LIMIT = 20
"""Most entries of a list-valued field kept (a commit's files); the rest are counted."""
HEAD_TAIL_GROUPS = frozenset({"agentLogs"})


@dataclass(frozen=True)
class Collected:
    """What one source adapter read."""

    source: dict[str, Any]
    """How the case records the source (``{"kind": "git", "repo": ..., "range": ...}``)."""
    evidence: Mapping[str, Sequence[Mapping[str, object]]] = field(default_factory=dict)
    """Raw items by group, in source order, each with a citable id (or a sha / key)."""
    facts: dict[str, Fact] = field(default_factory=dict)
    """Facts for the signal rules; names from :data:`judge.core.scoring.signal_rules.FACTS`."""
    input: Any = None
    output: Any = None
    conversation: tuple[Turn, ...] | None = None
    """The case's conversation turns, when the source gives one (scrubbed like the rest)."""
    tags: tuple[str, ...] = ()
    complexity: str | None = None


@dataclass(frozen=True)
class CollectedCase:
    """The case built, its signals with their rules, and what the caps and scrubber did."""

    case: Case
    signals: dict[str, SignalOutcome]
    """Every category of the rubric, in order (no rule: no value, nothing skipped)."""
    capped: dict[str, dict[str, int]]
    """Groups over their cap: ``{"commits": {"total": 31, "kept": 20}}``."""
    redactions: int


def _bound_value(value: object) -> object:
    if isinstance(value, list | tuple) and len(value) > LIST_LIMIT:
        return [*value[: LIST_LIMIT - 1], f"… +{len(value) - LIST_LIMIT + 1} more"]
    return value


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _bound_item(item: Mapping[str, object], profile: EvidenceProfile) -> dict[str, object]:
    # The fields build_bundle will read as the excerpt and the title (first non-blank).
    text_key = next((k for k in TEXT_KEYS if _text(item.get(k))), None)
    title_key = next((k for k in TITLE_KEYS if _text(item.get(k))), None)
    out: dict[str, object] = {}
    for key, value in item.items():
        if not isinstance(value, str):
            out[key] = _bound_value(value)
        elif key == text_key:
            # Trailing spaces dropped: they carry nothing, and they keep YAML from writing
            # the text as a readable block.
            text = "\n".join(line.rstrip() for line in value.strip("\n").splitlines())
            out[key] = truncate(text, profile.excerpt_limit)[0]
        elif key == title_key:
            out[key] = truncate(" ".join(value.split()), profile.subject_limit)[0]
        else:
            out[key] = _bound_value(value)
    return out


def bound_group(items: Sequence[Mapping[str, object]], spec: GroupSpec,
                profile: EvidenceProfile) -> list[dict[str, object]]:
    """The items a group keeps: at most ``spec.cap``, each excerpt and title truncated."""
    kept = list(items)
    if len(kept) > spec.cap:
        if spec.name in HEAD_TAIL_GROUPS:
            head = (spec.cap + 1) // 2
            kept = kept[:head] + kept[len(kept) - (spec.cap - head):]
        else:
            kept = kept[: spec.cap]
    return [_bound_item(item, profile) for item in kept]


def _first(values: Sequence[Any]) -> Any:
    return next((v for v in values if v is not None), None)


def _merge_facts(parts: Sequence[Collected]) -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    for part in parts:
        for name, value in part.facts.items():
            if name not in FACTS:  # an adapter's bug, not the user's input
                raise ValueError(f"adapter {part.source.get('kind')} made unknown fact {name!r}")
            if name in facts:
                raise ValueError(f"fact {name!r} collected twice")
            facts[name] = value
    return dict(sorted(facts.items()))


def build_case(case_id: str, parts: Sequence[Collected], rubric: Rubric,
               values: re.Pattern[str] | None = None) -> CollectedCase:
    """One case from the sources' collections (in priority order: the first input wins).

    Every string is scrubbed of secret shapes, and of ``values`` (the credentials the
    caller holds) wherever they appear verbatim.
    """
    profile = rubric.evidence
    grouped: dict[str, list[Mapping[str, object]]] = {}
    for part in parts:
        for group, items in part.evidence.items():
            if group not in profile.names():
                raise UsageError(
                    f"the {part.source.get('kind')} source gives {group!r} evidence, but "
                    f"rubric {rubric.id!r} has no such group",
                    where="--rubric",
                    fix=f"use a rubric whose evidence profile has {group!r} (such as "
                        f"task-evaluation), or leave that source out")
            grouped.setdefault(group, []).extend(items)
    raw, redactions = mask_value({
        "evidence": grouped,
        "input": _first([p.input for p in parts]),
        "output": _first([p.output for p in parts]),
        "conversation": _first([[t.model_dump(mode="json", exclude_defaults=True)
                                 for t in p.conversation] if p.conversation else None
                                for p in parts]),
        "facts": _merge_facts(parts),
        "sources": [p.source for p in parts],
    }, values=values)
    evidence: dict[str, list[dict[str, Any]]] = {}
    capped: dict[str, dict[str, int]] = {}
    for spec in profile.groups:
        items = raw["evidence"].get(spec.name) or []
        if not items:
            continue
        evidence[spec.name] = bound_group(items, spec, profile)
        if len(items) > spec.cap:
            capped[spec.name] = {"total": len(items), "kept": spec.cap}
    facts: dict[str, Fact] = raw["facts"]
    ruled = evaluate_signals(rubric.signals, facts)
    # Every category, in the rubric's order; one without rules has no signal (and no record).
    signals = {c.id: ruled.get(c.id, SignalOutcome(category=c.id)) for c in rubric.categories}
    collected: dict[str, Any] = {"sources": raw["sources"], "facts": facts}
    if capped:
        collected["capped"] = capped
    if redactions:
        collected["redactions"] = redactions
    data: dict[str, Any] = {
        "id": case_id,
        "input": raw["input"],
        "output": raw["output"],
        **({"conversation": raw["conversation"]} if raw["conversation"] else {}),
        "evidence": evidence,
        "deterministic": {c: s.value for c, s in signals.items() if s.value is not None},
        "tags": sorted({t for p in parts for t in p.tags}),
        "complexity": _first([p.complexity for p in parts]),
        "metadata": {"collected": collected,
                     "signals": {c: s.record() for c, s in signals.items() if c in ruled}},
    }
    try:
        case = Case.model_validate(data)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise UsageError(f"the collected case is not valid: {where}: {msg}",
                         where="--id" if where == "id" else "--task",
                         fix="case ids are letters, digits and . _ : / - (starting with a "
                             "letter or digit); complexity is simple, medium or complex") \
            from None
    return CollectedCase(case=case, signals=signals, capped=capped, redactions=redactions)
