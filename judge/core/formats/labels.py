"""People's labels of a suite's cases: the review page's output, a suite's human labels.

One label is one reviewer's word on one category of one case: a score on the rubric's scale
(for a level rubric, a level, read as its score), whether they agree with the judge, a
note, who and when. The labels file sits beside the suite (``<suite>.labels.jsonl``), one
canonical JSON line per label sorted by case, category and reviewer, so a change reads as a
diff in review; importing it back replaces each (case, category, reviewer) label with the
file's, so importing twice changes nothing.

As a suite's human labels (:func:`human_labels`) several reviewers' scores of a category
are averaged and rounded half up (exact); agreement *between* reviewers is Krippendorff's α
over the reviewer x case matrix of each category (:func:`reviewer_alpha`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

from pydantic import Field, ValidationError

from ..scoring.exact import round_half_up
from ..scoring.scoring import compute_overall_score, level_score
from ..stats.agreement import krippendorff_alpha
from ..text.canonical import canonical_json
from ..text.errors import ConfigError
from ..text.frozen import Frozen
from ..text.seals import DIGEST_FIELD, NO_SECRET, SEAL_FIELD, Sealer, file_seals
from ..text.strict_json import strict_document
from ..text.validation_text import format_validation_error
from .models import CaseResult
from .rubric import Rubric
from .suite import HumanLabel

__all__ = [
    "LABELS_FIX",
    "LABELS_FORMAT",
    "GivenLabel",
    "Label",
    "LabelsError",
    "check_label",
    "dump_labels",
    "human_labels",
    "label_score",
    "parse_labels",
    "pick_next",
    "reviewer_alpha",
    "reviewer_scores",
]

LABELS_FORMAT = 1


class LabelsError(ConfigError):
    """A labels file (or a label sent by the page) is malformed or off the rubric's scale."""


class GivenLabel(Frozen):
    """What a reviewer gives for one category of one case (the review page sends these).

    Typed as its schema says, strictly: ``true`` is not a score, nor is ``"50"``.
    """

    case: str = Field(min_length=1, max_length=255)
    category: str = Field(min_length=1, max_length=255)
    score: int | None = Field(default=None, ge=0, le=100, strict=True)
    """The reviewer's score on 0..100 (scores rubrics)."""
    level: str | None = Field(default=None, max_length=64)
    """The reviewer's level (levels rubrics)."""
    agree: bool | None = Field(default=None, strict=True)
    """Whether the reviewer agrees with the judge's score."""
    note: str = Field(default="", max_length=4000)


class Label(GivenLabel):
    """One reviewer's label of one category of one case."""

    version: int = Field(default=LABELS_FORMAT, strict=True)
    """Format of the label (checked on reading)."""
    suite: str = Field(min_length=1, max_length=255)
    reviewer: str = Field(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f]+$")
    at: str = Field(min_length=1, max_length=64)
    """When it was given (ISO 8601, UTC)."""
    run: str | None = Field(default=None, max_length=255)
    """The run the reviewer looked at."""

    def key(self) -> tuple[str, str, str, str]:
        """What one label is unique by: suite, case, category, reviewer."""
        return (self.suite, self.case, self.category, self.reviewer)


def label_score(label: Label, rubric: Rubric) -> int | None:
    """The label's 0..100 score: its score, or its level's value x 100."""
    if label.level is not None:
        return level_score(rubric, label.level)
    return label.score


def check_label(label: Label, rubric: Rubric, source: str) -> None:
    """Refuse a label naming a category or level the rubric lacks, or with no judgement."""
    where = f"case {label.case!r}: {label.category}"
    known = [c.id for c in rubric.categories]
    if label.category not in known:
        raise LabelsError(f"unknown category {label.category!r} for rubric {rubric.id!r}",
                          file=source, where=where, fix=f"use one of: {', '.join(known)}")
    names = [lv.name for lv in rubric.levels]
    if rubric.style == "levels":
        if label.score is not None or (label.level is not None and label.level not in names):
            raise LabelsError(f"rubric {rubric.id!r} is judged by levels", file=source,
                              where=where, fix=f"give a level: {', '.join(names)}")
    elif label.level is not None:
        raise LabelsError(f"rubric {rubric.id!r} is judged by scores", file=source,
                          where=where, fix="give a score 0..100, not a level")
    if label.score is None and label.level is None and label.agree is None and not label.note:
        raise LabelsError("an empty label", file=source, where=where,
                          fix="give a score or level, agree/disagree, or a note")


LABELS_FIX = ("export it again from the store (`judge review RUN --export`); a file made by "
              "hand or by another tool is taken on purpose with `judge review RUN --import "
              "FILE --allow-unsealed`")


