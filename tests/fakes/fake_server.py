"""A fake OpenAI-compatible model server on loopback, for tests and benchmarks.

It answers ``POST /v1/chat/completions`` (and ``/chat/completions``) with a normal
``chat.completion`` object whose ``message.content`` is a JSON document valid against the
JSON schema the request carries, either OpenAI style::

    "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": {...}}}

or llama.cpp style::

    "response_format": {"type": "json_object", "schema": {...}}

With no schema it answers ``{"verdict": "ok"}``.

Determinism. The content is a function of (seed, model, messages, response_format) only:
the same request gives the same bytes every time. Integers spread over the schema's range,
so different requests get different scores. Model-name knobs, for judge-agreement tests:

- ``fake-judge+15``: add 15 to every integer, clamped to the schema's bounds. The suffix is
  left out of the seed, so ``fake-judge+15`` is exactly ``fake-judge`` shifted by 15.
- ``fake-judge~40-70``: squeeze every integer of a 0..100 range into 40..70 (linearly,
  half up): a judge with a known monotone bias, for calibration tests. Left out of the
  seed too, so it is ``fake-judge`` compressed.
- any name containing ``random``: a request counter joins the seed, so answers vary.
- ``fake-judge~8``: a judge of known noise. Each integer is a latent verdict (drawn from
  the prompt alone, as without the knob) plus Gaussian noise of standard deviation 8,
  rounded and clamped, drawn from the *request's* ``seed`` and the prompt: the same
  request gives the same bytes, another seed another draw (:func:`noisy_integer`). The
  knob is left out of the latent seed, so ``fake-judge~8+-10`` is its shifted twin: the
  same latent verdicts 10 points lower (a real drop), with noise of the same spread.

Faults. Each attempt draws from (seed, request hash, attempt number for that request hash):
with probability ``fault_rate`` it gets one of the enabled kinds, uniformly, so a retry of
the same request may succeed, and the sequence repeats after ``POST /_reset``. The kinds:

- ``429``: status 429 with ``Retry-After`` (seconds, fractions allowed) and ``retry-after-ms``
- ``500``, ``503``: that status with an OpenAI-style body ``{"error": {"message", "type", "code"}}``
- ``hang``: waits ``hang_seconds`` before answering (other requests are not blocked)
- ``reset``: the connection is reset (TCP RST) before any response byte
- ``truncated``: status 200, ``Content-Length`` of the whole body, half of it sent, then close
- ``notjson``: status 200, ``<html>oops</html>`` as ``text/html``
- ``badschema``: a completion whose content violates the schema (the first bounded number
  pushed 50 past its bound, e.g. a score of 150; else an enum value or a required property)
- ``length``: a completion whose content stops mid-JSON, with ``finish_reason`` ``"length"``
- ``badcite``: schema-shaped content, except that arrays whose items are an ``enum``
  (citations) hold ``"nonexistent-99"``; a schema without such an array gets ``badschema``

``fail_first N`` makes the first N attempts of every distinct request fail with 500
(counted as fault ``fail_first``) before the random faults apply.

Other endpoints: ``GET /_stats`` (``by_status`` counts status lines sent, so a reset
counts only under ``faults``), ``POST /_reset`` (stats and attempt counters),
``GET|POST /_control`` (read or change the options below at run time),
``GET /v1/models``, ``GET /health``.

Options (CLI flag / keyword / control key): ``latency_ms``, ``jitter_ms`` (uniform +-),
``seed``, ``fault_rate`` (0..1), ``faults`` (comma list or list), ``retry_after``,
``hang_seconds``, ``fail_first``, ``bias``, ``drift``, ``ask``, ``prompt_cache_block``,
``prompt_cache_min``.

Prompt cache: ``prompt_cache_block N`` (N > 0; 0, the default, is off) makes the server
report ``usage.prompt_tokens_details.cached_tokens`` the way OpenAI does: the longest prefix
of this request's prompt that an earlier request (any attempt, any case) already sent,
counted in N-token blocks (OpenAI: 128), and 0 below ``prompt_cache_min`` tokens (OpenAI:
1024, the default). Tokens are counted as everywhere here (4 characters each) over the
messages' texts in order, so a prefix is shared only while the bytes agree. The model
name is part of the prefix; in ``json_schema`` mode the schema is too, ahead of the
messages and counted in ``prompt_tokens`` (OpenAI documents the structured-output schema
as a prefix of the system message), so two requests with different schemas share nothing;
a ``json_object`` schema constrains decoding only (as in llama.cpp and vLLM) and is not
part of it. ``GET /_stats`` adds ``cached_tokens``; ``distinct_schemas`` counts the distinct
reply schemas asked for (one per rubric under ``stable_schema``).

Drift: ``drift N`` (N != 0) stands for another model served under the same name: every
answer is drawn afresh (N joins the content seed) and ``system_fingerprint`` changes from
``fp_fake_<seed>`` to ``fp_fake_<seed>_d<N>``. Batches: OpenAI-style files and batches
endpoints, in ``fake_batch.py`` beside this file.

Run it::

    python tests/fakes/fake_server.py --port 0 --latency-ms 200 --seed 7 --fault-rate 0.3
        --faults 429,500,hang --ready-file /tmp/fake.url     (one line)

Once bound it writes the base URL (no newline) to ``--ready-file``, then prints two lines:
``READY http://127.0.0.1:PORT`` (the base URL) and ``api-base http://127.0.0.1:PORT/v1 ...``,
the URL ``judge run --api-base`` takes; SIGINT or SIGTERM stop it. Or in-process::

    handle = start_in_thread(seed=7, latency_ms=5)
    ...  # OpenAI clients use handle.openai_base_url (``.../v1``)
    handle.stop()
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import hashlib
import json
import math
import os
import random
import re
import signal
import socket
import struct
import sys
import threading
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

if str(Path(__file__).resolve().parent) not in sys.path:  # tests/fakes/ is not a package
    sys.path.append(str(Path(__file__).resolve().parent))
from fake_batch import BatchEndpoints

__all__ = [
    "BOGUS_CITATION",
    "BOGUS_ENUM_VALUE",
    "CREATED",
    "DEFAULT_SCHEMA",
    "FAULT_KINDS",
    "FakeModelServer",
    "FakeServerHandle",
    "SchemaError",
    "ServerOptions",
    "generate_instance",
    "inject_bogus_citation",
    "main",
    "noisy_integer",
    "start_in_thread",
    "violate_schema",
]

HOST = "127.0.0.1"
CREATED = 1_700_000_000
"""The fixed ``created`` timestamp of every completion (determinism)."""
FAULT_KINDS: tuple[str, ...] = (
    "429", "500", "503", "hang", "reset", "truncated", "notjson", "badschema", "length",
    "badcite",
)
BOGUS_CITATION = "nonexistent-99"
"""The id the ``badcite`` fault puts into citation arrays."""
BOGUS_ENUM_VALUE = "not-in-enum"
"""What ``badschema`` puts in place of an enum or const string."""
DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"const": "ok"}},
    "required": ["verdict"],
}
"""Used when a request carries no schema: the answer is ``{"verdict": "ok"}``."""
MODELS: tuple[str, ...] = ("fake-judge",)
_COMPLETION_PATHS = ("/v1/chat/completions", "/chat/completions")

_WORDS = (
    "the", "answer", "covers", "each", "point", "with", "clear", "evidence", "but", "misses",
    "one", "edge", "case", "and", "cites", "tests", "claims", "are", "mostly", "supported",
    "by", "logs", "output", "is", "concise", "correct", "partial", "reasoning", "sound",
)
_FORMATS = {
    "date": "2023-11-14",
    "date-time": "2023-11-14T22:13:20Z",
    "time": "22:13:20Z",
    "email": "judge@example.com",
    "uri": "https://example.com/fake",
    "uuid": "00000000-0000-4000-8000-000000000000",
}
_BIAS_RE = re.compile(r"\+(-?\d+)")
_NOISE_RE = re.compile(r"~(\d+(?:\.\d+)?)")
_SQUEEZE_RE = re.compile(r"~(\d+)-(\d+)")
_MAX_DEPTH = 32
_FULL_OBJECT_DEPTH = 8
_DROP_GRACE_S = 5.0
_PREFIXES_KEPT = 1_000_000
_BODIES_KEPT = 1_000
_T = TypeVar("_T")


class SchemaError(ValueError):
    """The request's schema cannot be instantiated (bad ``$ref``, cycle, too deep)."""


