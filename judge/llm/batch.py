"""Provider batch jobs through LiteLLM's file and batch APIs: upload, create, poll, download.

An adapter beside :mod:`judge.llm.client`, which stays the one place that imports litellm
(:func:`judge.llm.client.load_litellm`). A batch input line is the OpenAI ``/v1/chat/completions``
body a live call of :class:`judge.llm.client.LiteLLMClient` would send (same messages,
temperature, seed, ``response_format`` and sampling params), under ``custom_id`` = the
judgment's cache key, so a result line lands under exactly the key a live call would use.

An answer is bound to the request it claims (:func:`bind_answers`): the ``custom_id`` must be
one this job sent, carried by one answer only; the model that answered must be the one
asked; and when the provider echoes the request (Vertex AI and Gemini output lines carry
``request``), its digest must be the digest of the body sent under that id. Anything else
is refused with its reason, per item, and never cached. An OpenAI output line echoes no
request: two answers swapped between requests of one model are then beyond what the
provider's file can prove (the verdict's citations are checked against the case's evidence
as for any answer).

The control calls (upload, create, retrieve, cancel, download) are not retried here: each
one is safe to repeat from the stored job, and the door says how. LiteLLM's and the OpenAI
SDK's own retries are off, as for live calls.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..core.text.canonical import canonical_json
from ..core.text.errors import ProviderError, UsageError
from ..core.text.secrets import mask_text
from ..core.text.strict_json import loads_strict
from .client import (
    Completion,
    JudgeRequest,
    ModelSpec,
    OutputMode,
    classify,
    load_litellm,
    request_body,
    resolve_output_mode,
    token_count,
)

__all__ = [
    "BATCH_PROVIDERS",
    "TERMINAL_STATES",
    "BatchClient",
    "BatchItem",
    "BatchLine",
    "BatchState",
    "batch_line",
    "bind_answers",
    "parse_result_lines",
    "provider_of",
    "request_digest",
]

BATCH_PROVIDERS: tuple[str, ...] = ("openai", "azure", "vertex_ai", "gemini")
"""Providers whose batch jobs LiteLLM (1.110) can create, poll and download in the OpenAI
format. Anthropic's Message Batches can be read through LiteLLM but not created there."""
TERMINAL_STATES = frozenset({"completed", "failed", "expired", "cancelled"})
"""Provider batch states after which nothing more will be answered."""
_ENDPOINT = "/v1/chat/completions"


@dataclass(frozen=True)
class BatchState:
    """What the provider says about one batch job."""

    id: str
    status: str
    """``validating``, ``in_progress``, ``finalizing``, ``completed``, ``failed``,
    ``expired``, ``cancelling`` or ``cancelled``."""
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    """Job-level errors (a ``failed`` job's reasons: bad input file, quota...)."""
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        """Nothing more will be answered."""
        return self.status in TERMINAL_STATES


@dataclass(frozen=True)
class BatchItem:
    """One result line: a completion (as a live call's :class:`Completion`), or why none came."""

    custom_id: str
    turn: Completion | None
    error: str | None = None
    echo: str | None = None
    """:func:`request_digest` of the request the line echoes, when the provider echoes one."""