def parse_labels(text: str, source: str = "<labels>",
                 sealer: Sealer | None = NO_SECRET) -> list[Label]:
    """Read a labels file (JSON lines); the last line wins for a repeated key.

    Strict JSON and types on every line; the first line may hold the file's seals
    (:func:`dump_labels`), checked against the labels read (not with ``sealer`` None: a
    file taken on purpose).
    """
    found: dict[tuple[str, str, str, str], Label] = {}
    seals: dict[str, object] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        data = strict_document(line, source, LabelsError, LABELS_FIX, line=n)
        if not found and not seals and _is_seals(data):
            seals = data
            continue
        label = _label(data, source, n)
        found[label.key()] = label
    labels = [found[k] for k in sorted(found)]
    if sealer is not None:
        why = sealer.file_problem([lb.model_dump(mode="json") for lb in labels],
                                  seals.get(DIGEST_FIELD), seals.get(SEAL_FIELD))
        if why is not None:
            raise LabelsError(why, file=source, where="line 1", fix=LABELS_FIX)
    return labels


def _is_seals(data: object) -> bool:
    return isinstance(data, dict) and bool(data) and set(data) <= {DIGEST_FIELD, SEAL_FIELD}


def _label(data: object, source: str, n: int) -> Label:
    """Line ``n``'s label, typed as its schema says."""
    try:
        label = Label.model_validate(data)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise LabelsError(msg, file=source, where=f"line {n}: {where}",
                          fix="correct the field as the message says") from None
    if label.version != LABELS_FORMAT:
        raise LabelsError(f"labels format {label.version} is not known here",
                          file=source, where=f"line {n}: version",
                          fix="upgrade judgeflow to read it")
    return label


def dump_labels(labels: Iterable[Label], sealer: Sealer = NO_SECRET) -> str:
    """The labels file's text: its seals, then canonical JSON lines sorted by their key."""
    ordered = sorted(labels, key=Label.key)
    values = [lb.model_dump(mode="json") for lb in ordered]
    return "".join(canonical_json(v) + "\n" for v in [file_seals(sealer, values), *values])


def reviewer_scores(labels: Iterable[Label],
                    rubric: Rubric) -> dict[tuple[str, str], dict[str, int]]:
    """(case, category) -> reviewer -> score, for labels with a score or level."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for lb in labels:
        score = label_score(lb, rubric)
        if score is not None:
            out.setdefault((lb.case, lb.category), {})[lb.reviewer] = score
    return out


def human_labels(labels: Iterable[Label], rubric: Rubric) -> dict[str, HumanLabel]:
    """Per case, the people's scores per category (reviewers averaged, half up).

    A case labelled in every category of the rubric also gets the people's overall score,
    the rubric's weighted overall of theirs (:func:`compute_overall_score`, as the core
    computes a case's); a partly labelled case has none (it would be another quantity).
    """
    cases: dict[str, dict[str, int]] = {}
    for (case, cat), by in reviewer_scores(labels, rubric).items():
        mean = Fraction(sum(by.values()), len(by))
        cases.setdefault(case, {})[cat] = round_half_up(mean)
    every = {c.id for c in rubric.categories}
    return {case: HumanLabel(categories=cats, overall=compute_overall_score(cats, rubric)
                             if set(cats) == every else None)
            for case, cats in sorted(cases.items())}


def reviewer_alpha(labels: Iterable[Label], rubric: Rubric) -> dict[str, float | None]:
    """Krippendorff's α (interval) between reviewers, per category (None: undefined)."""
    scored = reviewer_scores(labels, rubric)
    reviewers = sorted({r for by in scored.values() for r in by})
    out: dict[str, float | None] = {}
    for cat in (c.id for c in rubric.categories):
        cases = sorted(case for case, c in scored if c == cat)
        if len(reviewers) < 2 or not cases:
            out[cat] = None
            continue
        matrix = [[scored[(case, cat)].get(r) for case in cases] for r in reviewers]
        out[cat] = krippendorff_alpha(matrix)
    return out


def _edge_distance(score: int, rubric: Rubric) -> int:
    """How far a score is from the nearest band edge (0: on the edge)."""
    return min(min(score - b.min, b.max - score) for b in rubric.bands
               if b.min <= score <= b.max)


def pick_next(results: Sequence[CaseResult], rubric: Rubric, n: int, *,
              labelled: Iterable[str] = (),
              other: Mapping[str, CaseResult] | None = None) -> list[tuple[str, str]]:
    """The ``n`` unlabelled cases whose labels tell most, each with why.

    Stratified: the cases are dealt round-robin from one queue per band of the overall
    score (so every band is sampled, not only the common one); within a band, a case two
    judges disagree most on comes first, then the case nearest a band edge (its label
    decides a band), then by id. ``other``: another judge's results by case id.
    """
    done = set(labelled)
    queues: dict[str, list[tuple[int, int, str, str]]] = {}
    for r in results:
        if r.id in done or r.overall_score is None:
            continue
        gap = 0
        if other is not None and (o := other.get(r.id)) is not None \
                and o.overall_score is not None:
            gap = abs(o.overall_score - r.overall_score)
        edge = _edge_distance(r.overall_score, rubric)
        why = (f"judges differ by {gap}" if gap else
               f"{edge} from a band edge" if edge <= 3 else f"band {r.band}")
        queues.setdefault(str(r.band), []).append((-gap, edge, r.id, why))
    ordered = [sorted(q) for _, q in sorted(queues.items())]
    picked: list[tuple[str, str]] = []
    while len(picked) < n and any(ordered):
        for q in ordered:
            if q and len(picked) < n:
                _, _, cid, why = q.pop(0)
                picked.append((cid, why))
    return picked
