"""A judge's measured quality: how far its scores follow people's labels, said with its verdicts.

One small, stable figure: the item-level Spearman ρ between the judge's AI scores and the
people's labels, pooled over categories, with the number of scores and where and when it
was measured. It comes from the run's own labelled cases where the suite has labels (the
statistic ``judge judges agreement`` gives as ``aiAll``), else from a figure shipped with judgeflow
for its embedded judge (measured once, with its provenance). Pure: the figures come in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

from pydantic import Field

from ..text.frozen import Frozen

__all__ = ["MIN_SCORES", "TRACKS", "WEAK", "MeasuredAgreement", "for_judge"]

TRACKS: Final = 0.6
"""ρ at or above which a judge's scores are said to track quality."""
WEAK: Final = 0.3
"""ρ below which they are said not to track it (between the two: weakly)."""
MIN_SCORES: Final = 10
"""Fewer labelled scores than this and the figure is said to be a rough one."""


class MeasuredAgreement(Frozen):
    """A judge's agreement with people's labels, measured: item-level Spearman ρ, n, source."""

    model: str
    template_id: str | None = Field(None, alias="templateId")
    """The template it was measured with (None: any)."""
    rubric: str
    statistic: Literal["spearman"] = "spearman"
    level: Literal["item"] = "item"
    scores: str = "category AI scores"
    """What was correlated with the labels."""
    rho: float | None
    """None when undefined (constant scores on a side)."""
    n: int
    """Scores correlated (a case's labelled categories each count)."""
    suite: str
    """The labelled suite it was measured on."""
    measured_at: str | None = Field(None, alias="measuredAt")
    """When (a date or a run's time)."""
    source: str
    """Where the figure comes from: this run's labelled cases, or the shipped measurement."""

    def reading(self) -> str:
        """The figure in plain words: whether the judge's scores follow the people's."""
        if self.rho is None:
            return "agreement with people's labels is undefined (constant scores)"
        rough = " (few labels: a rough figure)" if self.n < MIN_SCORES else ""
        if self.rho >= TRACKS:
            return f"its scores track the people's labels{rough}"
        if self.rho >= WEAK:
            return f"its scores track the people's labels only weakly{rough}"
        return f"its scores do not track quality (the people's labels){rough}"

    def said(self) -> str:
        """One sentence: the judge, ρ, n, where and when, and the reading."""
        rho = "—" if self.rho is None else f"{self.rho:+.2f}".replace("-", "−")
        when = f", {self.measured_at}" if self.measured_at else ""
        template = f", template {self.template_id}" if self.template_id else ""
        return (f"{self.model}{template}: Spearman ρ {rho} over {self.n} {self.scores} "
                f"against people's labels ({self.source}, suite {self.suite}{when}): "
                f"{self.reading()}")


def for_judge(figures: Iterable[MeasuredAgreement], model: str,
              template_id: str) -> MeasuredAgreement | None:
    """The figure measured for ``model`` with ``template_id`` (or with any template)."""
    for figure in figures:
        if figure.model == model and figure.template_id in (None, template_id):
            return figure
    return None