def request_digest(body: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a batch line's request body."""
    return hashlib.sha256(canonical_json(dict(body)).encode("utf-8")).hexdigest()


def _echo(line: Mapping[str, Any]) -> str | None:
    request = line.get("request")
    if not isinstance(request, Mapping):
        return None
    body = request.get("body", request)
    return request_digest(body) if isinstance(body, Mapping) else ""


def _same_model(reported: str, wire: str) -> bool:
    """Whether ``reported`` names ``wire`` or one of its dated snapshots (``gpt-4o-2024-08-06``)."""
    reported, wire = reported.removeprefix("models/"), wire.removeprefix("models/")
    wire = wire.rpartition("/")[2] if "/" in wire and "/" not in reported else wire
    return reported == wire or reported.startswith((wire + "-", wire + "@"))


def bind_answers(items: Iterable[BatchItem], keys: Collection[str], wire_model: str,
                 sent: Callable[[str], str | None]) -> tuple[dict[str, BatchItem],
                                                              dict[str, str]]:
    """The items bound to this job's requests, and the refused ones by ``custom_id`` with why.

    ``sent(custom_id)`` is the :func:`request_digest` of the body sent under it. An error
    item gives way to an answer of its id (a provider may list an id in both files); two
    answers of one id are both refused.
    """
    items = list(items)
    answers = Counter(i.custom_id for i in items if i.turn is not None)
    bound: dict[str, BatchItem] = {}
    refused: dict[str, str] = {}
    for item in items:
        cid = item.custom_id
        why = None
        if cid not in keys:
            why = "no request of this job has this custom_id"
        elif item.turn is None:
            if answers[cid] == 0:
                bound[cid] = item
            continue
        elif answers[cid] > 1:
            why = f"{answers[cid]} answers carry this custom_id"
        elif item.turn.model_reported and not _same_model(item.turn.model_reported, wire_model):
            why = f"answered by model {item.turn.model_reported!r}, asked of {wire_model!r}"
        elif item.echo is not None and item.echo != sent(cid):
            why = "the request it echoes is not the one sent under this custom_id"
        if why is None:
            bound[cid] = item
        else:
            refused[cid] = why
    return bound, refused


def provider_of(model: str) -> tuple[str, str]:
    """``(provider, model name on the wire)`` of a LiteLLM model string.

    A provider LiteLLM cannot batch for is a :class:`UsageError` naming the ones it can.
    """
    if model.startswith("local/"):
        provider, wire = "local", model
    else:
        try:
            wire, provider, _, _ = load_litellm().get_llm_provider(model=model)
        except Exception:  # litellm raises its own BadRequestError for an unknown provider
            provider, _, wire = model.partition("/") if "/" in model else ("?", "", model)
    if provider not in BATCH_PROVIDERS:
        raise UsageError(f"judge model {model!r} (provider {provider}) has no batch API "
                         f"that judgeflow can use",
                         fix=f"drop --batch, or judge with a model of a provider with batch "
                             f"jobs: {', '.join(BATCH_PROVIDERS)}")
    return provider, str(wire)


class BatchLine(TypedDict):
    """One line of a batch input file, as the provider's batch API reads it."""

    custom_id: str
    method: str
    url: str
    body: dict[str, Any]
    """The chat-completions request a live call would send (the provider's JSON)."""


class _CallArgs(TypedDict, total=False):
    """What every batch API call of one client is given besides its own arguments."""

    custom_llm_provider: str
    max_retries: int
    timeout: float
    model: str
    api_base: str
    api_key: str


def batch_line(custom_id: str, request: JudgeRequest, wire_model: str,
               mode: OutputMode) -> BatchLine:
    """One JSONL line of a batch input file: the body a live call would send."""
    return {"custom_id": custom_id, "method": "POST", "url": _ENDPOINT,
            "body": request_body(wire_model, request, mode)}


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        inner = error.get("error", error)
        if isinstance(inner, Mapping):
            code, message = inner.get("code"), inner.get("message")
            return f"{code}: {message}" if code else str(message or inner)
    return str(error)[:300]


def _item(line: Mapping[str, Any], mode: OutputMode,
          price: Any) -> BatchItem | None:
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str):
        return None
    item = _answer(custom_id, line, mode, price)
    echo = _echo(line)
    return item if echo is None else dataclasses.replace(item, echo=echo)


def _answer(custom_id: str, line: Mapping[str, Any], mode: OutputMode,
            price: Any) -> BatchItem:
    response = line.get("response")
    if line.get("error") is not None:
        return BatchItem(custom_id, None, "batch item failed: " + _error_text(line["error"]))
    if not isinstance(response, Mapping):
        return BatchItem(custom_id, None, "batch item has no response")
    status, body = response.get("status_code"), response.get("body")
    if status != 200 or not isinstance(body, Mapping):
        return BatchItem(custom_id, None,
                         f"batch item failed: HTTP {status}: {_error_text(body)}")
    try:
        choice = body["choices"][0]
        text = choice["message"].get("content") or ""
        usage = body.get("usage") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        return BatchItem(custom_id, None, "batch item has no usable choice")
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    reported = body.get("model") if isinstance(body.get("model"), str) else None
    fingerprint = body.get("system_fingerprint")
    details = usage.get("prompt_tokens_details")
    return BatchItem(custom_id, Completion(
        # A reply is data: secrets in it are masked before it is stored.
        text=mask_text(str(text))[0], finish_reason=choice.get("finish_reason"),
        model_reported=reported,
        prompt_tokens=prompt if isinstance(prompt, int) else None,
        completion_tokens=completion if isinstance(completion, int) else None,
        cost_usd=price(reported, prompt, completion),
        # A batch item has no latency of its own: the job's turnaround is not the model's.
        latency_ms=0.0, output_mode=mode,
        system_fingerprint=fingerprint if isinstance(fingerprint, str) and fingerprint
        else None,
        # The live path's fields (:meth:`LiteLLMClient._turn`), from the same usage object.
        cached_tokens=token_count(details.get("cached_tokens"))
        if isinstance(details, Mapping) else None,
        cache_write_tokens=token_count(usage.get("cache_creation_input_tokens"))))


