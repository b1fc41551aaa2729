"""Suite files: cases to judge, parsed from YAML or JSONL text and validated up front.

A case carries what was asked (``input``), what is judged (``output``), its evidence by
group, deterministic signals per category and/or deterministic checks, and labels (tags,
complexity, optional human labels). ``judged_by: deterministic`` cases never reach a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from pydantic import (
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from ..text.errors import SuiteError
from ..text.frozen import Frozen
from ..text.safeyaml import load_yaml
from ..text.secrets import masked_fields
from ..text.strict_json import JsonProblem, loads_strict
from .conversation import Turn
from .evidence import EvidenceInputError, check_evidence
from .limits import (
    MAX_DEPTH,
    MAX_JSONL_LINE_CHARS,
    MAX_SUITE_CHARS,
    MAX_SUITE_ID,
    SUITE_ID_PATTERN,
    nesting_depth,
)
from .models import JudgedBy, Score
from .rubric import Rubric, format_validation_error

__all__ = [
    "Case",
    "Check",
    "HumanLabel",
    "MaskingContext",
    "PairSuiteGiven",
    "Suite",
    "SuiteLine",
    "as_masked_case",
    "case_lines",
    "check_suite_id",
    "compile_suite",
    "filter_cases",
    "iter_cases",
    "iter_jsonl",
    "iter_jsonl_cases",
    "iter_jsonl_checked",
    "lacks_output",
    "looks_like_pairs",
    "masked_case",
    "masking_context",
    "no_output_warning",
    "parse_suite",
    "read_suite_document",
    "validate_against_rubric",
    "validate_cases",
]


class Check(Frozen):
    """A deterministic check on the output (a suite's fixtures)."""

    type: Literal["contains", "not_contains", "min_confidence", "expected_mode"]
    """``contains``/``not_contains`` a string, ``min_confidence`` a minimum, ``expected_mode``."""
    value: StrictStr | Annotated[float, Field(strict=True)]
    """The string, the minimum confidence (0..1) or the mode expected (a boolean is neither)."""
    category: str | None = None
    """Category the check feeds; none: every category."""


class HumanLabel(Frozen):
    """What a person said about the case, for judge-agreement statistics."""

    overall: Score | None = None
    """The person's overall score, 0..100."""
    band: str | None = None
    """The person's band (one of the rubric's band names)."""
    categories: dict[str, Score] = Field(default_factory=dict)
    """The person's score per category, 0..100."""
    passed: StrictBool | None = None
    """Whether the person would pass the case: true or false (0 or "no" is refused, never
    read as a verdict)."""


class Case(Frozen):
    """One case of a suite."""

    id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")
    """Unique within the suite; used in results, baselines and cache reports."""
    input: Any = None
    """What the agent or model was asked (text or structured)."""
    output: Any = None
    """What is judged (text, or a mapping with text, confidence, mode...)."""
    conversation: tuple[Turn, ...] | None = Field(default=None,
                                                  exclude_if=lambda v: v is None)
    """What is judged when it is a dialogue: turns in order (role, content, tool calls);
    instead of or beside ``output``. Left out of a dump when absent, so the cases without
    one keep their bytes (and their replay digests)."""
    evidence: dict[str, Any] = Field(default_factory=dict)
    """Evidence items by group; built into a bundle by the rubric's profile."""
    deterministic: dict[str, Score] = Field(default_factory=dict)
    """Deterministic signal per category, 0..100."""
    checks: tuple[Check, ...] = ()
    """Deterministic checks; each category's passed share becomes its signal when none is given."""
    tags: tuple[str, ...] = ()
    """Labels to select cases by (``judge run --tag``) and to group them in reports."""
    complexity: Literal["simple", "medium", "complex"] | None = None
    """How hard the case is; ``judge run --complexity`` selects by it."""
    judged_by: JudgedBy = "llm"
    """``llm``: the judge model gives AI scores; ``deterministic``: signals alone, no call."""
    human: HumanLabel | None = None
    """A person's labels, for ``judge compare``'s agreement with humans."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form context carried to results; never sent to the judge."""

    @model_validator(mode="before")
    @classmethod
    def _secrets_masked(cls, data: Any, info: ValidationInfo) -> Any:
        if info.context is _MASKED:  # masked by the caller (see _case_of)
            return data
        # {"secrets": pattern}: the values of the credentials the caller holds (masking_context)
        values = info.context.get("secrets") if isinstance(info.context, dict) else None
        return masked_case(data, values)

    @model_validator(mode="after")
    def _deterministic_needs_signal(self) -> Case:
        if self.judged_by == "deterministic" and not self.deterministic and not self.checks:
            raise ValueError("a deterministic case needs 'deterministic' scores or 'checks'")
        return self


class Suite(Frozen):
    """A named list of cases."""

    id: str = Field(min_length=1, max_length=MAX_SUITE_ID, pattern=SUITE_ID_PATTERN)
    """Suite id: names the baseline file and the run history."""
    description: str = ""
    rubric: str | None = None
    """Default rubric id for the suite."""
    cases: tuple[Case, ...]


_SUITE_ID_FIX = (f"suite ids are letters, digits, . _ - (at most {MAX_SUITE_ID} characters, "
                 "starting with a letter or digit)")
_SUITE_ID = re.compile(SUITE_ID_PATTERN)


_CASE_TEXT = ("input", "output", "evidence", "metadata", "conversation")
"""The fields of a case that hold untrusted text, masked at load (:func:`masked_case`)."""


def masked_case(raw: Any, values: re.Pattern[str] | None = None) -> Any:
    """A raw case with every secret in its text masked (judge.core.text.secrets, the one masker).

    Key *formats*, credential-named fields and the prose shapes specific enough for a
    suite's own text (``formats_only``: an ``Authorization`` header, ``api_key=…`` with a
    value that looks like a key); the broad ones would mask words of a suite about tokens
    ("Testing token: curl"), changing its keys. ``values``: the credentials the caller
    holds (from its environment), masked wherever they appear verbatim.

    At load, so a key pasted into evidence or an output never reaches the prompt, the cache
    key, the cache, a compiled suite, the store or an export. The cache key covers the
    *masked* text: a case whose text holds no secret keeps its key; one that does is keyed
    by its text as sent. Cases are mappings here; anything else is left to validation.
    """
    return masked_fields(raw, _CASE_TEXT, values)


def check_suite_id(suite_id: str, source: str) -> str:
    """``suite_id`` if it can name a baseline file (as a YAML suite's id is checked), else an error.

    For ids no :class:`Suite` model checks: a streamed JSONL suite's, taken from its file name.
    """
    if not suite_id or len(suite_id) > MAX_SUITE_ID or not _SUITE_ID.match(suite_id):
        shown = suite_id if len(suite_id) <= 40 else suite_id[:40] + "..."
        raise SuiteError(f"invalid suite id {shown!r} ({len(suite_id)} characters)",
                         file=source, where="id", fix=_SUITE_ID_FIX
                         + "; for a JSONL suite the id is the file name: rename the file")
    return suite_id


def _case_error(exc: ValidationError, source: str, index: int, case_id: str | None) -> SuiteError:
    where, msg = format_validation_error(exc)
    label = f"case {case_id!r}" if case_id else f"case #{index + 1}"
    turn = re.match(r"conversation\.(\d+)(.*)", where)
    if turn:  # name the turn as a person counts it, and where it is in the data
        where = f"conversation turn {int(turn[1]) + 1} (conversation[{turn[1]}]{turn[2]})"
    return SuiteError(msg, file=source, where=f"{label}: {where}",
                      fix="see examples/task-evaluation/suite.yaml for the case shape")


def iter_cases(raw_cases: Iterable[Any], source: str,
               values: re.Pattern[str] | None = None) -> Iterator[Case]:
    """Validate raw cases one at a time (duplicates included), so a large file streams.

    ``values``: secret values to mask besides the shapes (:func:`masked_case`).
    """
    seen: set[str] = set()
    for index, raw in enumerate(raw_cases):
        case = _case_of(raw, index, source, values=values)
        _check_unique(case, index, seen, source)
        yield case


_MASKED: dict[str, bool] = {"masked": True}
"""The validation context of a raw case whose secrets are masked already (by identity)."""


class MaskingContext(TypedDict):
    """The validation context that makes :class:`Case` mask credential values too."""

    secrets: re.Pattern[str]


def masking_context(values: re.Pattern[str] | None) -> MaskingContext | None:
    """The validation context under which a :class:`Case` also masks ``values``.

    ``Case.model_validate(raw, context=masking_context(pattern))``: what an operation that
    holds credentials (read from its environment) validates a case from outside with.
    """
    return None if values is None else {"secrets": values}


def as_masked_case(case: Case | Mapping[str, Any], values: re.Pattern[str] | None) -> Case:
    """``case`` (a Case or a mapping) validated, with the secret ``values`` masked too.

    A :class:`Case` validated elsewhere (an HTTP body, a caller's object) had its shapes
    masked but not the values, which only an operation holding credentials knows.
    """
    if not isinstance(case, Case):
        return Case.model_validate(case, context=masking_context(values))
    if values is None:
        return case
    raw = case.model_dump()
    masked = masked_case(raw, values)
    return case if masked is raw else Case.model_validate(masked, context=_MASKED)


def _case_of(raw: Any, index: int, source: str, *, masked: bool = False,
             values: re.Pattern[str] | None = None) -> Case:
    """The case of ``raw``, validated.

    ``masked``: its text needs no masking (done, or known to change nothing), so the
    validator does not walk it again. ``values``: secret values to mask besides the shapes.
    """
    case_id = raw.get("id") if isinstance(raw, dict) else None
    if not isinstance(raw, dict):
        raise SuiteError("a case is a mapping", file=source, where=f"case #{index + 1}",
                         fix="write each case as id: ..., output: ..., evidence: ...")
    try:
        return Case.model_validate(raw, context=_MASKED if masked else masking_context(values))
    except ValidationError as exc:
        raise _case_error(exc, source, index, case_id if isinstance(case_id, str) else None) \
            from None


def _check_unique(case: Case, index: int, seen: set[str], source: str) -> None:
    if case.id in seen:
        raise SuiteError(f"duplicate case id {case.id!r}", file=source,
                         where=f"case #{index + 1}", fix="give every case its own id")
    seen.add(case.id)


@dataclass(frozen=True)
class SuiteLine:
    """A case still as its JSONL line, parsed only if needed (a replay may never need to).

    The line was validated by the run's first pass; :meth:`case` parses it again.
    """

    text: str
    source: str
    clean: bool = False
    """Masking this very text changes nothing (the first pass found so): :meth:`case` then
    validates it without walking it for secrets again (masking is a function of the text;
    the walk was most of a second validation: 2,000 lines measured 1.39 s, 0.17 s without)."""
    values: re.Pattern[str] | None = None
    """Secret values masked besides the shapes (:func:`masked_case`)."""

    def case(self) -> Case:
        """The case this line holds."""
        raw = next(iter_jsonl([self.text], self.source))
        return _case_of(raw, 0, self.source, masked=self.clean, values=self.values)


def iter_jsonl(lines: Iterable[str], source: str) -> Iterator[Any]:
    """Raw objects of a JSONL suite, one line at a time; a bad line names its number."""
    for lineno, line in enumerate(lines, start=1):
        if line.strip():
            yield _json_value(line, lineno, source)


def _json_value(line: str, lineno: int, source: str) -> Any:
    if len(line) > MAX_JSONL_LINE_CHARS:
        raise SuiteError(f"line too long: {len(line):,} characters, the limit is "
                         f"{MAX_JSONL_LINE_CHARS:,}", file=source, where=f"line {lineno}",
                         fix="keep each case under the limit (trim large evidence)")
    try:
        value = loads_strict(line)
    except json.JSONDecodeError as exc:
        raise SuiteError(f"invalid JSON: {exc.msg}", file=source, where=f"line {lineno}",
                         fix="one JSON object per line") from None
    except JsonProblem as exc:
        raise SuiteError(exc.problem, file=source, where=f"line {lineno}", fix=exc.fix) \
            from None
    except RecursionError:
        raise _too_deep(source, lineno) from None
    # Cheap filter first: only a line with many brackets can nest too deeply.
    if line.count("[") + line.count("{") > MAX_DEPTH and nesting_depth(value) > MAX_DEPTH:
        raise _too_deep(source, lineno)
    return value


def iter_jsonl_cases(lines: Iterable[str], source: str) -> Iterator[Case]:
    """``iter_cases(iter_jsonl(lines))``, validating each line's JSON in one pass where it can.

    Every line goes through the one grammar (:func:`judge.core.text.strict_json.loads_strict`):
    pydantic's own JSON parser, once a fast path here, keeps the last of two duplicate keys
    (``{"id":"a","id":"b"}`` became case ``b``), so it no longer reads suite lines.
    Duplicate ids are refused.
    """
    return (case for case, _ in iter_jsonl_checked(lines, source))


def iter_jsonl_checked(lines: Iterable[str], source: str,
                       values: re.Pattern[str] | None = None,
                       ) -> Iterator[tuple[Case, SuiteLine]]:
    """Each case of :func:`iter_jsonl_cases` with its line (stripped).

    The line is marked ``clean`` when masking (``values`` too) left it unchanged, so that a
    second pass over the same text need not mask it again.
    """
    seen: set[str] = set()
    index = 0
    for lineno, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        raw = _json_value(line, lineno, source)
        masked = masked_case(raw, values)
        case = _case_of(masked, index, source, masked=True)
        _check_unique(case, index, seen, source)
        index += 1
        yield case, SuiteLine(text, source, clean=masked is raw, values=values)


def _too_deep(source: str, lineno: int) -> SuiteError:
    return SuiteError(f"nested deeper than {MAX_DEPTH} levels", file=source,
                     where=f"line {lineno}",
                     fix="flatten the data; real cases nest a few levels")


def _parse_cases(raw_cases: Iterable[Any], source: str,
                 values: re.Pattern[str] | None = None) -> tuple[Case, ...]:
    return tuple(iter_cases(raw_cases, source, values))


def read_suite_document(text: str, source: str, keys: Sequence[str], shape: str) -> dict[str, Any]:
    """A YAML suite document: a mapping with a list of ``cases`` and only the ``keys`` given.

    Shared by every suite format (rubric cases, pairs); times stay the strings written.
    JSON door: the document as the file holds it, before its cases are validated.
    """
    data = load_yaml(text, source, SuiteError, max_chars=MAX_SUITE_CHARS, timestamps=False)
    if isinstance(data, list):
        data = {"cases": data}
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise SuiteError("a suite is a mapping with a list of 'cases'", file=source, fix=shape)
    extra = sorted(str(k) for k in set(data) - set(keys))
    if extra and looks_like_pairs(data) and "criteria" not in keys:
        raise PairSuiteGiven(source)
    if extra:
        raise SuiteError(f"unknown key {extra[0]!r}", file=source, where=extra[0],
                         fix=f"allowed top-level keys: {', '.join(keys)}")
    return data


class PairSuiteGiven(SuiteError):
    """A pair suite (``judge judges pairwise``) given where a rubric suite is read."""

    def __init__(self, source: str) -> None:
        super().__init__("this is a pair suite (criteria, output_a/output_b): it is judged "
                         "by `judge judges pairwise`, not `judge run`", file=source,
                         fix=f"run `judge judges pairwise {source} --model MODEL`")


def looks_like_pairs(data: Mapping[str, Any]) -> bool:
    """Whether a suite document is a pair suite: ``criteria``, or cases with output_a/_b."""
    cases = data.get("cases")
    first = cases[0] if isinstance(cases, list) and cases else None
    return "criteria" in data or (isinstance(first, Mapping) and "output_a" in first)


def parse_suite(text: str, source: str, default_id: str,
                values: re.Pattern[str] | None = None) -> Suite:
    """Parse a suite from YAML (a mapping with ``cases``) or JSONL (one case a line).

    ``values``: secret values masked in the cases besides the shapes (:func:`masked_case`).
    """
    if source.endswith(".jsonl"):
        return Suite(id=check_suite_id(default_id, source),
                     cases=_parse_cases(iter_jsonl(text.splitlines(), source), source, values))
    data = read_suite_document(text, source, ("id", "description", "rubric", "cases"),
                               "write cases: [- id: ..., ...]")
    cases = _parse_cases(data["cases"], source, values)
    try:
        return Suite(id=str(data.get("id") or default_id),
                     description=data.get("description") or "",
                     rubric=data.get("rubric"), cases=cases)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise SuiteError(msg, file=source, where=where, fix=_SUITE_ID_FIX) from None


def case_lines(raw_cases: Sequence[Any]) -> tuple[str, ...] | None:
    """Each raw case as one JSON line that reads back as the same data; None if one cannot.

    Keys keep the order written (it can reach the prompt). A value JSON cannot hold exactly —
    a non-string key, bytes, a set, a date, an infinite float, a tuple — makes it None: such
    a suite is read from its YAML every time.
    """
    lines = []
    for raw in map(masked_case, raw_cases):
        if not _json_exact(raw):
            return None
        line = json.dumps(raw, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        if len(line) > MAX_JSONL_LINE_CHARS:
            return None
        lines.append(line)
    return tuple(lines)


def _json_exact(value: Any) -> bool:
    """Whether JSON holds ``value`` exactly (same values, same types); walked without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if any(type(k) is not str for k in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float:
            if item != item or item in (float("inf"), float("-inf")):
                return False
        elif kind not in (str, int, bool) and item is not None:
            return False
    return True


def compile_suite(text: str, source: str, default_id: str) -> tuple[Suite, tuple[str, ...] | None]:
    """A YAML suite validated as :func:`parse_suite` validates it, and its cases as JSON lines.

    With lines, the returned suite holds no cases (they are the lines, each validated here;
    :class:`SuiteLine` reads one back): a replay can find each case's judgments by the
    digest of its line, as for a JSONL suite. Without (see :func:`case_lines`), the suite
    holds every case.
    """
    data = read_suite_document(text, source, ("id", "description", "rubric", "cases"),
                               "write cases: [- id: ..., ...]")
    lines = case_lines(data["cases"])
    if lines is None:
        cases = _parse_cases(data["cases"], source)
    else:
        for _ in iter_cases(data["cases"], source):
            pass  # validated one at a time; the lines are kept instead of the cases
        cases = ()
    try:
        suite = Suite(id=str(data.get("id") or default_id),
                      description=data.get("description") or "",
                      rubric=data.get("rubric"), cases=cases)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise SuiteError(msg, file=source, where=where, fix=_SUITE_ID_FIX) from None
    return suite, lines


def lacks_output(case: Case) -> bool:
    """A case with no ``output`` that needs one: judged by the LLM, or checked for text.

    Accepted (the judge still sees the input and the evidence), but warned about: it is
    more often a missing key than a choice.
    """
    if case.output is not None or case.conversation:
        return False
    return case.judged_by == "llm" or any(c.type in {"contains", "not_contains"}
                                          for c in case.checks)


def no_output_warning(ids: Sequence[str], total: int, source: str) -> str:
    """The one-line warning for ``total`` cases without output (``ids``: the first few)."""
    shown = ", ".join(ids) + (f" and {total - len(ids)} more" if total > len(ids) else "")
    what = "case has" if total == 1 else "cases have"
    return (f"warning: {source}: {total} {what} no 'output' ({shown}): the judge sees only "
            "the input and the evidence, and contains/not_contains checks fail")


def validate_against_rubric(suite: Suite, rubric: Rubric, source: str) -> None:
    """Check what only the rubric can say: category names, check targets, evidence groups."""
    validate_cases(suite.cases, rubric, source)


def validate_cases(cases: Iterable[Case], rubric: Rubric, source: str) -> None:
    """:func:`validate_against_rubric` over any iterable of cases (a streamed suite)."""
    known = {c.id for c in rubric.categories}
    for case in cases:
        for cat in case.deterministic:
            if cat not in known:
                raise SuiteError(f"unknown category {cat!r} for rubric {rubric.id!r}",
                                 file=source, where=f"case {case.id!r}: deterministic.{cat}",
                                 fix=f"use one of: {', '.join(sorted(known))}")
        for i, check in enumerate(case.checks):
            if check.category is not None and check.category not in known:
                raise SuiteError(f"unknown category {check.category!r}", file=source,
                                 where=f"case {case.id!r}: checks[{i}].category",
                                 fix=f"use one of: {', '.join(sorted(known))}")
        if case.human is not None:
            _check_human(case.id, case.human, rubric, known, source)
        try:
            check_evidence(case.evidence, rubric.evidence)
        except EvidenceInputError as exc:
            raise SuiteError(str(exc).split(": ", 1)[-1], file=source,
                             where=f"case {case.id!r}: {exc.where}",
                             fix=f"groups for rubric {rubric.id!r}: "
                                 f"{', '.join(rubric.evidence.names())}") from None


def _check_human(case_id: str, human: HumanLabel, rubric: Rubric, known: set[str],
                 source: str) -> None:
    # A label naming a band or category the rubric lacks would be counted as a disagreement
    # (or dropped) by the agreement statistics, silently.
    bands = [b.name for b in rubric.bands]
    if human.band is not None and human.band not in bands:
        raise SuiteError(f"unknown band {human.band!r} for rubric {rubric.id!r}", file=source,
                         where=f"case {case_id!r}: human.band",
                         fix=f"use one of: {', '.join(bands)}")
    for cat in human.categories:
        if cat not in known:
            raise SuiteError(f"unknown category {cat!r} for rubric {rubric.id!r}", file=source,
                             where=f"case {case_id!r}: human.categories.{cat}",
                             fix=f"use one of: {', '.join(sorted(known))}")


def filter_cases(cases: Iterable[Case], *, tags: Iterable[str] = (),
                 complexity: Iterable[str] = (), ids: Iterable[str] = ()) -> list[Case]:
    """Cases having every tag given, one of the complexities and one of the ids (empty: any)."""
    want_tags, want_cx, want_ids = set(tags), set(complexity), set(ids)
    return [c for c in cases
            if want_tags <= set(c.tags)
            and (not want_cx or c.complexity in want_cx)
            and (not want_ids or c.id in want_ids)]
