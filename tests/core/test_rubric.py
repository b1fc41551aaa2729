"""Rubric files: the shipped ones match the seeds; a broken one gives one clear error."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_judge

from judge.core.formats.evidence import DEFAULT_PROFILE
from judge.core.formats.rubric import DEFAULT_BANDS, parse_rubric, rubric_hash
from judge.core.scoring.exact import exact
from judge.core.text.errors import ConfigError, RubricError
from judge.system.resources import list_rubrics, load_rubric

ROOT = Path(__file__).resolve().parents[2]
TASK_PATH = ROOT / "rubrics" / "task-evaluation.yaml"
RESEARCH_PATH = ROOT / "rubrics" / "research-agent.yaml"
TASK_TEXT = TASK_PATH.read_text(encoding="utf-8")
RESEARCH_TEXT = RESEARCH_PATH.read_text(encoding="utf-8")
LEVELS = [("excellent", 1.0), ("good", 0.8), ("acceptable", 0.6), ("poor", 0.3), ("failed", 0.0)]


def _replace(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"fixture drifted: {old!r}"
    return text.replace(old, new)


# --- shipped rubrics ---------------------------------------------------------------------

def test_task_rubric_matches_seed_000() -> None:
    rub = load_rubric(TASK_PATH)
    assert rub.id == "task-evaluation" and rub.style == "scores"
    assert [(c.id, c.weight) for c in rub.categories] == [
        ("agentPerformance", 0.30), ("taskOutcomeQuality", 0.45), ("processCompliance", 0.25)]
    assert sum(exact(c.weight) for c in rub.categories) == 1
    assert (rub.blend.deterministic, rub.blend.ai) == (0.7, 0.3)
    assert all(rub.blend_for(c.id) == rub.blend for c in rub.categories)
    assert [(b.name, b.min, b.max) for b in rub.bands] == [
        ("failing", 0, 39), ("weak", 40, 59), ("acceptable", 60, 74), ("strong", 75, 89),
        ("excellent", 90, 100)]
    assert rub.bands == DEFAULT_BANDS
    assert rub.levels == ()
    assert rub.evidence == DEFAULT_PROFILE
    assert (rub.missing.deterministic, rub.missing.ai) == ("ai_only", "deterministic_only")
    assert rub.partial == "unscored"
    assert all(c.definition for c in rub.categories)


def test_research_rubric_matches_seed_003() -> None:
    rub = load_rubric(RESEARCH_PATH)
    assert rub.id == "research-agent" and rub.style == "levels"
    assert [(lv.name, lv.value) for lv in rub.levels] == LEVELS
    assert [(c.id, c.weight) for c in rub.categories] == [
        ("factual_accuracy", 0.30), ("completeness", 0.25), ("citation_accuracy", 0.15),
        ("source_quality", 0.10), ("tool_efficiency", 0.20)]
    assert sum(exact(c.weight) for c in rub.categories) == 1
    assert rub.pass_score == 70
    assert rub.partial == "renormalize"
    assert (rub.blend.deterministic, rub.blend.ai) == (0.0, 1.0)
    for cat in rub.categories:
        assert set(cat.anchors) == {name for name, _ in LEVELS}, cat.id
    assert rub.evidence.excerpt_limit == 500


def test_shipped_rubrics_are_found_by_id() -> None:
    found = list_rubrics()
    assert {"task-evaluation", "research-agent"} <= set(found)
    assert load_rubric("task-evaluation") == load_rubric(TASK_PATH)


def test_rubric_hash_is_stable_and_sensitive() -> None:
    a = parse_rubric(TASK_TEXT, "a.yaml")
    b = parse_rubric(TASK_TEXT, "b.yaml")
    assert rubric_hash(a) == rubric_hash(b)
    changed = parse_rubric(_replace(TASK_TEXT, "pass_score: 60", "pass_score: 61"), "c.yaml")
    assert rubric_hash(changed) != rubric_hash(a)
    # examples from labels: off by default (the hash as before the key existed), part of
    # the hash when set
    shown = parse_rubric(_replace(TASK_TEXT, "pass_score: 60",
                                  "pass_score: 60\nexamples: {count: 3}"), "d.yaml")
    assert shown.examples is not None and (shown.examples.folds, shown.examples.seed) == (5, 0)
    assert a.examples is None and rubric_hash(shown) != rubric_hash(a)
    assert "examples" not in a.model_dump(mode="json", exclude_none=True)


# --- broken rubrics ----------------------------------------------------------------------

Mutation = Callable[[], str]

BROKEN: dict[str, tuple[Mutation, str, str]] = {
    # name: (text, field the error must name, words the message must contain)
    "weights_0_9": (lambda: _replace(TASK_TEXT, "weight: 0.25", "weight: 0.15"),
                    "weight", "sum to 0.9"),
    "band_gap_60": (lambda: _replace(TASK_TEXT, "{name: acceptable, min: 60",
                                     "{name: acceptable, min: 61"),
                    "bands.acceptable", "gap"),
    "band_overlap": (lambda: _replace(TASK_TEXT, "{name: acceptable, min: 60",
                                      "{name: acceptable, min: 55"),
                     "bands.acceptable", "overlap"),
    "band_short": (lambda: _replace(TASK_TEXT, "{name: excellent, min: 90, max: 100}",
                                    "{name: excellent, min: 90, max: 99}"),
                   "bands", "0..100"),
    "unknown_key": (lambda: _replace(TASK_TEXT, "    weight: 0.45", "    wieght: 0.45"),
                    "wieght", "unknown key"),
    "unknown_top_key": (lambda: _replace(TASK_TEXT, "pass_score:", "pass_scroe:"),
                        "pass_scroe", "unknown key"),
    "invalid_yaml": (lambda: _replace(TASK_TEXT, "blend: {deterministic: 0.7, ai: 0.3}",
                                      "blend: {deterministic: 0.7, ai: 0.3"),
                     "line ", "invalid YAML"),
    "duplicate_category": (lambda: _replace(TASK_TEXT, "id: processCompliance",
                                            "id: agentPerformance"),
                           "categories", "appears twice"),
    "blend_sum": (lambda: _replace(TASK_TEXT, "blend: {deterministic: 0.7, ai: 0.3}",
                                   "blend: {deterministic: 0.7, ai: 0.4}"),
                  "blend", "sum to 1.1"),
    "levels_without_levels": (
        lambda: RESEARCH_TEXT.split("levels:\n", 1)[0]
        + "categories:" + RESEARCH_TEXT.split("\ncategories:", 1)[1],
        "levels", "needs its levels"),
    "anchor_unknown_level": (
        lambda: _replace(RESEARCH_TEXT, "      poor: Major aspects missing.",
                         "      terrible: Major aspects missing."),
        "anchors", "terrible"),
    "score_out_of_range": (lambda: _replace(TASK_TEXT, "pass_score: 60", "pass_score: 160"),
                           "pass_score", "100"),
    "bad_style": (lambda: _replace(TASK_TEXT, "style: scores", "style: grades"),
                  "style", "scores"),
    "examples_count_0": (lambda: _replace(TASK_TEXT, "pass_score: 60",
                                          "pass_score: 60\nexamples: {count: 0}"),
                         "examples.count", "1"),
    "examples_unknown_key": (lambda: _replace(TASK_TEXT, "pass_score: 60",
                                              "pass_score: 60\nexamples: {count: 2, fold: 3}"),
                             "fold", "unknown key"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_rubric_gives_one_clear_error(name: str) -> None:
    make, field, words = BROKEN[name]
    source = f"rubrics/{name}.yaml"
    with pytest.raises(RubricError) as info:
        parse_rubric(make(), source)
    err = info.value
    text = str(err)
    assert isinstance(err, ConfigError) and err.exit_code == 2
    assert err.file == source
    assert err.where and field in err.where, (err.where, field)
    assert words in err.message, err.message
    assert err.fix
    assert text.startswith(f"{source}: {err.where}: ")
    # one problem, one line of what and one line of how: no pydantic dump
    assert text.count("fix:") == 1
    assert len(text.splitlines()) == 2, text
    assert "pydantic" not in text and "Value error," not in text


def test_typo_suggests_the_right_key() -> None:
    with pytest.raises(RubricError) as info:
        parse_rubric(_replace(TASK_TEXT, "    weight: 0.45", "    wieght: 0.45"), "t.yaml")
    assert info.value.fix is not None and "'weight'" in info.value.fix


def test_non_mapping_rubric() -> None:
    for text in ("", "- a\n- b\n", "just a string"):
        with pytest.raises(RubricError) as info:
            parse_rubric(text, "odd.yaml")
        assert info.value.file == "odd.yaml" and info.value.fix


def test_levels_outside_a_levels_rubric() -> None:
    text = _replace(TASK_TEXT, "pass_score: 60",
                    "pass_score: 60\nlevels:\n  - {name: ok, value: 1}")
    with pytest.raises(RubricError) as info:
        parse_rubric(text, "x.yaml")
    assert info.value.where == "levels"


def test_missing_rubric_file() -> None:
    with pytest.raises(RubricError, match="no rubric file"):
        load_rubric("does/not/exist.yaml")
    with pytest.raises(RubricError, match="unknown rubric 'nope'") as info:
        load_rubric("nope")
    assert info.value.fix is not None and "task-evaluation" in info.value.fix


# --- through the CLI ---------------------------------------------------------------------

def _judge(*args: str) -> subprocess.CompletedProcess[str]:
    return run_judge(list(args), ROOT)


def test_cli_validate_shipped_rubrics() -> None:
    paths = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "rubrics").glob("*.yaml"))
    assert len(paths) >= 2
    proc = _judge("rubric", "validate", *paths)
    assert proc.returncode == 0, proc.stderr
    for path in paths:
        assert path in proc.stdout
    assert proc.stderr == ""


@pytest.mark.parametrize("name", ["weights_0_9", "band_gap_60", "unknown_key", "invalid_yaml",
                                  "anchor_unknown_level"])
def test_cli_validate_broken(name: str, tmp_path: Path) -> None:
    make, field, words = BROKEN[name]
    path = tmp_path / f"broken-{name}.yaml"
    path.write_text(make(), encoding="utf-8")
    proc = _judge("rubric", "validate", str(path))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert str(path) in proc.stderr
    assert field in proc.stderr and words in proc.stderr
    assert "fix:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_validate_mixed_reports_each_and_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BROKEN["blend_sum"][0](), encoding="utf-8")
    proc = _judge("rubric", "validate", str(TASK_PATH), str(bad), str(RESEARCH_PATH))
    assert proc.returncode == 2
    assert str(TASK_PATH) in proc.stdout and str(RESEARCH_PATH) in proc.stdout
    assert str(bad) in proc.stderr and "blend" in proc.stderr