def parse_result_lines(lines: Iterable[bytes | str], mode: OutputMode,
                       price: Any = None) -> Iterator[BatchItem]:
    """The items of batch output and error files.

    A line that is not strict JSON (:mod:`judge.core.text.strict_json`: a duplicate key is
    refused, not resolved) or has no ``custom_id`` is skipped: its judgment stays unanswered
    and is asked live or left unscored.
    """
    pricing = price or (lambda *_: None)
    for raw in lines:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        try:
            line = loads_strict(text)
        except (ValueError, RecursionError):
            continue
        if isinstance(line, Mapping):
            item = _item(line, mode, pricing)
            if item is not None:
                yield item


def _state(batch: Any) -> BatchState:
    counts = getattr(batch, "request_counts", None)
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    return BatchState(
        id=str(batch.id), status=str(batch.status),
        output_file_id=getattr(batch, "output_file_id", None) or None,
        error_file_id=getattr(batch, "error_file_id", None) or None,
        counts={k: int(getattr(counts, k, 0) or 0) for k in ("total", "completed", "failed")}
        if counts is not None else {},
        errors=tuple(str(getattr(e, "message", e)) for e in errors),
        metadata=dict(getattr(batch, "metadata", None) or {}))


class BatchClient:
    """One provider's batch API for one judge model (its endpoint and key from the spec)."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.provider, self.wire_model = provider_of(spec.name)
        self._prices: dict[str, tuple[float | None, float | None]] = {}

    def mode(self, request: JudgeRequest) -> OutputMode:
        """The output mode a live call would try first (no fallback inside a batch)."""
        return resolve_output_mode(self.spec.name, request.output_mode)

    def _kwargs(self) -> _CallArgs:
        kwargs: _CallArgs = {"custom_llm_provider": self.provider, "max_retries": 0,
                             "timeout": self.spec.timeout}
        if self.provider == "gemini":
            kwargs["model"] = self.spec.name  # litellm picks gemini's batch config by model
        if self.spec.api_base:
            kwargs["api_base"] = self.spec.api_base
        if self.spec.api_key:
            kwargs["api_key"] = self.spec.api_key
        return kwargs

    def _call(self, name: str, **kwargs: Any) -> Any:
        # The synchronous API: a few control calls per job, and no async SDK client left
        # bound to an event loop that a later command no longer has.
        try:
            return getattr(load_litellm(), name)(**kwargs, **self._kwargs())
        except ProviderError:
            raise
        except Exception as exc:  # classified: the door names it and says how to resume
            raise classify(exc) from exc

    def submit(self, lines: Sequence[BatchLine],
                     metadata: Mapping[str, str]) -> tuple[str, BatchState]:
        """Upload ``lines`` as a JSONL file and create a batch job; ``(file id, state)``."""
        data = "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
                       for line in lines).encode("utf-8")
        uploaded = self._call("create_file", file=("judgeflow-batch.jsonl", data,
                                                          "application/jsonl"),
                                    purpose="batch")
        batch = self._call("create_batch", completion_window="24h", endpoint=_ENDPOINT,
                                 input_file_id=str(uploaded.id), metadata=dict(metadata))
        return str(uploaded.id), _state(batch)

    def find(self, metadata_key: str, value: str) -> BatchState | None:
        """A job of ours created before a crash but not recorded: by its metadata tag."""
        try:
            listed = self._call("list_batches", limit=100)
        except ProviderError:
            return None
        for batch in getattr(listed, "data", None) or []:
            if (getattr(batch, "metadata", None) or {}).get(metadata_key) == value:
                return _state(batch)
        return None

    def retrieve(self, batch_id: str) -> BatchState:
        """The job's current state."""
        return _state(self._call("retrieve_batch", batch_id=batch_id))

    def cancel(self, batch_id: str) -> BatchState:
        """Ask the provider to cancel the job (it ends ``cancelled``, keeping what it did)."""
        return _state(self._call("cancel_batch", batch_id=batch_id))

    def download(self, file_id: str) -> bytes:
        """A result file's bytes."""
        content = self._call("file_content", file_id=file_id)
        data = getattr(content, "content", content)
        return data if isinstance(data, bytes) else str(data).encode("utf-8")

    def price(self, model: str | None, prompt: Any, completion: Any) -> float | None:
        """Cost at the provider's batch rate from LiteLLM's price map; None when unknown."""
        name = model or self.wire_model
        if name not in self._prices:
            try:
                info = load_litellm().get_model_info(model=name,
                                                 custom_llm_provider=self.provider)
            except Exception:  # not in the map: unknown, never a made-up zero
                info = {}
            self._prices[name] = (info.get("input_cost_per_token_batches"),
                                  info.get("output_cost_per_token_batches"))
        rate_in, rate_out = self._prices[name]
        if rate_in is None or rate_out is None or not isinstance(prompt, int) \
                or not isinstance(completion, int):
            return None
        return round(prompt * float(rate_in) + completion * float(rate_out), 10)
