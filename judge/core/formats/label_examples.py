"""Which labelled cases a judge is shown as examples: training folds only.

A rubric with ``examples: {count: K, folds: F, seed: S}`` shows the judge K cases the
people labelled, with their scores. The labelled cases are split into F folds by a seeded
hash of the case id (:func:`judge.core.scoring.calibration.fold_of`, the folds of ``judge
calibrate``). A labelled case being judged is shown examples from the *other* folds only:
never itself, never a case of its own fold, so its judgment is held out from its label and
agreement measured over all labelled cases is cross-fitted (each case predicted without
its fold), as calibration's cross-validation is. A case nobody labelled may be shown any
labelled case: there is no label of its own to hold out.

Among the allowed cases the K examples spread over the people's scores: the pool sorted by
the people's overall (their mean category score when they gave no overall), then K picked
at evenly spaced ranks, lowest and highest included. A case of the same fold sees the same
examples, so their prompts share a prefix and the choice never depends on the cases' order.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..scoring.calibration import fold_of
from .rubric import LabelExamples
from .suite import HumanLabel

__all__ = ["example_ids", "people_score"]


def people_score(label: HumanLabel) -> Fraction | None:
    """The people's overall score of a case, else the mean of their category scores."""
    if label.overall is not None:
        return Fraction(label.overall)
    if not label.categories:
        return None
    return Fraction(sum(label.categories.values()), len(label.categories))


def example_ids(case_id: str, labelled: Mapping[str, HumanLabel],
                config: LabelExamples) -> tuple[str, ...]:
    """The ids of the labelled cases shown to the judge of ``case_id``, lowest score first."""
    own = fold_of(case_id, config.folds, config.seed) if case_id in labelled else None
    pool = sorted((score, cid) for cid, label in labelled.items()
                  if cid != case_id and (score := people_score(label)) is not None
                  and (own is None or fold_of(cid, config.folds, config.seed) != own))
    if len(pool) <= config.count:
        return tuple(cid for _, cid in pool)
    if config.count == 1:
        return (pool[(len(pool) - 1) // 2][1],)
    last = len(pool) - 1
    ranks = sorted({(i * last + (config.count - 1) // 2) // (config.count - 1)
                    for i in range(config.count)})
    return tuple(pool[r][1] for r in ranks)