# --------------------------------------------------------------------------- options


_OPTION_TYPES: dict[str, Callable[[Any], Any]] = {
    "latency_ms": float,
    "jitter_ms": float,
    "seed": int,
    "fault_rate": float,
    "retry_after": float,
    "hang_seconds": float,
    "fail_first": int,
    "bias": int,
    "drift": int,
    "ask": int,
    "prompt_cache_block": int,
    "prompt_cache_min": int,
}


@dataclass(frozen=True)
class ServerOptions:
    """Run-time knobs; change them with :meth:`updated` (validated, returns a new object)."""

    latency_ms: float = 0.0
    """Base delay before every completion answer."""
    jitter_ms: float = 0.0
    """Uniform jitter added to the delay, in ``[-jitter_ms, +jitter_ms]``."""
    seed: int = 0
    """Seed of the content and of the fault draws."""
    fault_rate: float = 0.0
    """Probability that an attempt gets a fault."""
    faults: tuple[str, ...] = FAULT_KINDS
    """Enabled fault kinds, drawn uniformly."""
    retry_after: float = 1.0
    """Seconds put in ``Retry-After`` of a 429."""
    hang_seconds: float = 30.0
    """How long a ``hang`` fault waits before answering."""
    fail_first: int = 0
    """The first N attempts of every distinct request fail with 500."""
    bias: int = 0
    """Added to every integer (clamped), on top of a ``+N`` in the model name."""
    drift: int = 0
    """Non-zero: another model behind the same name (answers re-drawn, new fingerprint)."""
    ask: int = 0
    """Non-zero joins the noise draw of a ``~S`` judge: the same request asked again draws
    new noise around the same latent verdict (a provider whose answers vary between asks
    even at one seed), where 0 repeats the request's bytes."""
    prompt_cache_block: int = 0
    """Non-zero: report cached prompt tokens, a shared prefix counted in blocks of this many."""
    prompt_cache_min: int = 1024
    """Below this many tokens of shared prefix, nothing is reported cached."""

    def updated(self, **changes: Any) -> ServerOptions:
        """A copy with ``changes`` coerced and validated; ``ValueError`` if one is bad."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown option(s): {', '.join(unknown)}")
        coerced = {name: _coerce_option(name, value) for name, value in changes.items()}
        result = replace(self, **coerced)
        result.check()
        return result

    def check(self) -> None:
        """Raise ``ValueError`` when a value is out of range."""
        for name in ("latency_ms", "jitter_ms", "retry_after", "hang_seconds", "fail_first",
                     "prompt_cache_block", "prompt_cache_min"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError("fault_rate must be within 0..1")
        bad = [kind for kind in self.faults if kind not in FAULT_KINDS]
        if bad:
            raise ValueError(f"unknown fault kind(s): {', '.join(bad)}; known: "
                             f"{', '.join(FAULT_KINDS)}")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        data = asdict(self)
        data["faults"] = list(self.faults)
        return data


def _coerce_option(name: str, value: Any) -> Any:
    if name == "faults":
        return _parse_faults(value)
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{name} must be a number")
    convert = _OPTION_TYPES[name]
    try:
        converted = convert(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number, got {value!r}") from exc
    if convert is int and isinstance(value, float) and value != converted:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return converted


def _parse_faults(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ValueError("faults must be a comma-separated string or a list")
    return tuple(str(item).strip() for item in items if str(item).strip())


# --------------------------------------------------------------------- schema instances


def generate_instance(schema: dict[str, Any], rng: random.Random, *, bias: int = 0,
                      squeeze: tuple[int, int] | None = None) -> Any:
    """A JSON value valid against ``schema``, drawn from ``rng``; integers shifted by ``bias``.

    Supports ``type`` (object, array, string, integer, number, boolean, null, or a list of
    them), ``enum``, ``const``, ``anyOf``/``oneOf`` (first branch), ``allOf`` (merged),
    ``$ref`` to ``#/...`` pointers, string ``minLength``/``maxLength``/``format``, number
    bounds, ``minItems``/``maxItems``/``uniqueItems``. ``pattern`` is not honoured.
    """
    return _Instantiator(schema, rng, bias, squeeze=squeeze).value(schema, 0)


def noisy_integer(latent: int, low: int, high: int, noise: random.Random, sd: float) -> int:
    """``latent`` plus one Gaussian draw of ``sd`` from ``noise``, rounded, within bounds.

    The one definition of the noisy judge: the server answers with it and ``bench/noise.py``
    draws its in-process trials with it.
    """
    return min(max(round(latent + noise.gauss(0.0, sd)), low), high)


def violate_schema(schema: dict[str, Any], instance: Any) -> Any:
    """A copy of the valid ``instance`` that ``schema`` rejects, when one can be made.

    The first bounded number in document order is pushed 50 past its bound (a score of
    150), else an enum value is replaced, else a required property is dropped, else the
    value gets the wrong type.
    """
    walker = _Instantiator(schema, random.Random(0), 0)
    changed, broken = walker.violate(schema, copy.deepcopy(instance), 0)
    if changed:
        return broken
    kind = walker.type_of(walker.resolve(schema))
    return 0 if kind == "string" else "not-a-" + kind


def inject_bogus_citation(schema: dict[str, Any], instance: Any) -> tuple[bool, Any]:
    """Put :data:`BOGUS_CITATION` into every array whose items are an ``enum``.

    Returns ``(changed, new_instance)``; ``changed`` is false when the schema has no such array.
    """
    walker = _Instantiator(schema, random.Random(0), 0)
    return walker.cite(schema, copy.deepcopy(instance), 0)


class _Instantiator:
    """Walks one root schema: generation, violation and citation tampering."""

    def __init__(self, root: dict[str, Any], rng: random.Random, bias: int,
                 noise: tuple[random.Random, float] | None = None,
                 squeeze: tuple[int, int] | None = None) -> None:
        self.root = root
        self.rng = rng
        self.bias = bias
        self.noise = noise
        self.squeeze = squeeze

    # -- resolution

    def resolve(self, schema: Any) -> dict[str, Any]:
        """Follow ``$ref``, take the first ``anyOf``/``oneOf`` branch, merge ``allOf``."""
        current: dict[str, Any] = schema if isinstance(schema, dict) else {}
        for _ in range(_MAX_DEPTH):
            if "$ref" in current:
                current = {**self._lookup(current["$ref"]), **_without(current, "$ref")}
            elif current.get("anyOf") or current.get("oneOf"):
                key = "anyOf" if current.get("anyOf") else "oneOf"
                current = {**_without(current, key), **_as_dict(current[key][0])}
            elif current.get("allOf"):
                current = self._merge_all_of(current)
            else:
                return current
        raise SchemaError("schema references nest too deep (a $ref cycle?)")

    def _lookup(self, ref: Any) -> dict[str, Any]:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaError(f"only local $ref ('#/...') is supported, got {ref!r}")
        node: Any = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            key = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or key not in node:
                raise SchemaError(f"$ref {ref!r} does not resolve")
            node = node[key]
        return _as_dict(node)

    def _merge_all_of(self, schema: dict[str, Any]) -> dict[str, Any]:
        merged = _without(schema, "allOf")
        for part in schema["allOf"]:
            sub = self.resolve(part)
            properties = {**merged.get("properties", {}), **sub.get("properties", {})}
            required = list(dict.fromkeys([*merged.get("required", []),
                                           *sub.get("required", [])]))
            merged = {**merged, **sub}
            if properties:
                merged["properties"] = properties
            if required:
                merged["required"] = required
        return merged

    @staticmethod
    def type_of(schema: dict[str, Any]) -> str:
        """The type to produce: the declared one (first non-null of a list), else a guess."""
        declared = schema.get("type")
        if isinstance(declared, list):
            concrete = [t for t in declared if t != "null"]
            declared = concrete[0] if concrete else "null"
        if isinstance(declared, str):
            return declared
        if "properties" in schema or "required" in schema:
            return "object"
        if "items" in schema or "minItems" in schema:
            return "array"
        if "minimum" in schema or "maximum" in schema:
            return "number"
        return "string"

    # -- generation

    def value(self, schema: Any, depth: int) -> Any:
        """A valid value for ``schema``."""
        if depth > _MAX_DEPTH:
            raise SchemaError("schema nests too deep to instantiate")
        resolved = self.resolve(schema)
        if "const" in resolved:
            return copy.deepcopy(resolved["const"])
        if resolved.get("enum"):
            return copy.deepcopy(self.rng.choice(resolved["enum"]))
        makers: dict[str, Callable[[dict[str, Any], int], Any]] = {
            "object": self._object,
            "array": self._array,
            "string": lambda s, _d: self._string(s),
            "integer": lambda s, _d: self._integer(s),
            "number": lambda s, _d: self._number(s),
            "boolean": lambda _s, _d: self.rng.random() < 0.5,
            "null": lambda _s, _d: None,
        }
        kind = self.type_of(resolved)
        if kind not in makers:
            raise SchemaError(f"unsupported type {kind!r}")
        return makers[kind](resolved, depth)

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties", {})
        required: list[str] = list(schema.get("required", []))
        names = list(properties) if depth < _FULL_OBJECT_DEPTH else []
        names += [name for name in required if name not in names]
        return {name: self.value(properties.get(name, {}), depth + 1) for name in names}

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        items = self.resolve(schema.get("items", {}))
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", max(low, 1)))
        enum = items.get("enum") if "const" not in items else None
        count = min(max(low, 1 if enum else 0), high)
        if enum and count <= len(enum):
            return copy.deepcopy(self.rng.sample(list(enum), count))
        return [self.value(items, depth + 1) for _ in range(count)]

    def _string(self, schema: dict[str, Any]) -> str:
        low = int(schema.get("minLength", 0))
        high = schema.get("maxLength")
        text = _FORMATS.get(str(schema.get("format")), "") or self._sentence()
        while len(text) < low:
            text += " " + self.rng.choice(_WORDS)
        return text if high is None else _clip(text, low, int(high))

    def _sentence(self) -> str:
        words = [self.rng.choice(_WORDS) for _ in range(self.rng.randint(4, 9))]
        return " ".join(words).capitalize() + "."

    def _integer(self, schema: dict[str, Any]) -> int:
        low, high = _integer_bounds(schema)
        drawn = self.rng.randint(low, high)
        if self.noise is not None:
            value = noisy_integer(drawn + self.bias, low, high, *self.noise)
        else:
            value = min(max(drawn + self.bias, low), high)
        if self.squeeze is not None and (low, high) == (0, 100):
            lo, hi = self.squeeze
            value = lo + (2 * value * (hi - lo) + 100) // 200
        return value

    def _number(self, schema: dict[str, Any]) -> float:
        low, high = _number_bounds(schema)
        return min(max(round(self.rng.uniform(low, high), 2), low), high)

    # -- violation (badschema)

    def violate(self, schema: Any, value: Any, depth: int) -> tuple[bool, Any]:
        """``(True, broken)`` when some part of ``value`` could be made invalid."""
        resolved = self.resolve(schema)
        if depth > _MAX_DEPTH:
            return False, value
        if isinstance(value, dict):
            return self._violate_object(resolved, value, depth)
        if isinstance(value, list):
            return self._violate_array(resolved, value, depth)
        return _violate_scalar(resolved, value)

    def _violate_object(self, schema: dict[str, Any], value: dict[str, Any],
                        depth: int) -> tuple[bool, Any]:
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                changed, broken = self.violate(sub, value[name], depth + 1)
                if changed:
                    return True, {**value, name: broken}
        present = [name for name in schema.get("required", []) if name in value]
        if present:
            return True, _without(value, present[0])
        return False, value

    def _violate_array(self, schema: dict[str, Any], value: list[Any],
                       depth: int) -> tuple[bool, Any]:
        for index, item in enumerate(value):
            changed, broken = self.violate(schema.get("items", {}), item, depth + 1)
            if changed:
                return True, [*value[:index], broken, *value[index + 1:]]
        if int(schema.get("minItems", 0)) > 0:
            return True, []
        return False, value

    # -- citations (badcite)

    def cite(self, schema: Any, value: Any, depth: int) -> tuple[bool, Any]:
        """Replace the first entry of each enum-item array with :data:`BOGUS_CITATION`."""
        resolved = self.resolve(schema)
        if depth > _MAX_DEPTH:
            return False, value
        if isinstance(value, dict):
            return self._cite_object(resolved, value, depth)
        if isinstance(value, list):
            return self._cite_array(resolved, value, depth)
        return False, value

    def _cite_object(self, schema: dict[str, Any], value: dict[str, Any],
                     depth: int) -> tuple[bool, Any]:
        properties: dict[str, Any] = schema.get("properties", {})
        any_changed = False
        result = dict(value)
        for name, item in value.items():
            changed, result[name] = self.cite(properties.get(name, {}), item, depth + 1)
            any_changed = any_changed or changed
        return any_changed, result

    def _cite_array(self, schema: dict[str, Any], value: list[Any],
                    depth: int) -> tuple[bool, Any]:
        items = self.resolve(schema.get("items", {}))
        if items.get("enum"):
            return True, [BOGUS_CITATION, *value[1:]]
        results = [self.cite(items, item, depth + 1) for item in value]
        return any(changed for changed, _ in results), [item for _, item in results]


def _violate_scalar(schema: dict[str, Any], value: Any) -> tuple[bool, Any]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        for key, shift in (("maximum", 50), ("exclusiveMaximum", 50), ("minimum", -50),
                           ("exclusiveMinimum", -50)):
            bound = schema.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                return True, bound + shift
    if isinstance(value, str) and ("enum" in schema or "const" in schema):
        return True, BOGUS_ENUM_VALUE
    return False, value


def _clip(text: str, low: int, high: int) -> str:
    """Cut to ``high`` characters, at a word boundary when that keeps ``low``."""
    if len(text) <= high:
        return text
    cut = text[:high]
    at_word = cut.rsplit(" ", 1)[0]
    return at_word if low <= len(at_word) < len(cut) and at_word else cut


def _integer_bounds(schema: dict[str, Any]) -> tuple[int, int]:
    lows = [math.ceil(v) for v in [_number(schema, "minimum")] if v is not None]
    lows += [math.floor(v) + 1 for v in [_number(schema, "exclusiveMinimum")] if v is not None]
    highs = [math.floor(v) for v in [_number(schema, "maximum")] if v is not None]
    highs += [math.ceil(v) - 1 for v in [_number(schema, "exclusiveMaximum")] if v is not None]
    low, high = _default_range(max(lows) if lows else None, min(highs) if highs else None)
    return int(low), int(high)


def _number_bounds(schema: dict[str, Any]) -> tuple[float, float]:
    lows = [v for v in [_number(schema, "minimum")] if v is not None]
    lows += [v + 0.01 for v in [_number(schema, "exclusiveMinimum")] if v is not None]
    highs = [v for v in [_number(schema, "maximum")] if v is not None]
    highs += [v - 0.01 for v in [_number(schema, "exclusiveMaximum")] if v is not None]
    return _default_range(max(lows) if lows else None, min(highs) if highs else None)


def _default_range(low: float | None, high: float | None) -> tuple[float, float]:
    """Fill a missing bound 100 away from the other (0..100 when both are missing)."""
    if low is None:
        low = 0.0 if high is None or high >= 0 else high - 100
    if high is None:
        high = low + 100
    return low, max(low, high)


def _number(schema: dict[str, Any], key: str) -> float | None:
    value = schema.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _without(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k != key}


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# ------------------------------------------------------------------------- requests


class _BadRequest(Exception):
    """The request cannot be answered; becomes a 400 with an OpenAI-style error body."""


@dataclass(frozen=True)
class _Call:
    """One parsed completion request."""

    model: str
    schema: dict[str, Any]
    key: str
    """Hash of model, messages and response_format: attempts and distinct requests."""
    content_key: str
    """Same, with the ``+N`` bias suffix taken out of the model name."""
    bias: int
    randomised: bool
    squeeze: tuple[int, int] | None
    prompt_chars: int
    noise_sd: float = 0.0
    """The ``~S`` knob: per-ask standard deviation of every integer (0: none)."""
    request_seed: Any = None


def _parse_call(body: Any) -> _Call:
    if not isinstance(body, dict):
        raise _BadRequest("request body must be a JSON object")
    model, messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not model:
        raise _BadRequest("'model' must be a non-empty string")
    if not isinstance(messages, list) or not messages:
        raise _BadRequest("'messages' must be a non-empty list")
    if body.get("stream"):
        raise _BadRequest("stream=true is not supported by the fake server")
    response_format = body.get("response_format")
    match = _BIAS_RE.search(model)
    squeeze = _SQUEEZE_RE.search(model)
    unsqueezed = _SQUEEZE_RE.sub("", model)  # "~40-70" first, so its "~40" is no noise knob
    noise = _NOISE_RE.search(unsqueezed)
    base_model = _NOISE_RE.sub("", _BIAS_RE.sub("", unsqueezed))
    return _Call(
        model=model,
        schema=_schema_of(response_format),
        key=_digest(model, messages, response_format),
        content_key=_digest(base_model, messages, response_format),
        bias=int(match.group(1)) if match else 0,
        randomised="random" in model,
        squeeze=(int(squeeze.group(1)), int(squeeze.group(2))) if squeeze else None,
        prompt_chars=sum(len(_message_text(m)) for m in messages),
        noise_sd=float(noise.group(1)) if noise else 0.0,
        request_seed=body.get("seed"),
    )


def _schema_of(response_format: Any) -> dict[str, Any]:
    if response_format is None:
        return DEFAULT_SCHEMA
    if not isinstance(response_format, dict):
        raise _BadRequest("'response_format' must be an object")
    kind = response_format.get("type")
    if kind == "json_schema":
        schema = _as_dict(response_format.get("json_schema")).get("schema")
    elif kind == "json_object":
        schema = response_format.get("schema", DEFAULT_SCHEMA)
    else:
        schema = DEFAULT_SCHEMA
    if not isinstance(schema, dict):
        raise _BadRequest("the response_format schema must be a JSON object")
    return schema


def _message_text(message: Any) -> str:
    content = _as_dict(message).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_as_dict(part).get("text", "")) for part in content)
    return ""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest(*parts: Any) -> str:
    return hashlib.sha256(_canonical(list(parts)).encode("utf-8")).hexdigest()


def _rng(*parts: Any) -> random.Random:
    return random.Random(int(_digest(*parts), 16))


def _error_body(message: str, kind: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _json_response(data: Any, status: int = 200,
                   headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=_canonical_bytes(data), status=status, headers=headers,
                        content_type="application/json")


def _canonical_bytes(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _seconds_text(seconds: float) -> str:
    return str(int(seconds)) if seconds == int(seconds) else f"{seconds:g}"


# --------------------------------------------------------------------------- server


@dataclass
class _Stats:
    """Counters behind ``GET /_stats``; touched only on the server's event loop."""

    requests: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    cached_tokens: int = 0
    schemas: set[str] = field(default_factory=set)
    """Digests of the distinct reply schemas asked for (``distinct_schemas``)."""
    bodies: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=_BODIES_KEPT))
    """The last completion request bodies received, as parsed (what a client sent)."""

    def enter(self) -> None:
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)


