"""Judged assertions: one case judged (or replayed) and asserted on, in three lines."""

from judge.pytest_plugin import assert_band, assert_passes, assert_score

REFUND_ANSWER = {
    "id": "refund-policy-answer",
    "input": "A customer asks whether an opened item can be refunded after 20 days.",
    "output": "Yes: opened items can be refunded within 30 days with the receipt.",
    "deterministic": {"agentPerformance": 88, "taskOutcomeQuality": 90, "processCompliance": 92},
    "evidence": {"documents": [{"key": "policies/refunds.md", "revision": 4,
                                "title": "Refund policy",
                                "excerpt": "Opened items: refund within 30 days, receipt needed."}]},
}


def test_refund_answer_passes(judge_eval):
    result = judge_eval(REFUND_ANSWER, rubric="task-evaluation")
    assert_passes(result)


def test_refund_answer_is_strong_enough(judge_eval):
    result = judge_eval(REFUND_ANSWER, rubric="task-evaluation")
    assert_score(result, at_least=70)
    assert_band(result, at_least="acceptable")
