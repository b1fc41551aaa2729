"""``judge judges calibrate``: fit a monotone map from one judge's AI scores to people's labels.

Reads stored runs (one judge model, one rubric) and the people's labels (a labels file, or
the suite's own as ``judge judges agreement`` reads them), fits per category the
isotonic map of :mod:`judge.core.scoring.calibration`, measures it by k-fold cross-validation (each
case predicted by a map fitted without it) and writes the versioned calibration file a
rubric references with ``calibration: FILE``. No model call.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ...core.formats.labels import Label, check_label, human_labels
from ...core.formats.models import CaseResult, RunInfo
from ...core.formats.rubric import Rubric
from ...core.formats.suite import HumanLabel
from ...core.scoring.calibration import (
    Calibration,
    FoldReport,
    calibration_text,
    cross_validate,
    fit_category,
    rubric_scale,
)
from ...core.scoring.panel import headline_of, member_sample
from ...core.text.canonical import canonical_json
from ...core.text.errors import UsageError
from ...system.atomic_files import write_atomic
from ..workspace.workspace import Workspace
from .agreement_history import NO_LABELS_FIX, people_labels
from .reviewing import read_labels

__all__ = ["CalibrateReport", "calibrate", "fold_summary"]


@dataclass(frozen=True)
class CalibrateReport:
    """The file written, the calibration, and the held-out agreement per category."""

    path: Path
    calibration: Calibration
    skipped: dict[str, str]
    """Categories not calibrated, with why (too few labels)."""


def _judged(info: RunInfo, results: list[CaseResult], model: str) -> dict[str, CaseResult]:
    """The judge's headline result per case: its sample aggregate with K samples, else its one."""
    sample = member_sample(info.samples)
    return {r.id: r for r in results if r.judge is not None and r.judge.model == model
            and r.judge.sample == sample}


def _people(workspace: Workspace, infos: list[RunInfo], labels: list[Label] | None,
            labels_file: Path | None, suite_file: Path | None,
            rubric: Rubric) -> tuple[dict[str, HumanLabel], str]:
    """The people's labels by case, and a digest of what they were read from.

    The labels file's (``labels``, read from ``labels_file``); else the suite's ``human:``
    fields, its labels file and the review page's labels in the store, as ``judge judges
    agreement`` reads them.
    """
    if labels is not None:
        for lb in labels:
            check_label(lb, rubric, str(labels_file))
        read = [lb.model_dump(mode="json") for lb in labels]
        return human_labels(labels, rubric), hashlib.sha256(
            canonical_json(read).encode()).hexdigest()
    notes: list[str] = []
    human = people_labels(infos, suite_file, workspace, notes)
    if not human:
        raise UsageError(f"no people's labels for suite {infos[0].suite!r}"
                         + (f" ({'; '.join(notes)})" if notes else ""), fix=NO_LABELS_FIX)
    given = {cid: h.model_dump(mode="json") for cid, h in sorted(human.items())}
    return human, hashlib.sha256(canonical_json(given).encode()).hexdigest()