_Handler = Callable[[web.Request], Any]


class FakeModelServer:
    """The server's state (options, stats, attempt counters) and its aiohttp application.

    All state is touched on the event loop that runs the application; other threads go
    through :class:`FakeServerHandle`.
    """

    def __init__(self, options: ServerOptions | None = None) -> None:
        self.options = options or ServerOptions()
        self._stats = _Stats()
        self._attempts: Counter[str] = Counter()
        self._random_counter = 0
        self._prefixes = _PrefixCache()
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None

    # -- state

    def set_options(self, **changes: Any) -> dict[str, Any]:
        """Validate and apply option changes; returns the options now in force."""
        self.options = self.options.updated(**changes)
        return self.options.as_dict()

    def stats(self) -> dict[str, Any]:
        """The ``GET /_stats`` document."""
        stats = self._stats
        return {
            "requests": stats.requests,
            "by_status": dict(sorted(stats.by_status.items())),
            "faults": dict(sorted(stats.faults.items())),
            "distinct_requests": len(self._attempts),
            "in_flight": stats.in_flight,
            "max_in_flight": stats.max_in_flight,
            "models": dict(sorted(stats.models.items())),
            "cached_tokens": stats.cached_tokens,
            "distinct_schemas": len(stats.schemas),
        }

    def received(self) -> list[dict[str, Any]]:
        """The last completion request bodies received, oldest first (a copy)."""
        return copy.deepcopy(list(self._stats.bodies))

    def reset_stats(self) -> None:
        """Zero the counters, the bodies kept and the attempt numbers (in-flight stays live)."""
        in_flight = self._stats.in_flight
        self._stats = _Stats(in_flight=in_flight, max_in_flight=in_flight)
        self._attempts.clear()
        self._random_counter = 0
        self._prefixes = _PrefixCache()

    # -- lifecycle

    def build_app(self) -> web.Application:
        """The aiohttp application with every route."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        routes: list[tuple[str, str, _Handler]] = [
            *[("POST", path, self._completions) for path in _COMPLETION_PATHS],
            ("GET", "/v1/models", self._models),
            ("GET", "/models", self._models),
            ("GET", "/health", self._health),
            ("GET", "/_stats", self._stats_view),
            ("POST", "/_reset", self._reset_view),
            ("GET", "/_control", self._control_view),
            ("POST", "/_control", self._control_view),
            *BatchEndpoints(self).routes(),
        ]
        for method, path, handler in routes:
            app.router.add_route(method, path, handler)
        app.on_response_prepare.append(self._count_status)
        return app

    async def start(self, port: int = 0) -> str:
        """Bind ``127.0.0.1:port`` (0 picks a free one) and return the base URL."""
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(self.build_app(), access_log=None,
                                     handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, port, backlog=1024)
        await site.start()
        bound_port = self._runner.addresses[0][1]
        return f"http://{HOST}:{bound_port}"

    async def close(self) -> None:
        """Wake hanging handlers and shut down."""
        if self._stopping is not None:
            self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake at once when the server stops."""
        if seconds <= 0:
            return
        assert self._stopping is not None
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    # -- small endpoints

    async def _models(self, _request: web.Request) -> web.Response:
        data = [{"id": name, "object": "model", "created": CREATED, "owned_by": "judgeflow-fake"}
                for name in MODELS]
        return _json_response({"object": "list", "data": data})

    async def _health(self, _request: web.Request) -> web.Response:
        return _json_response({"status": "ok"})

    async def _stats_view(self, _request: web.Request) -> web.Response:
        return _json_response(self.stats())

    async def _reset_view(self, _request: web.Request) -> web.Response:
        self.reset_stats()
        return _json_response(self.stats())

    async def _control_view(self, request: web.Request) -> web.Response:
        if request.method == "GET":
            return _json_response(self.options.as_dict())
        try:
            changes = await request.json()
            if not isinstance(changes, dict):
                raise ValueError("control body must be a JSON object of options")
            return _json_response(self.set_options(**changes))
        except ValueError as exc:
            return _json_response(_error_body(str(exc), "invalid_request_error",
                                              "invalid_option"), status=400)

    # -- completions

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        self._stats.enter()
        try:
            return await self._answer(request)
        finally:
            self._stats.in_flight -= 1

    async def _count_status(self, request: web.Request, response: web.StreamResponse) -> None:
        """Count a completion's status line as it is sent (a reset sends none)."""
        if request.path in _COMPLETION_PATHS:
            self._stats.by_status[str(response.status)] += 1

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        options = self.options
        try:
            body = await request.json()
            call = _parse_call(body)
            self._stats.bodies.append(body)
        except (ValueError, _BadRequest) as exc:
            return _json_response(_error_body(str(exc), "invalid_request_error",
                                              "bad_request"), status=400)
        cached = None
        if options.prompt_cache_block:
            cached, chars = self._prefixes.seen(body, options.prompt_cache_block,
                                                options.prompt_cache_min)
            call = replace(call, prompt_chars=chars)
        attempt = self._attempts[call.key]
        self._attempts[call.key] += 1
        self._stats.models[call.model] += 1
        self._stats.schemas.add(_digest(call.schema))
        draw = _rng("fault", options.seed, call.key, attempt)
        jitter = draw.uniform(-options.jitter_ms, options.jitter_ms)
        await self._sleep(max(0.0, options.latency_ms + jitter) / 1000)
        fault = self._pick_fault(options, attempt, draw)
        if fault:
            self._stats.faults[fault] += 1
        try:
            return await self._respond(request, call, options, fault, cached)
        except SchemaError as exc:
            return _json_response(_error_body(str(exc), "invalid_request_error",
                                              "bad_schema"), status=400)

    @staticmethod
    def _pick_fault(options: ServerOptions, attempt: int, draw: random.Random) -> str | None:
        if attempt < options.fail_first:
            return "fail_first"
        if options.faults and draw.random() < options.fault_rate:
            return draw.choice(options.faults)
        return None

    async def _respond(self, request: web.Request, call: _Call, options: ServerOptions,
                       fault: str | None, cached: int | None = None) -> web.StreamResponse:
        immediate = _immediate_fault_response(fault, options)
        if immediate is not None:
            return immediate
        if fault == "reset":
            return await _reset_connection(request)
        if fault == "hang":
            await self._sleep(options.hang_seconds)
        content = self._tamper(call, self._instance(call, options), fault)
        completion = self._completion(call, content, "length" if fault == "length" else "stop",
                                      _fingerprint(options), cached)
        if cached is not None:
            self._stats.cached_tokens += cached
        if fault == "truncated":
            return await _truncated(request, completion)
        return _json_response(completion)

    def _instance(self, call: _Call, options: ServerOptions) -> Any:
        parts: list[Any] = ["content", options.seed, call.content_key]
        if options.drift:
            parts.append(["drift", options.drift])
        if call.randomised:
            self._random_counter += 1
            parts.append(self._random_counter)
        asked = [options.ask] if options.ask else []
        noise = ((_rng("noise", call.request_seed, call.content_key, *asked), call.noise_sd)
                 if call.noise_sd else None)
        return _Instantiator(call.schema, _rng(*parts), call.bias + options.bias, noise,
                             call.squeeze).value(call.schema, 0)

    @staticmethod
    def _tamper(call: _Call, instance: Any, fault: str | None) -> str:
        if fault == "badcite":
            changed, instance = inject_bogus_citation(call.schema, instance)
            if not changed:
                instance = violate_schema(call.schema, instance)
        elif fault == "badschema":
            instance = violate_schema(call.schema, instance)
        content = json.dumps(instance, ensure_ascii=False)
        if fault == "length":
            return content[: max(1, len(content) // 2)]
        return content

    def answer_body(self, body: Any, fault: str | None = None) -> tuple[int, dict[str, Any]]:
        """The answer to one chat-completion body, with no wire (a batch line), no stats.

        The same content a live call of this body gets; ``fault`` is a content fault
        (``badschema``, ``badcite``, ``length``) or None. With ``prompt_cache_block`` set it
        reports cached prompt tokens as a live call does (the same prefix cache).
        """
        options = self.options
        try:
            call = _parse_call(body)
            content = self._tamper(call, self._instance(call, options), fault)
        except (_BadRequest, SchemaError) as exc:
            return 400, _error_body(str(exc), "invalid_request_error", "bad_request")
        cached = None
        if options.prompt_cache_block:
            cached, chars = self._prefixes.seen(body, options.prompt_cache_block,
                                                options.prompt_cache_min)
            call = replace(call, prompt_chars=chars)
            self._stats.cached_tokens += cached
        return 200, self._completion(call, content, "length" if fault == "length" else "stop",
                                     _fingerprint(options), cached)

    @staticmethod
    def _completion(call: _Call, text: str, finish_reason: str,
                    fingerprint: str | None = None,
                    cached_tokens: int | None = None) -> dict[str, Any]:
        prompt_tokens, completion_tokens = call.prompt_chars // 4, max(1, len(text) // 4)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
        return {
            "id": "chatcmpl-fake-" + call.key[:24],
            "object": "chat.completion",
            "created": CREATED,
            "model": call.model,
            "system_fingerprint": fingerprint,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": None,
                "finish_reason": finish_reason,
            }],
            "usage": usage,
        }


