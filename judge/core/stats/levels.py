"""Correlation with people at the three levels the field reports: item, group and system.

How a judge's quality is published (SummEval, G-Eval, Chiang & Lee 2023, MT-Bench):

- **item level**: one correlation over every item (the ``pearsonR``/``spearmanRho``/
  ``kendallTau`` of :class:`judge.core.stats.agreement.PairStats`);
- **group level** ("summary-level"): the correlation inside each group of items that share
  one source (a document, a dialogue context, a prompt), groups where either side is
  constant (or that hold one item) skipped and counted, then the unweighted mean over the
  groups used (G-Eval's ``meta_eval_summeval.py``);
- **system level**: each system's mean score on each side, correlated across systems.

A case's group and system come from a field of the case that the user names
(:class:`FieldSpec`): a ``metadata`` key, or a tag prefix. Intervals are seeded percentile
bootstraps (:mod:`judge.core.stats.intervals`, the resample matrix every agreement statistic
shares); the group level resamples groups and the system level systems, not items, as the
unit the mean or the correlation is over. Every correlation is one kernel of
:mod:`judge.core.stats.agreement`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Final, Literal

from pydantic import Field

from ..formats.suite import Case
from ..text.errors import UsageError
from ..text.frozen import Frozen
from .correlation import kendall_rows, mean_rows, one_value, pearson_rows, spearman_rows
from .intervals import AGREEMENT_RESAMPLES, DEFAULT_SEED, Interval, bootstrap_many, whole_sample

if TYPE_CHECKING:
    from .intervals import RowStatistic, Values

__all__ = [
    "CorrelationIntervals",
    "FieldSpec",
    "Grouping",
    "LevelStats",
    "Levels",
    "case_keys",
    "correlations",
    "group_level",
    "levels",
    "parse_field",
    "system_level",
]

Exact = int | Fraction
"""A score as the levels read it: an integer, or an exact mean of integers."""
STATISTICS: Final = ("pearsonR", "spearmanRho", "kendallTau")
"""The three correlations, as the wire names them."""


class CorrelationIntervals(Frozen):
    """Seeded percentile-bootstrap 95 % intervals of one level's correlations."""

    pearson_r: Interval | None = Field(None, alias="pearsonR")
    spearman_rho: Interval | None = Field(None, alias="spearmanRho")
    kendall_tau: Interval | None = Field(None, alias="kendallTau")


class LevelStats(Frozen):
    """Pearson's r, Spearman's ρ and Kendall's τ-b at one level; None where undefined."""

    n: int
    """What the correlation is over: groups used (group level), systems (system level)."""
    items: int
    """Items (aligned cases) the level read."""
    pearson_r: float | None = Field(None, alias="pearsonR")
    spearman_rho: float | None = Field(None, alias="spearmanRho")
    kendall_tau: float | None = Field(None, alias="kendallTau")
    skipped: int = 0
    """Groups left out: one side constant inside them, or a single item (group level)."""
    unkeyed: int = 0
    """Items whose case has no value for the field (left out of this level)."""
    intervals: CorrelationIntervals | None = None
    notes: tuple[str, ...] = ()


class Levels(Frozen):
    """The group and system levels of one pair of score vectors (the item level is beside)."""

    group_by: str | None = Field(None, alias="groupBy")
    system_by: str | None = Field(None, alias="systemBy")
    group: LevelStats | None = None
    system: LevelStats | None = None


@dataclass(frozen=True)
class FieldSpec:
    """A case field naming a group or a system: ``metadata.KEY`` or ``tag:PREFIX``."""

    kind: Literal["metadata", "tag"]
    name: str

    def __str__(self) -> str:
        return f"metadata.{self.name}" if self.kind == "metadata" else f"tag:{self.name}"

    def of(self, case: Case) -> str | None:
        """The case's value for this field (None: the case has none)."""
        if self.kind == "metadata":
            value = case.metadata.get(self.name)
            return None if value is None or isinstance(value, (dict, list)) else str(value)
        return next((t[len(self.name):] for t in case.tags if t.startswith(self.name)), None)


def parse_field(text: str, option: str) -> FieldSpec:
    """``metadata.KEY`` or ``tag:PREFIX`` as a :class:`FieldSpec`; UsageError otherwise."""
    if text.startswith("metadata.") and len(text) > len("metadata."):
        return FieldSpec("metadata", text[len("metadata."):])
    if text.startswith("tag:") and len(text) > len("tag:"):
        return FieldSpec("tag", text[len("tag:"):])
    raise UsageError(f"{option} {text!r} names no case field",
                     fix=f"give {option} metadata.KEY (a key of the cases' metadata) or "
                         f"{option} tag:PREFIX (the rest of the case's tag with that prefix)")


@dataclass(frozen=True)
class Grouping:
    """Which field groups the cases and which names their system, and each case's values."""

    group_by: FieldSpec | None
    system_by: FieldSpec | None
    keys: Mapping[str, tuple[str | None, str | None]]
    """Case id -> (group, system); a case missing here has neither."""

    def of(self, case_id: str) -> tuple[str | None, str | None]:
        """The case's (group, system)."""
        return self.keys.get(case_id, (None, None))


def case_keys(cases: Iterable[Case], group_by: FieldSpec | None,
              system_by: FieldSpec | None) -> Grouping:
    """The :class:`Grouping` of ``cases`` by the two fields (either may be None)."""
    return Grouping(group_by, system_by, {
        c.id: (group_by.of(c) if group_by else None, system_by.of(c) if system_by else None)
        for c in cases})