def calibrate(workspace: Workspace, run_ids: list[str], labels_file: Path | None = None, *,
              out: Path | None = None, folds: int = 5, seed: int = 0,
              judge: str | None = None, min_labels: int = 4,
              suite_file: Path | None = None) -> CalibrateReport:
    """Fit, cross-validate and write a calibration of ``judge``'s scores on ``run_ids``.

    The labels are ``labels_file``'s, else the suite's (``suite_file``, default the runs').
    """
    if folds < 2:
        raise UsageError(f"--folds {folds}: cross-validation needs at least 2 folds",
                         fix="pass --folds 2 or more (5 by default)")
    if out is not None:
        _check_target(out, "--out")
    # Every input is read before the store is opened: bad input writes nothing.
    labels = None if labels_file is None else read_labels(
        labels_file, "pass the labels file `judge review --export` wrote", workspace.sealer)
    with workspace.open_store() as store:
        runs = [(store.get_run(r), r) for r in run_ids]
        infos = [info for info, _ in runs]
        rubrics = sorted({i.rubric for i in infos})
        if len(rubrics) != 1:
            raise UsageError(f"the runs used rubrics {rubrics}; a calibration is of one rubric",
                             fix="pass runs of one rubric")
        model = judge or headline_of(infos[0])[0]
        if model is None:
            raise UsageError(f"run {infos[0].id} has no judge model",
                             fix="calibrate runs judged by a model")
        scores: dict[str, CaseResult] = {}
        for info in infos:
            if model not in info.models:
                raise UsageError(f"run {info.id} was not judged by {model!r}",
                                 fix="pass runs of one judge (or --judge MODEL)")
            scores.update(_judged(info, list(store.iter_results(info.id)), model))
    rubric = workspace.rubric(rubrics[0])
    human, digest = _people(workspace, infos, labels, labels_file, suite_file, rubric)
    maps, reports, skipped = {}, {}, {}
    for cat in (c.id for c in rubric.categories):
        pairs = {}
        for cid, result in scores.items():
            given = human.get(cid)
            ai = next((c.ai_score for c in result.category_scores if c.category == cat), None)
            if given is not None and cat in given.categories and ai is not None:
                pairs[cid] = (ai, given.categories[cat])
        if len(pairs) < max(min_labels, folds):
            skipped[cat] = f"{len(pairs)} labelled cases (at least {max(min_labels, folds)})"
            continue
        maps[cat] = fit_category([pairs[c] for c in sorted(pairs)])
        reports[cat] = cross_validate(pairs, folds, rubric.bands, seed)
    if not maps:
        raise UsageError(f"no category has enough labelled cases judged by {model!r}: "
                         + "; ".join(f"{c}: {w}" for c, w in skipped.items()),
                         fix="label more cases (`judge review RUN --next 30`)")
    cal = Calibration(judge=model, rubric=rubric.id, scale=rubric_scale(rubric),
                      categories=maps, cross_validation=reports, labels_digest=digest,
                      runs=tuple(i.id for i in infos))
    return CalibrateReport(path=_write(workspace, cal, out), calibration=cal, skipped=skipped)


def _write(workspace: Workspace, cal: Calibration, out: Path | None) -> Path:
    """Write ``cal`` (sealed) to ``out``, default ``calibrations/<rubric>.<judge>.json``."""
    slug = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in cal.judge)
    target = out or workspace.root / "calibrations" / f"{cal.rubric}.{slug}.json"
    _check_target(target, "--out" if out else "the calibration file")
    try:
        write_atomic(target, calibration_text(cal, workspace.sealer))
    except OSError as exc:
        raise UsageError(f"cannot write the calibration {target}: {exc.strerror or exc}",
                         fix="pass --out FILE in a folder you can write to") from None
    return target


def _check_target(path: Path, flag: str) -> None:
    """UsageError when the calibration's file would replace a folder or a special file."""
    if (path.exists() or path.is_symlink()) and not path.is_file():
        raise UsageError(f"{flag}: {path} is a folder or a special file, not a file to write",
                         fix="pass --out FILE: the path of the calibration file to write")


def fold_summary(report: FoldReport) -> str:
    """``MAD 14.2 -> 5.1, band 40% -> 80% (held out, 5 folds, 30 cases)``."""
    b, a = report.before, report.after

    def pct(v: float | None) -> str:
        return "—" if v is None else f"{v:.0%}"

    def num(v: float | None) -> str:
        return "—" if v is None else f"{v:.1f}"

    return (f"MAD {num(b.mean_abs_diff)} -> {num(a.mean_abs_diff)}, band "
            f"{pct(b.exact_band_agreement)} -> {pct(a.exact_band_agreement)} (held out, "
            f"{report.folds} folds, {report.cases} cases)")