class _PrefixCache:
    """The prompt prefixes sent so far, as digests of every block-aligned prefix.

    Bounded: past ``_PREFIXES_KEPT`` digests it forgets everything (a provider evicts too).
    """

    def __init__(self) -> None:
        self._digests: set[bytes] = set()

    def seen(self, body: dict[str, Any], block: int, minimum: int) -> tuple[int, int]:
        """Tokens of ``body``'s prompt already seen, in whole blocks, and the prompt's length
        in characters (the schema included in ``json_schema`` mode); then remember it."""
        fmt = body.get("response_format")
        text = "".join(_message_text(m) for m in body.get("messages") or [])
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            text = _canonical(fmt.get("json_schema")) + text
        digest = hashlib.sha256(_canonical([body.get("model")]).encode("utf-8"))
        size = block * 4  # characters per block, at 4 characters a token
        found, blocks = 0, len(text) // size
        for index in range(blocks):
            digest.update(text[index * size:(index + 1) * size].encode("utf-8"))
            mark = digest.copy().digest()
            if mark in self._digests:
                found += 1 if found == index else 0  # the prefix is what agrees from the start
                continue
            if len(self._digests) >= _PREFIXES_KEPT:
                self._digests.clear()
            self._digests.add(mark)
        cached = found * block
        return (cached if cached >= minimum else 0), len(text)