def _interval_of(found: Mapping[str, Interval | None]) -> CorrelationIntervals:
    return CorrelationIntervals(**{name: found.get(name) for name in STATISTICS})


def _kernels(a: Sequence[Exact], b: Sequence[Exact]) -> dict[str, RowStatistic]:
    """The three correlations of exact values: r on their floats, ρ and τ on their ranks."""
    fa, fb = [float(v) for v in a], [float(v) for v in b]
    ra, rb = _ranks(a), _ranks(b)
    return {"pearsonR": lambda s: pearson_rows(fa, fb, s),
            "spearmanRho": lambda s: spearman_rows(ra, rb, s),
            "kendallTau": lambda s: kendall_rows(ra, rb, s)}


def correlations(a: Sequence[Exact], b: Sequence[Exact]) -> dict[str, float | None]:
    """Pearson's r, Spearman's ρ and Kendall's τ-b of exact values, by wire name."""
    whole = whole_sample(len(a))
    return {name: one_value(kernel(whole)) for name, kernel in _kernels(a, b).items()}


def _by_key(a: Sequence[Exact], b: Sequence[Exact], keys: Sequence[str | None],
            ) -> tuple[dict[str, list[tuple[Exact, Exact]]], int]:
    found: dict[str, list[tuple[Exact, Exact]]] = {}
    unkeyed = 0
    for x, y, key in zip(a, b, keys, strict=True):
        if key is None:
            unkeyed += 1
        else:
            found.setdefault(key, []).append((x, y))
    return found, unkeyed


def group_level(a: Sequence[Exact], b: Sequence[Exact], groups: Sequence[str | None], *,
                intervals: bool = False) -> LevelStats:
    """The mean over groups of each group's correlation; groups with a constant side skipped.

    ``groups[i]`` is item i's group (None: left out). The interval resamples the groups
    used (their correlations fixed), so it is the interval of an unweighted mean of groups.
    """
    import numpy as np

    by_group, unkeyed = _by_key(a, b, groups)
    values: dict[str, list[float]] = {name: [] for name in STATISTICS}
    skipped = 0
    for _, pairs in sorted(by_group.items()):
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        if len(pairs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
            skipped += 1
            continue
        for name, value in correlations(xs, ys).items():
            assert value is not None  # two items, neither side constant: each is defined
            values[name].append(value)
    used = len(values["pearsonR"])
    notes = [] if used else ["no group holds two items that both sides score differently: "
                             "the group level is undefined"]
    means = {name: (float(np.mean(v)) if v else None) for name, v in values.items()}
    found = None
    if intervals and used:
        arrays = {name: np.asarray(v, dtype=np.float64) for name, v in values.items()}
        found = _interval_of(bootstrap_many(used, {
            name: _mean_kernel(arrays[name]) for name in STATISTICS},
            seed=DEFAULT_SEED, resamples=AGREEMENT_RESAMPLES))
    return LevelStats(n=used, items=len(a) - unkeyed, pearson_r=means["pearsonR"],
                      spearman_rho=means["spearmanRho"], kendall_tau=means["kendallTau"],
                      skipped=skipped, unkeyed=unkeyed, intervals=found, notes=tuple(notes))


def _mean_kernel(values: Values) -> RowStatistic:
    return lambda samples: mean_rows(values, samples)


def _ranks(values: Sequence[Exact]) -> list[int]:
    """Each value's position among the distinct values: the order and ties, exactly."""
    order = {v: i for i, v in enumerate(sorted(set(values)))}
    return [order[v] for v in values]


def system_level(a: Sequence[Exact], b: Sequence[Exact], systems: Sequence[str | None], *,
                 intervals: bool = False) -> LevelStats:
    """The correlation across systems of each system's mean score on each side.

    ``systems[i]`` is item i's system (None: left out). The means are exact fractions: ρ
    and τ read their order and ties exactly, r their floats. The interval resamples systems.
    """
    by_system, unkeyed = _by_key(a, b, systems)
    names = sorted(by_system)
    mean_a = [Fraction(sum(p[0] for p in by_system[s]), len(by_system[s])) for s in names]
    mean_b = [Fraction(sum(p[1] for p in by_system[s]), len(by_system[s])) for s in names]
    kernels = _kernels(mean_a, mean_b)
    whole = whole_sample(len(names))
    point = {name: one_value(kernel(whole)) for name, kernel in kernels.items()}
    notes = []
    if point["pearsonR"] is None:
        notes.append(f"{len(names)} system(s), or one side's means all equal: the system "
                     f"level is undefined")
    found = None
    if intervals and point["pearsonR"] is not None:
        found = _interval_of(bootstrap_many(len(names), kernels, seed=DEFAULT_SEED,
                                            resamples=AGREEMENT_RESAMPLES))
    return LevelStats(n=len(names), items=len(a) - unkeyed, pearson_r=point["pearsonR"],
                      spearman_rho=point["spearmanRho"], kendall_tau=point["kendallTau"],
                      unkeyed=unkeyed, intervals=found, notes=tuple(notes))


def levels(a: Sequence[Exact], b: Sequence[Exact], ids: Sequence[str], grouping: Grouping, *,
           intervals: bool = False) -> Levels:
    """The group and system levels of aligned scores of the cases ``ids``."""
    keys = [grouping.of(i) for i in ids]
    g, s = grouping.group_by, grouping.system_by
    return Levels(
        group_by=None if g is None else str(g), system_by=None if s is None else str(s),
        group=None if g is None else group_level(a, b, [k[0] for k in keys],
                                                 intervals=intervals),
        system=None if s is None else system_level(a, b, [k[1] for k in keys],
                                                   intervals=intervals))
