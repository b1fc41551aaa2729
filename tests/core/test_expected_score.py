"""``score_mode = "expected"``: the probability-weighted score over the allowed answers,
from OpenAI-style token log-probabilities; never a silent fallback."""

from __future__ import annotations

import json
import math

import pytest

from judge.core.formats.output_schema import expected_schema, output_schema
from judge.core.scoring.expected import SCALE, answer_values, expected_verdict
from judge.core.scoring.replies import parse_verdict
from judge.core.text.errors import OutputError
from judge.system.resources import load_rubric

TASK = load_rubric("task-evaluation")
RESEARCH = load_rubric("research-agent")


def _tokens(pieces: list[str], tops: dict[int, list[tuple[str, float]]]) -> list[dict]:
    """A reply as tokens; ``tops`` gives the alternatives (probabilities) at some positions."""
    return [{"token": p, "top": [[a, math.log(pr)] for a, pr in tops.get(i, [(p, 1.0)])]}
            for i, p in enumerate(pieces)]


def _task_reply(first_digits: list[str]) -> tuple[str, list[str]]:
    pieces = ["{"]
    for n, cat in enumerate(("agentPerformance", "taskOutcomeQuality", "processCompliance")):
        value = {"7": "75", "2": "25", "5": "50", "0": "0", "1": "100"}[first_digits[n]]
        pieces += [(", " if n else "") + f'"{cat}": {{"score": ', value[0], value[1:],
                   ', "rationale": "The review approved it after two fixes.", "evidence": []}']
    pieces.append("}")
    return "".join(pieces), pieces


def test_expected_score_is_the_probability_weighted_value() -> None:
    text, pieces = _task_reply(["7", "2", "5"])
    digit_at = [i + 1 for i, p in enumerate(pieces) if p.endswith('"score": ')]
    tops = {digit_at[0]: [("7", 0.5), ("5", 0.25), ("9", 0.15), ("1", 0.10)],  # 9: not allowed
            digit_at[1]: [("2", 1.0)],
            digit_at[2]: [("5", 0.4), ("7", 0.4), ("0", 0.2)]}
    verdict = parse_verdict(text, TASK, ())
    scores, dists = expected_verdict(verdict, text, _tokens(pieces, tops), TASK)
    # (0.5*75 + 0.25*50 + 0.10*100) / 0.85 = 70.588... -> 71
    assert scores["agentPerformance"].score == 71
    assert dists["agentPerformance"] == pytest.approx({"75": 0.5 / 0.85, "50": 0.25 / 0.85,
                                                       "100": 0.10 / 0.85})
    assert scores["taskOutcomeQuality"].score == 25
    assert scores["processCompliance"].score == 50  # 0.4*50 + 0.4*75 + 0.2*0 = 50
    assert scores["agentPerformance"].rationale == verdict["agentPerformance"].rationale


def test_levels_read_by_name_with_the_quote_inside_the_token() -> None:
    cats = [c.id for c in RESEARCH.categories]
    pieces, tops = ["{"], {}
    for n, cat in enumerate(cats):
        pieces += [(", " if n else "") + f'"{cat}": {{"level":', ' "go', 'od"',
                   ', "rationale": "Two of the claims are verified.", "evidence": []}']
        tops[len(pieces) - 3] = [(' "go', 0.6), (' "exc', 0.3), (' "p', 0.1)]
    pieces.append("}")
    text = "".join(pieces)
    scores, _ = expected_verdict(parse_verdict(text, RESEARCH, ()), text,
                                 _tokens(pieces, tops), RESEARCH)
    # 0.6*80 + 0.3*100 + 0.1*30 = 81
    assert {s.score for s in scores.values()} == {81}
    assert {s.level for s in scores.values()} == {"good"}


def test_no_logprobs_or_no_allowed_answer_is_an_error_not_a_fallback() -> None:
    text, pieces = _task_reply(["7", "7", "7"])
    verdict = parse_verdict(text, TASK, ())
    with pytest.raises(OutputError, match="no log-probabilities"):
        expected_verdict(verdict, text, None, TASK)
    digit_at = next(i + 1 for i, p in enumerate(pieces) if p.endswith('"score": '))
    with pytest.raises(OutputError, match="no allowed answer"):
        expected_verdict(verdict, text, _tokens(pieces, {digit_at: [("9", 1.0)]}), TASK)
    with pytest.raises(OutputError, match="do not cover"):
        expected_verdict(verdict, text, _tokens(pieces[:3], {}), TASK)


def test_expected_schema_puts_the_answer_first_from_a_closed_set() -> None:
    schema = expected_schema(output_schema(TASK, ("a",)), SCALE)
    cat = schema["properties"]["agentPerformance"]
    assert list(cat["properties"]) == ["score", "rationale", "evidence"]
    assert cat["properties"]["score"]["enum"] == [0, 25, 50, 75, 100]
    assert cat["required"][0] == "score"
    levels = expected_schema(output_schema(RESEARCH, ("s1",)), SCALE)["properties"]
    assert next(iter(levels["completeness"]["properties"])) == "level"
    assert answer_values(RESEARCH) == {"excellent": 100, "good": 80, "acceptable": 60,
                                       "poor": 30, "failed": 0}
    # the direct schema is untouched (its cache keys are pinned)
    assert list(output_schema(TASK, ("a",))["properties"]["agentPerformance"]["properties"]) \
        == ["rationale", "evidence", "score"]
    json.dumps(schema)