def _fingerprint(options: ServerOptions) -> str:
    return f"fp_fake_{options.seed}" + (f"_d{options.drift}" if options.drift else "")


def _immediate_fault_response(fault: str | None, options: ServerOptions) -> web.Response | None:
    """The answer of a fault that needs no content, else None."""
    if fault in ("fail_first", "500"):
        body = _error_body("The server had an error (fake).", "server_error", "internal_error")
        return _json_response(body, status=500)
    if fault == "503":
        body = _error_body("The server is overloaded (fake).", "server_error",
                           "service_unavailable")
        return _json_response(body, status=503)
    if fault == "429":
        return _rate_limited(options.retry_after)
    if fault == "notjson":
        return web.Response(text="<html>oops</html>", content_type="text/html")
    return None


def _rate_limited(retry_after: float) -> web.Response:
    headers = {"Retry-After": _seconds_text(retry_after),
               "retry-after-ms": str(round(retry_after * 1000))}
    body = _error_body("Rate limit reached (fake).", "requests", "rate_limit_exceeded")
    return _json_response(body, status=429, headers=headers)


async def _reset_connection(request: web.Request) -> web.StreamResponse:
    """Abort with SO_LINGER 0 (a TCP RST); aiohttp then cancels this handler."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    await asyncio.sleep(_DROP_GRACE_S)
    return web.Response(status=204)


async def _truncated(request: web.Request, completion: dict[str, Any]) -> web.StreamResponse:
    """Announce the whole body in Content-Length, send half, close the connection."""
    body = _canonical_bytes(completion)
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.content_length = len(body)
    await response.prepare(request)
    await response.write(body[: len(body) // 2])
    if request.transport is not None:
        request.transport.close()
    await asyncio.sleep(_DROP_GRACE_S)
    return response


# ----------------------------------------------------------------------- thread handle


class FakeServerHandle:
    """A server running on its own event loop in a daemon thread; see :func:`start_in_thread`."""

    def __init__(self, server: FakeModelServer, loop: asyncio.AbstractEventLoop,
                 thread: threading.Thread, base_url: str) -> None:
        self._server = server
        self._loop = loop
        self._thread = thread
        self._stopped = False
        self.base_url = base_url
        """``http://127.0.0.1:PORT``, no trailing slash."""

    @property
    def openai_base_url(self) -> str:
        """``base_url + "/v1"``, what OpenAI-style clients take as their base."""
        return self.base_url + "/v1"

    def stats(self) -> dict[str, Any]:
        """The ``GET /_stats`` document."""
        return self._call(self._server.stats)

    def reset_stats(self) -> None:
        """Zero the stats and the attempt counters."""
        self._call(self._server.reset_stats)

    def received(self) -> list[dict[str, Any]]:
        """The last completion request bodies received, oldest first."""
        return self._call(self._server.received)

    def set_options(self, **changes: Any) -> dict[str, Any]:
        """Change options at run time (``ValueError`` if bad); returns the options in force."""
        return self._call(lambda: self._server.set_options(**changes))

    def options(self) -> dict[str, Any]:
        """The options in force."""
        return self._call(self._server.options.as_dict)

    def stop(self, timeout: float = 10.0) -> None:
        """Shut the server down and join its thread; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        future = asyncio.run_coroutine_threadsafe(self._server.close(), self._loop)
        try:
            future.result(timeout)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)

    def __enter__(self) -> FakeServerHandle:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _call(self, function: Callable[[], _T]) -> _T:
        async def run() -> _T:
            return function()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10.0)


def start_in_thread(*, port: int = 0, **options: Any) -> FakeServerHandle:
    """Start a server on ``127.0.0.1:port`` in a daemon thread; ``options`` as in the CLI.

    Raises ``ValueError`` for a bad option and ``OSError`` when the port cannot be bound.
    """
    server = FakeModelServer(ServerOptions().updated(**options))
    loop = asyncio.new_event_loop()
    started: Future[str] = Future()
    thread = threading.Thread(target=_run_loop, args=(loop, server, port, started),
                              name="fake-model-server", daemon=True)
    thread.start()
    try:
        base_url = started.result(30.0)
    except BaseException:
        thread.join(10.0)
        raise
    return FakeServerHandle(server, loop, thread, base_url)


def _run_loop(loop: asyncio.AbstractEventLoop, server: FakeModelServer, port: int,
              started: Future[str]) -> None:
    asyncio.set_event_loop(loop)
    try:
        try:
            started.set_result(loop.run_until_complete(server.start(port)))
        except BaseException as exc:
            loop.run_until_complete(server.close())
            started.set_exception(exc)
            return
        loop.run_forever()
        _cancel_leftovers(loop)
    finally:
        loop.close()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())


# ------------------------------------------------------------------------------ CLI


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    add = parser.add_argument
    add("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    add("--latency-ms", type=float, default=0.0, help="base answer delay")
    add("--jitter-ms", type=float, default=0.0, help="uniform +- jitter on the delay")
    add("--seed", type=int, default=0, help="seed of content and fault draws")
    add("--fault-rate", type=float, default=0.0, help="probability of a fault per attempt")
    add("--faults", default=",".join(FAULT_KINDS),
        help="enabled fault kinds, comma-separated (default: all)")
    add("--retry-after", type=float, default=1.0, help="Retry-After seconds of a 429")
    add("--hang-seconds", type=float, default=30.0, help="delay of a 'hang' fault")
    add("--fail-first", type=int, default=0,
        help="the first N attempts of every distinct request fail with 500")
    add("--bias", type=int, default=0, help="added to every integer, clamped")
    add("--drift", type=int, default=0, help="non-zero: another model behind the same name")
    add("--ask", type=int, default=0,
        help="non-zero: a ~S judge draws new noise for the same request (asked again)")
    add("--prompt-cache-block", type=int, default=0,
        help="report cached prompt tokens in blocks of N tokens (OpenAI: 128); 0 is off")
    add("--prompt-cache-min", type=int, default=1024,
        help="shared prefixes below N tokens are not reported cached (OpenAI: 1024)")
    add("--ready-file", type=Path,
        help="also write the base URL into this file (add /v1 for judge run --api-base)")
    return parser


def _options_from_args(args: argparse.Namespace) -> ServerOptions:
    names = [f.name for f in fields(ServerOptions)]
    return ServerOptions().updated(**{name: getattr(args, name) for name in names})


def _write_ready_file(path: Path, base_url: str) -> None:
    """Write atomically, so a watcher never reads half a URL."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(base_url, encoding="utf-8")
    temporary.replace(path)


async def _serve(server: FakeModelServer, port: int, ready_file: Path | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    base_url = await server.start(port)
    try:
        if ready_file is not None:
            _write_ready_file(ready_file, base_url)
        print(f"READY {base_url}", flush=True)
        # What `judge run --api-base` takes: OpenAI-style clients add /chat/completions to it.
        print(f"api-base {base_url}/v1   (judge run SUITE --model hosted_vllm/fake-judge "
              f"--api-base {base_url}/v1)", flush=True)
        await stop.wait()
    finally:
        await server.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; runs until SIGINT or SIGTERM."""
    args = _parser().parse_args(argv)
    try:
        options = _options_from_args(args)
    except ValueError as exc:
        print(f"fake_server: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_serve(FakeModelServer(options), args.port, args.ready_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
