"""Could a frozen typed model carry a cached turn? What it would change, and what it costs.

Issue 27 asks for typed models for cache entries and turns across cache, engine and replay.
A cached turn is valid today when it is a JSON object whose ``text`` is a string
(``judge.cache.entry.turns_ok``); the engine reads its other fields with ``.get``. This
builds the model such a turn would be (on ``judge.core.text.frozen.Frozen``, aliases for the
stored names) and checks three things on the shipped caches and on turns valid today:

- whether every shipped turn validates and dumps back to the same canonical bytes;
- which turns valid today it refuses or re-writes (a changed byte is a changed digest);
- what validating costs per turn against the ``.get`` the engine does now.

It also times the typed view the cache reads turns through now
(:class:`judge.core.formats.turns.CachedTurn`, no validation) and the totals over it, against the
``.get`` path it replaced.

Rerun (a few seconds): ``PYTHONPATH=. .venv/bin/python bench/cached_turn_model.py``
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from judge.core.formats.turns import CachedTurn, turn_totals
from judge.core.text.canonical import canonical_json
from judge.core.text.frozen import Frozen

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [ROOT / "examples" / "task-evaluation" / "local-smollm2.cache.jsonl",
           ROOT / "examples" / "pytest" / "judge-cache.jsonl"]
VALID_TODAY = [  # each passes turns_ok, so each is a sound entry's turn now
    {"text": "x"},
    {"text": "x", "latencyMs": 3},
    {"text": "x", "promptTokens": 1.0},
    {"text": "x", "reasoning": "a field a later provider adapter may add"},
]


class FrozenTurn(Frozen):
    """The turn as ``turn_json`` (core.formats.turns) writes it: every field but text optional."""

    text: str
    finish_reason: str | None = Field(None, alias="finishReason")
    model_reported: str | None = Field(None, alias="modelReported")
    prompt_tokens: int | None = Field(None, alias="promptTokens")
    completion_tokens: int | None = Field(None, alias="completionTokens")
    cost_usd: float | None = Field(None, alias="costUsd")
    latency_ms: float | None = Field(None, alias="latencyMs")
    output_mode: str | None = Field(None, alias="outputMode")
    system_fingerprint: str | None = Field(None, alias="systemFingerprint")
    cached_tokens: int | None = Field(None, alias="cachedTokens")
    cache_write_tokens: int | None = Field(None, alias="cacheWriteTokens")
    logprobs: tuple[dict[str, Any], ...] | None = None


def _round_trip(turn: dict[str, Any]) -> str:
    try:
        model = FrozenTurn.model_validate(turn)
    except ValidationError as exc:
        return f"refused ({exc.errors()[0]['type']})"
    back = canonical_json(model.model_dump(mode="json", exclude_unset=True))
    return "same bytes" if back == canonical_json(turn) else f"re-written as {back}"


def _median_us(call: Callable[[], object], n: int = 20_000, rounds: int = 7) -> float:
    runs = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            call()
        runs.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(runs)


def main() -> None:
    turns = [t for path in SHIPPED for line in path.read_text().splitlines()
             for t in json.loads(line)["turns"]]
    outcomes = [_round_trip(t) for t in turns]
    same = outcomes.count("same bytes")
    print(f"shipped turns: {len(turns)}, validate and dump to the same bytes: {same}")
    for turn in VALID_TODAY:
        print(f"valid today {canonical_json(turn)}: {_round_trip(turn)}")
    turn = turns[0]
    print(f"load average {os.getloadavg()[0]:.1f}; medians of 7 x 20,000, microseconds per turn:")
    print(f"  FrozenTurn.model_validate  {_median_us(lambda: FrozenTurn.model_validate(turn)):.2f}")
    print(f"  dict .get of two fields    "
          f"{_median_us(lambda: (turn.get('text'), turn.get('promptTokens'))):.2f}")

    def view_fields() -> object:
        view = CachedTurn(turn)
        return view.text, view.prompt_tokens

    print(f"  CachedTurn view, two fields {_median_us(view_fields):.2f}")
    print(f"  totals over the dict (before) {_median_us(lambda: _dict_totals([turn])):.2f}")
    print(f"  turn_totals over the view    "
          f"{_median_us(lambda: turn_totals([CachedTurn(turn)])):.2f}")


def _dict_totals(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """What judge.core.formats.turns.turn_totals and cache_totals did over plain dicts (before)."""
    def total(name: str, digits: int | None = None) -> Any:
        values = [t.get(name) for t in turns]
        if not values or any(v is None for v in values):
            return None
        summed = sum(v for v in values if v is not None)
        return int(summed) if digits is None else round(float(summed), digits)

    last = turns[-1]
    out: dict[str, Any] = {
        "repairTurns": len(turns) - 1, "outputMode": last.get("outputMode"),
        "promptTokens": total("promptTokens"), "completionTokens": total("completionTokens"),
        "costUsd": total("costUsd", 10), "latencyMs": total("latencyMs", 3),
        "finishReason": last.get("finishReason"), "modelReported": last.get("modelReported")}
    for name in ("cachedTokens", "cacheWriteTokens"):
        found = [t.get(name) for t in turns]
        known = [v for v in found if isinstance(v, int)]
        out[name] = sum(known) if len(known) == len(found) else None
    return out


if __name__ == "__main__":
    main()
