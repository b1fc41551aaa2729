"""The calibration core: the isotonic fit matches scikit-learn, the table is monotone and
exact, cross-validation never scores a case on a map fitted with it, the core applies the
map before the blend, and a rubric without a calibration hashes as before."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest
from sklearn.isotonic import IsotonicRegression

from judge.core.formats.models import AdvisoryScore
from judge.core.formats.rubric import rubric_hash
from judge.core.scoring.calibration import (
    Calibration,
    CalibrationError,
    CategoryMap,
    attach_calibration,
    cross_validate,
    fit_category,
    fold_of,
    isotonic_points,
    parse_calibration,
    rubric_scale,
    table_from_points,
)
from judge.core.scoring.scoring import compute_final_score, score_case
from judge.system.resources import load_rubric


def _pairs(seed: int, n: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x = rng.randint(0, 100)
        out.append((x, min(100, max(0, 2 * x - 40 + rng.randint(-25, 25)))))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_isotonic_fit_matches_sklearn(seed: int) -> None:
    pairs = _pairs(seed, 35)
    model = IsotonicRegression(out_of_bounds="clip").fit([x for x, _ in pairs],
                                                         [y for _, y in pairs])
    points = isotonic_points(pairs)
    for x, value in points:
        assert float(value) == pytest.approx(float(model.predict([x])[0]), abs=1e-9)
    table = table_from_points(points)
    expected = model.predict(list(range(101)))
    for ai in range(101):
        # half up on the exact value; sklearn's float is within rounding of it
        assert abs(table[ai] - expected[ai]) <= 0.5 + 1e-9
    assert all(table[i] <= table[i + 1] for i in range(100))


def test_pav_pools_violators_exactly() -> None:
    points = isotonic_points([(10, 50), (20, 30), (30, 40), (40, 90)])
    assert points == [(10, Fraction(40)), (20, Fraction(40)), (30, Fraction(40)),
                      (40, Fraction(90))]
    table = table_from_points(points)
    assert table[0] == 40 and table[35] == 65 and table[100] == 90


def test_cross_validation_holds_every_case_out_once() -> None:
    pairs = {f"c{i}": (40 + (i * 3) % 31, min(100, ((i * 3) % 31) * 100 // 30))
             for i in range(30)}
    rubric = load_rubric("task-evaluation")
    report = cross_validate(pairs, 5, rubric.bands, seed=4)
    assert report.cases == 30
    assert report.before.mean_abs_diff is not None and report.after.mean_abs_diff is not None
    assert report.after.mean_abs_diff < report.before.mean_abs_diff
    # folds depend on the id and the seed only
    assert [fold_of(c, 5, 4) for c in sorted(pairs)] == \
        [fold_of(c, 5, 4) for c in sorted(pairs, reverse=True)][::-1]
    with pytest.raises(ValueError):
        cross_validate(pairs, 1, rubric.bands)


def _calibration(**changes: object) -> Calibration:
    rubric = load_rubric("task-evaluation")
    table = tuple(min(100, max(0, (ai - 40) * 100 // 30)) for ai in range(101))
    data: dict[str, object] = {
        "judge": "fake", "rubric": rubric.id, "scale": rubric_scale(rubric),
        "categories": {"taskOutcomeQuality": CategoryMap(table=table, labels=12)}}
    data.update(changes)
    return Calibration.model_validate(data)


def test_the_core_applies_the_map_before_the_blend_and_keeps_the_judges_score() -> None:
    rubric = load_rubric("task-evaluation")
    cal = _calibration()
    calibrated = attach_calibration(rubric, cal, "<test>")
    advisory = {c.id: AdvisoryScore(score=55) for c in rubric.categories}
    det = {c.id: 80 for c in rubric.categories}
    plain = score_case(rubric, det, advisory)
    mapped = score_case(calibrated, det, advisory)
    by = {c.category: c for c in mapped.category_scores}
    assert by["taskOutcomeQuality"].ai_score == 55  # stored as the judge gave it
    assert by["taskOutcomeQuality"].final_score == compute_final_score(80, 50)
    assert by["agentPerformance"].final_score == compute_final_score(80, 55)  # no map
    assert plain.category_scores != mapped.category_scores
    # the rubric's hash names the calibration; without one it is the file's as before
    assert rubric_hash(calibrated) != rubric_hash(rubric)
    assert "calibration" not in json.dumps(rubric.model_dump(mode="json", exclude={
        "calibration"}))
    assert rubric_hash(rubric) == rubric_hash(rubric.model_copy())
    assert rubric_hash(calibrated.model_copy()) == rubric_hash(calibrated)


def test_refusals_name_the_reason() -> None:
    rubric = load_rubric("task-evaluation")
    with pytest.raises(CalibrationError, match="fitted on rubric 'other'"):
        attach_calibration(rubric, _calibration(rubric="other"), "c.json")
    with pytest.raises(CalibrationError, match="another scale"):
        attach_calibration(rubric, _calibration(scale={"style": "levels"}), "c.json")
    bad = _calibration().model_dump(mode="json")
    bad["categories"]["taskOutcomeQuality"]["table"][50] = 0
    with pytest.raises(CalibrationError, match="falls at AI score 50") as err:
        parse_calibration(json.dumps(bad), "c.json")
    assert err.value.file == "c.json" and err.value.where == "categories.taskOutcomeQuality.table"
    with pytest.raises(CalibrationError):
        parse_calibration("{", "c.json")
    assert fit_category([(50, 60)]).table == (60,) * 101
