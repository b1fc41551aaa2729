"""Cached turns: a typed view that never re-writes the stored object, and exact totals."""

from __future__ import annotations

from typing import Any

from judge.core.formats.turns import CachedTurn, TurnTotals, turn_json, turn_totals
from judge.core.text.canonical import canonical_json


def _turn(**fields: Any) -> CachedTurn:
    return CachedTurn({"text": "{}", **fields})


def test_the_written_form_has_optional_fields_only_when_sent() -> None:
    plain = turn_json(text="{}", finish_reason="stop", model_reported="m", prompt_tokens=3,
                      completion_tokens=2, cost_usd=None, latency_ms=1.5, output_mode="prompt")
    assert set(plain.data) == {"text", "finishReason", "modelReported", "promptTokens",
                               "completionTokens", "costUsd", "latencyMs", "outputMode"}
    full = turn_json(text="{}", finish_reason="stop", model_reported="m", prompt_tokens=3,
                     completion_tokens=2, cost_usd=0.25, latency_ms=1.5, output_mode="prompt",
                     system_fingerprint="fp_1", cached_tokens=1, cache_write_tokens=0,
                     logprobs=({"token": "a", "top": []},))
    assert (full.system_fingerprint, full.cached_tokens, full.cache_write_tokens) == (
        "fp_1", 1, 0)
    assert full.logprobs == [{"token": "a", "top": []}]


def test_the_view_keeps_what_is_stored_byte_for_byte() -> None:
    # Valid today, and each would be re-written or refused by a frozen model.
    for stored in ({"text": "x", "latencyMs": 3}, {"text": "x", "promptTokens": 1.0},
                   {"text": "x", "reasoning": "a field a later adapter may add"}):
        view = CachedTurn(stored)
        assert view.text == "x" and canonical_json(view.data) == canonical_json(stored)


def test_a_field_of_the_wrong_type_reads_as_unknown() -> None:
    odd = _turn(promptTokens="12", costUsd=True, finishReason=3, cachedTokens=1.0)
    assert (odd.prompt_tokens, odd.cost_usd, odd.finish_reason, odd.cached_tokens) == (
        None, None, None, None)


def test_totals_sum_every_turn_and_take_the_last_ones_words() -> None:
    first = _turn(promptTokens=100, completionTokens=10, costUsd=0.1, latencyMs=1.25,
                  finishReason="length", modelReported="a", cachedTokens=50)
    repair = _turn(promptTokens=150.0, completionTokens=20, costUsd=0.2, latencyMs=2.5,
                   finishReason="stop", modelReported="b", outputMode="json_object",
                   cachedTokens=100, systemFingerprint="fp")
    assert turn_totals([first, repair]) == TurnTotals(
        repair_turns=1, output_mode="json_object", prompt_tokens=250, completion_tokens=30,
        cost_usd=0.3, latency_ms=3.75, finish_reason="stop", model_reported="b",
        system_fingerprint="fp", cached_tokens=150, cache_write_tokens=None)


def test_a_part_one_turn_lacks_is_unknown_in_the_total_never_zero() -> None:
    totals = turn_totals([_turn(costUsd=0.1, promptTokens=1), _turn(promptTokens=2)])
    assert totals.cost_usd is None and totals.prompt_tokens == 3
    assert turn_totals([]) == TurnTotals()
