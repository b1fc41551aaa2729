"""Could a frozen typed model carry a cached turn? What it would change, and what it costs.

Issue 27 asks for typed models for cache entries and turns across cache, engine and replay.
A cached turn is valid today when it is a JSON object whose ``text`` is a string
(``judge.cache.entry.turns_ok``); the engine reads its other fields with ``.get``. This
builds the model such a turn would be (on ``judge.core.frozen.Frozen``, aliases for the
stored names) and checks three things on the shipped caches and on turns valid today:

- whether every shipped turn validates and dumps back to the same canonical bytes;
- which turns valid today it refuses or re-writes (a changed byte is a changed digest);
- what validating costs per turn against the ``.get`` the engine does now.

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

from judge.core.canonical import canonical_json
from judge.core.frozen import Frozen

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [ROOT / "examples" / "task-evaluation" / "local-smollm2.cache.jsonl",
           ROOT / "examples" / "pytest" / "judge-cache.jsonl"]
VALID_TODAY = [  # each passes turns_ok, so each is a sound entry's turn now
    {"text": "x"},
    {"text": "x", "latencyMs": 3},
    {"text": "x", "promptTokens": 1.0},
    {"text": "x", "reasoning": "a field a later provider adapter may add"},
]


class CachedTurn(Frozen):
    """The turn as ``judge.llm.client.Turn.to_json`` writes it, every field but text optional."""

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
        model = CachedTurn.model_validate(turn)
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
    print(f"  CachedTurn.model_validate  {_median_us(lambda: CachedTurn.model_validate(turn)):.2f}")
    print(f"  dict .get of two fields    "
          f"{_median_us(lambda: (turn.get('text'), turn.get('promptTokens'))):.2f}")


if __name__ == "__main__":
    main()
