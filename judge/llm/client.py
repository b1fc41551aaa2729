"""The model client: the only module that imports litellm, and only when a call is needed.

One retry layer lives here (tenacity): 429 (Retry-After honoured, capped), 5xx, timeouts
and connection failures, with exponential jitter. LiteLLM's own retries and the OpenAI
SDK's are switched off, so an attempt here is one request on the wire. A 4xx is not
retried. A server that rejects a structured-output mode (llama.cpp answers HTTP 500 to
``json_schema``) is not "transient": the client falls back to the next mode and
remembers it for that model.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import datetime
import email.utils
import importlib
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypedDict

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from ..core.formats.turns import CachedTurn, turn_json
from ..core.outcomes.ledger import CallCounts, retry_reason
from ..core.text.canonical import sha256_hex
from ..core.text.errors import PermanentProviderError, ProviderError
from ..core.text.secrets import Redactor, secret_values
from ..system.tuning import LITELLM_IMPORT_ENV

__all__ = [
    "FIRST_CALL_MODULES",
    "OUTPUT_MODES",
    "Completion",
    "JudgeRequest",
    "KeyMaterial",
    "LiteLLMClient",
    "ModelSpec",
    "OutputMode",
    "aclose_clients",
    "classify",
    "load_litellm",
    "preload",
    "request_body",
    "resolve_output_mode",
    "response_format",
    "token_count",
    "unreachable_message",
    "warm_first_call",
]

OutputMode = Literal["json_schema", "json_object", "prompt"]
OUTPUT_MODES: tuple[OutputMode, ...] = ("json_schema", "json_object", "prompt")

# Local OpenAI-compatible servers built on llama.cpp take ``json_object`` + ``schema`` and
# reject ``json_schema``; everything else starts with the OpenAI-style mode.
_JSON_OBJECT_PREFIXES = ("hosted_vllm/", "llamacpp/", "llama_cpp/")


def resolve_output_mode(model: str, configured: str = "auto") -> OutputMode:
    """The structured-output mode to try first for ``model``."""
    if configured in OUTPUT_MODES:
        return configured
    if configured != "auto":
        raise ValueError(f"unknown output mode {configured!r}")
    if model.startswith(_JSON_OBJECT_PREFIXES):
        return "json_object"
    return "json_schema"


@dataclass(frozen=True)
class ModelSpec:
    """Where and how to call one judge model. ``api_key`` never reaches a cache or a log."""

    name: str
    """LiteLLM model string to call, e.g. ``openai/gpt-4o-mini`` or ``hosted_vllm/smollm2``
    (for ``local/...`` judges, the name the local server answers to)."""
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    output_mode: str = "auto"
    timeout: float = 60.0
    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    retry_after_cap: float = 30.0
    engine: Mapping[str, Any] | None = None
    """What serves the model, when we know (a local server's engine and versions)."""
    max_concurrency: int | None = None
    """Calls this server can take at once (a local llama.cpp server: 1), below ``--concurrency``."""
    retry_timeouts: bool = True
    """Whether a timed-out request is sent again. False for a local llama.cpp server: it
    keeps computing a request its client gave up on, so a re-send only queues behind it."""
    redact: Callable[[str], str] | None = field(default=None, repr=False, compare=False)
    """Masks the process's secrets in every error text (default: this spec's own key)."""
    on_this_machine: bool = False
    """The embedded judge, served on this machine: a call's price is known, and it is zero."""


class KeyMaterial(TypedDict):
    """A request as its cache key is made of it (an entry's ``request``), by the wire's names."""

    model: str
    messages: list[dict[str, str]]
    temperature: float
    seed: int | None
    responseFormat: dict[str, Any] | None
    outputMode: str
    params: dict[str, Any]


@dataclass(frozen=True)
class JudgeRequest:
    """One logical judge call: what the cache key is made of."""

    model: str
    messages: tuple[Mapping[str, str], ...]
    temperature: float
    seed: int | None
    schema: Mapping[str, Any] | None
    output_mode: str
    """The configured mode (``auto`` or a fixed one): part of the key, resolved at call time."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Sampling parameters (max_tokens, top_p...)."""

    def key_material(self) -> KeyMaterial:
        """Everything that can change the model's output; no keys, URLs, timeouts or retries."""
        return {
            "model": self.model,
            "messages": [dict(m) for m in self.messages],
            "temperature": self.temperature,
            "seed": self.seed,
            "responseFormat": dict(self.schema) if self.schema is not None else None,
            "outputMode": self.output_mode,
            "params": dict(self.params),
        }


@dataclass(frozen=True)
class Completion:
    """One completion as received, before any parsing."""

    text: str
    finish_reason: str | None
    model_reported: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    latency_ms: float
    output_mode: OutputMode
    system_fingerprint: str | None = None
    """The provider's ``system_fingerprint`` (its backend configuration), when it sends one."""
    cached_tokens: int | None = None
    """Of ``prompt_tokens``, those read from the provider's prompt cache (billed at its
    cached rate): OpenAI's ``prompt_tokens_details.cached_tokens``, Anthropic's
    ``cache_read_input_tokens``; None when the provider said nothing."""
    cache_write_tokens: int | None = None
    """Of ``prompt_tokens``, those written to the prompt cache (Anthropic's
    ``cache_creation_input_tokens``, billed above the input rate); None when not reported."""
    logprobs: tuple[dict[str, Any], ...] | None = None
    """The reply's tokens with their top alternatives (``{"token", "top": [[alt, logprob]]}``),
    when the request asked for them (``score_mode = "expected"``) and the provider sent them."""

    def cached(self) -> CachedTurn:
        """The turn as the cache stores it (:func:`judge.core.formats.turns.turn_json`)."""
        return turn_json(
            text=self.text, finish_reason=self.finish_reason, model_reported=self.model_reported,
            prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
            cost_usd=self.cost_usd, latency_ms=self.latency_ms, output_mode=self.output_mode,
            system_fingerprint=self.system_fingerprint, cached_tokens=self.cached_tokens,
            cache_write_tokens=self.cache_write_tokens, logprobs=self.logprobs)


def response_format(mode: OutputMode, schema: Mapping[str, Any] | None) -> Any:
    """The ``response_format`` a request carries in ``mode`` (None: prompt-only JSON)."""
    if schema is None or mode == "prompt":
        return None
    if mode == "json_object":
        return {"type": "json_object", "schema": dict(schema)}
    return {"type": "json_schema",
            "json_schema": {"name": "verdict", "schema": dict(schema), "strict": True}}


# Providers whose prompt cache needs an explicit breakpoint (Anthropic's ``cache_control``
# on a content block); OpenAI, Gemini and vLLM reuse a repeated prefix by themselves.
_CACHE_MARKER_PREFIXES = ("anthropic/",)
_CACHE_MARKER = {"type": "ephemeral"}
_PREFIXES_KEPT = 4096


def request_body(model: str, request: JudgeRequest, mode: OutputMode,
                 messages: Sequence[Mapping[str, str]] | None = None, *,
                 mark: bool = False) -> dict[str, Any]:
    """What one completion hands LiteLLM for ``model`` (its LiteLLM name) in ``mode``.

    JSON door: the provider's request, handed to LiteLLM as it is. ``messages`` override the
    request's (a repair turn). ``mark`` turns the first message (the rubric-only system
    message, the same bytes for every case of a rubric) into one text block carrying
    ``cache_control``, the form LiteLLM passes to Anthropic; only the wire sees it, the cache
    key is made of the plain messages. LiteLLM then adapts the body to the provider (the
    provider's prefix off the model name); a client leaves out a ``seed`` the provider does
    not take. No key, URL, timeout or retry count is in it.
    """
    sent: list[dict[str, Any]] = [dict(m) for m in
                                  (request.messages if messages is None else messages)]
    if mark and sent:
        sent[0] = {**sent[0], "content": [{"type": "text", "text": sent[0].get("content", ""),
                                           "cache_control": dict(_CACHE_MARKER)}]}
    body: dict[str, Any] = {"model": model, "messages": sent,
                            "temperature": request.temperature, **dict(request.params)}
    if request.seed is not None:
        body["seed"] = request.seed
    fmt = response_format(mode, request.schema)
    if fmt is not None:
        body["response_format"] = fmt
    return body


def token_count(value: Any) -> int | None:
    """A token count a provider reported: an int (never a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _logprobs(raw: Any) -> tuple[dict[str, Any], ...] | None:
    """OpenAI's ``choice.logprobs.content`` (llama.cpp's server speaks it too), compacted.

    Log-probabilities are rounded to 6 decimals: the cache keeps them, and the expected
    score (:mod:`judge.core.scoring.expected`) is computed from what the cache keeps.
    """
    content = _field(raw, "content") if raw is not None else None
    if not isinstance(content, list) or not content:
        return None
    out: list[dict[str, Any]] = []
    for item in content:
        token = _field(item, "token")
        tops = _field(item, "top_logprobs") or []
        own = _field(item, "logprob")
        out.append({"token": token if isinstance(token, str) else "",
                    "logprob": round(float(own), 6) if isinstance(own, int | float) else None,
                    "top": [[str(_field(t, "token")), round(float(_field(t, "logprob")), 6)]
                            for t in tops if isinstance(_field(t, "logprob"), int | float)]})
    return tuple(out)


_litellm_module: Any = None


# Read by litellm while it is imported, and only then on the paths we use (the price map's
# loader and the .env loader in litellm/__init__.py): no price-map fetch over the network,
# no stray .env loaded into the process.


def load_litellm() -> Any:
    """Import litellm once, configured for us: no network at import, no .env, no banners.

    The only place that touches ``os.environ``, and only for the import: litellm reads these
    two variables there and nowhere after, and offers no other switch (its one alternative
    is to look at ``sys.argv[0]``). What was unset is set for the import and removed again,
    so a library call leaves the environment as it found it; a value the user set wins.
    The garbage collector is the process's to tune (:func:`judge.system.tuning.tune_process`).
    """
    global _litellm_module
    if _litellm_module is None:
        added = [name for name in LITELLM_IMPORT_ENV if name not in os.environ]
        for name in added:
            os.environ[name] = LITELLM_IMPORT_ENV[name]
        try:
            import litellm
        finally:
            for name in added:
                os.environ.pop(name, None)
        litellm.suppress_debug_info = True
        litellm.telemetry = False
        _litellm_module = litellm
    return _litellm_module


def preload() -> None:
    """Import litellm now: a long-lived server does it once, in a thread, not on its loop."""
    load_litellm()


FIRST_CALL_MODULES: Final = (
    "litellm.proxy.openai_files_endpoints.common_utils",
    "litellm._service_logger",
    "litellm.litellm_core_utils.logging_callback_manager",
    "litellm.llms.github_copilot.per_user_auth",
    "litellm.proxy.spend_tracking.savings",
)
"""Modules litellm imports inside every process's first completion rather than at its own
import (file ids in messages, the service logger, the callback manager, the per-user auth
hook, the savings figures of a logging payload). No public API loads them: they are named
here, and tests/cli/test_worker.py::test_a_warm_child_imports_nothing_for_a_cold_run fails
when a litellm release moves one (a missing name is skipped, never an error)."""


def warm_first_call(models: Sequence[str] = ()) -> None:
    """Do now what litellm leaves to a process's first completion, without a request.

    For the warm worker's parent (:func:`judge.cli.warm`): its forked children then start
    with it done. The default tokenizer (``litellm.encoding``: litellm's public lazy
    attribute, read from the file it ships), :data:`FIRST_CALL_MODULES`, the pydantic
    validators of a response and of a call's parameters (built on their first instance),
    and, for each of ``models``, the provider lookups a client makes
    (:meth:`LiteLLMClient._takes`) and a reply's cost lookup, which import that provider's
    modules. None of it touches the network or keeps state a call would not have built the
    same way; a model litellm does not know is skipped (its run says why).
    """
    lit = load_litellm()
    # Each step on its own: a warm-up that a litellm release breaks is skipped, never fatal
    # (the worker would not start, and every command would wait for it, then run directly).
    with contextlib.suppress(Exception):
        lit.encoding  # noqa: B018 - the attribute's first read loads it
    for name in FIRST_CALL_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(Exception):
        lit.ModelResponse()
    with contextlib.suppress(Exception):
        lit.get_api_base(model="", optional_params={})
    with contextlib.suppress(Exception):
        from litellm.types.router import GenericLiteLLMParams

        GenericLiteLLMParams()
    for name in models:
        with contextlib.suppress(Exception):
            model, provider, _, _ = lit.get_llm_provider(name)
            lit.get_supported_openai_params(model=model, custom_llm_provider=provider)
            from litellm.utils import ProviderConfigManager

            # the model-info object a reply's cost lookup asks for: built, never called
            ProviderConfigManager.get_provider_model_info(model, lit.LlmProviders(provider))


def quiet_exit() -> None:
    """Skip litellm's exit-time flush of its logging queue when no callback would read it.

    It measured seconds of wall time at the end of a run and does nothing
    useful for us.
    """
    if _litellm_module is None or _litellm_module.logging_callback_manager.get_all_callbacks():
        return
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    # The flush is registered with atexit by litellm itself, under a private name; its public
    # stop(discard_pending=True) must run inside the run's loop and logs a warning to stderr
    # for what it drops. Held by tests/llm/test_client_respx.py::test_litellm_still_has_what
    # _quiet_exit_reads.
    atexit.unregister(GLOBAL_LOGGING_WORKER._flush_on_exit)


def _price(response: Any) -> float | None:
    """What litellm prices ``response`` at; None for a model it has no price for.

    ``litellm.completion_cost`` raises for an unpriced model (a local server's, a custom
    name): an unknown price is None, never a made-up zero.
    """
    try:
        cost = load_litellm().completion_cost(completion_response=response)
    except Exception:  # litellm refuses in many ways; each one means "no price"
        return None
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def _header(exc: BaseException, name: str) -> str | None:
    # hosted_vllm/ errors carry a synthetic ``.response`` with no headers: the server's
    # headers are only on ``litellm_response_headers`` (a plain dict, or httpx Headers).
    sources = (getattr(exc, "litellm_response_headers", None),
               getattr(getattr(exc, "response", None), "headers", None),
               getattr(exc, "headers", None))
    for headers in sources:
        if headers is not None and hasattr(headers, "items"):
            for key, value in headers.items():
                if isinstance(key, str) and key.lower() == name and value is not None:
                    return str(value)
    return None


async def aclose_clients() -> None:
    """Close litellm's cached HTTP sessions inside the loop that opened them.

    asyncio.run() closes its loop at the end; sessions left open are then only reaped by
    the garbage collector (ResourceWarning: unclosed socket) or by litellm's exit hook,
    which opens a fresh loop just for that. A run closes them itself, once, at the end.
    """
    if _litellm_module is None:
        return
    await _litellm_module.close_litellm_async_clients()
    _litellm_module.in_memory_llm_clients_cache.flush_cache()


def _retry_after(exc: BaseException) -> float | None:
    raw = _header(exc, "retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:  # an HTTP date; a malformed header means "no hint", never a crash of the run
        parsed = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # "-0000" parses naive: HTTP dates are GMT
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return max(0.0, parsed.timestamp() - time.time())


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _rejects_mode(exc: BaseException) -> bool:
    text = str(exc).lower()
    # Narrow on purpose: a 500 mentioning some other "schema" must not downgrade the mode.
    return any(word in text for word in ("response_format", "json_schema", "json_object",
                                         "grammar"))


# A judge that cannot work as configured: the same failure whatever the case.
_CONFIG_NAMES = frozenset({"AuthenticationError", "PermissionDeniedError", "NotFoundError"})
_CONFIG_STATUS = frozenset({401, 403, 404})
_UNKNOWN_MODEL = ("llm provider not provided", "model_not_found", "unknown model",
                  "model not found", "does not exist")
# Connection refused and DNS failures, by the exception types along the cause chain
# (aiohttp for hosted_vllm/, httpx under the OpenAI SDK) and by their words.
_UNREACHABLE_TYPES = frozenset({"ConnectionRefusedError", "gaierror", "ConnectError",
                                "ClientConnectorError", "ClientConnectorDNSError"})
_UNREACHABLE_WORDS = ("connection refused", "connect call failed", "cannot connect to host",
                      "name or service not known", "nodename nor servname",
                      "temporary failure in name resolution", "all connection attempts failed",
                      "getaddrinfo failed", "no address associated with hostname")


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes (bounded: a cycle or a long chain cannot hang a run)."""
    out: list[BaseException] = []
    node: BaseException | None = exc
    while node is not None and len(out) < 12 and node not in out:
        out.append(node)
        node = node.__cause__ or node.__context__
    return out


def _unreachable(exc: BaseException) -> bool:
    return any(type(e).__name__ in _UNREACHABLE_TYPES
               or any(w in str(e).lower() for w in _UNREACHABLE_WORDS) for e in _chain(exc))


_ADDRESS = re.compile(r"host (\[?[\w.:-]+\]?:\d+)|\('([\w.:-]+)', (\d+)\)")


def unreachable_message(exc: BaseException) -> str:
    """One line for a judge whose server cannot be reached, with its fix.

    LiteLLM's own text is a chain of wrappers with an ``ssl.SSLContext`` repr in it: the
    address and what happened are what a reader needs.
    """
    found = None
    for node in _chain(exc):
        match = _ADDRESS.search(str(node))
        if match:
            found = match.group(1) or f"{match.group(2)}:{match.group(3)}"
            break
    where = f" at {found}" if found else ""
    return (f"cannot reach the judge's server{where} (connection refused or unknown host); "
            "fix: start the server, or check --api-base (JUDGE_API_BASE) and --model")


def classify(exc: BaseException, redact: Callable[[str], str] | None = None) -> ProviderError:
    """Map any exception from a call to a retryable or permanent provider error.

    ``configuration`` is set for what no retry and no other case would fix: an unknown
    model or provider, a refused key (401/403), a model the server does not have (404), a
    host that refuses connections or does not resolve. ``redact`` masks secrets in the
    message (a provider may echo the key back in a 401 body).
    """
    status = _status(exc)
    name = type(exc).__name__
    # Some provider errors carry a traceback in their text: keep the message, not the dump.
    text = str(exc).split(" Traceback (most recent call last)")[0]
    message = f"{name}: {text.splitlines()[0][:300] if text else name}"
    message = (redact or Redactor())(message)
    lowered = text.lower()
    if status == 429 or name == "RateLimitError":
        return ProviderError(message, status=429, retry_after=_retry_after(exc))
    if name in {"Timeout", "APITimeoutError"} or status == 408:
        return ProviderError(message, status=408)
    configuration = name in _CONFIG_NAMES or status in _CONFIG_STATUS or (
        name == "BadRequestError" and any(w in lowered for w in _UNKNOWN_MODEL))
    if status is not None and 400 <= status < 500:
        return PermanentProviderError(message, status=status, configuration=configuration)
    if name in {"UnsupportedParamsError", "BadRequestError", "AuthenticationError",
                "NotFoundError", "PermissionDeniedError", "ContextWindowExceededError"}:
        return PermanentProviderError(message, status=status, configuration=configuration)
    if _unreachable(exc):
        return ProviderError(unreachable_message(exc), status=status, configuration=True)
    return ProviderError(message, status=status)


class _ModeRejected(Exception):
    def __init__(self, cause: ProviderError) -> None:
        self.cause = cause
        super().__init__(str(cause))


class LiteLLMClient:
    """Calls judge models through LiteLLM with one retry layer and output-mode fallback."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.attempts = 0
        """Requests sent on the wire (retries and fallbacks included)."""
        self.retries = 0
        self.ledger = CallCounts()
        """The same requests itemised: first requests, repair turns, retries by reason."""
        self._mode_override: dict[str, OutputMode] = {}
        self.engine = dict(spec.engine) if spec.engine else None
        self.max_concurrency = spec.max_concurrency
        self.answered = 0
        """Attempts the server answered (a host that answered once is not misconfigured)."""
        self._redact = spec.redact or Redactor(secret_values({}, extra=[spec.api_key]))
        self._params: frozenset[str] | None = None
        self._params_asked = False
        self._marks = spec.name.startswith(_CACHE_MARKER_PREFIXES)
        self._prefixes: set[str] = set()

    def _takes(self, lit: Any, param: str) -> bool:
        """Whether the provider takes ``param``, asked of LiteLLM once per client.

        Anthropic has no ``seed``: LiteLLM refuses the whole call with
        ``UnsupportedParamsError`` rather than drop it.
        """
        if not self._params_asked:
            self._params_asked = True
            try:
                model, provider, _, _ = lit.get_llm_provider(self.spec.name,
                                                             api_base=self.spec.api_base)
                names = lit.get_supported_openai_params(model=model,
                                                        custom_llm_provider=provider)
            except Exception:  # an unknown provider fails on the call itself, with its reason
                names = None
            self._params = frozenset(names) if names else None
        return self._params is None or param in self._params

    def _mark(self, messages: Sequence[Mapping[str, str]], fmt: Any) -> bool:
        """Mark the stable prefix once it has been seen before from this client.

        Anthropic's prefix is tools (our schema, when one is sent), then the system message:
        a schema that differs per case (its citation enum) makes every prefix new, and a
        breakpoint on a prefix never seen again is only a cache write, billed above the
        input rate. So the first request with a given prefix goes unmarked, later ones are
        marked: the second writes the cache, the rest read it.
        """
        if not self._marks or not messages:
            return False
        digest = sha256_hex([fmt, dict(messages[0])])
        if digest in self._prefixes:
            return True
        if len(self._prefixes) >= _PREFIXES_KEPT:
            self._prefixes.clear()
        self._prefixes.add(digest)
        return False

    def _response_format(self, mode: OutputMode, schema: Mapping[str, Any] | None) -> Any:
        return response_format(mode, schema)  # kept for bench/run.py

    async def _attempt(self, request: JudgeRequest, messages: Sequence[Mapping[str, str]],
                       mode: OutputMode) -> Completion:
        lit = load_litellm()
        kwargs = request_body(self.spec.name, request, mode, messages,
                              mark=self._mark(messages, response_format(mode, request.schema)))
        if "seed" in kwargs and not self._takes(lit, "seed"):
            del kwargs["seed"]
        kwargs |= {"timeout": self.spec.timeout, "num_retries": 0, "max_retries": 0}
        if self.spec.api_base:
            kwargs["api_base"] = self.spec.api_base
        if self.spec.api_key:
            kwargs["api_key"] = self.spec.api_key
        self.attempts += 1
        started = time.perf_counter()
        try:
            response = await lit.acompletion(**kwargs)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # every failure is classified below; nothing escapes raw
            err = classify(exc, self._redact)
            if mode != "prompt" and err.status in {400, 422, 500} and _rejects_mode(exc):
                raise _ModeRejected(err) from exc
            raise err from exc
        latency = (time.perf_counter() - started) * 1000
        self.answered += 1
        try:
            turn = self._turn(response, latency, mode)
            # A reply is data: a key the judge repeats (its own, or one it read in the
            # prompt) is masked before anything stores, parses or shows it.
            return dataclasses.replace(turn, text=self._redact(turn.text),
                                       cost_usd=0.0 if self.spec.on_this_machine
                                       else turn.cost_usd)
        except (IndexError, AttributeError, TypeError) as exc:
            # A 200 whose body has no usable choice (``"choices": []``, e.g. a provider's
            # content filter): a failed attempt like any other, never a crash of the run.
            raise ProviderError(self._redact(
                f"malformed completion: {type(exc).__name__}: {exc}")) from exc

    @staticmethod
    def _turn(response: Any, latency_ms: float, mode: OutputMode) -> Completion:
        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        cost = _price(response)
        fingerprint = getattr(response, "system_fingerprint", None)
        details = getattr(usage, "prompt_tokens_details", None)
        return Completion(
            text=choice.message.content or "",
            finish_reason=getattr(choice, "finish_reason", None),
            model_reported=getattr(response, "model", None),
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            cost_usd=cost,
            latency_ms=round(latency_ms, 3),
            output_mode=mode,
            system_fingerprint=fingerprint if isinstance(fingerprint, str) else None,
            cached_tokens=token_count(getattr(details, "cached_tokens", None)),
            cache_write_tokens=token_count(getattr(usage, "cache_creation_input_tokens", None)),
            logprobs=_logprobs(getattr(choice, "logprobs", None)),
        )

    def _wait(self, state: Any) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ProviderError) and exc.retry_after is not None:
            return min(exc.retry_after, self.spec.retry_after_cap)
        backoff = wait_random_exponential(multiplier=self.spec.backoff_base,
                                          max=self.spec.backoff_max)
        return float(backoff(state))

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        """One completion, retried on transport faults; ``messages`` overrides for a repair turn."""
        msgs = messages if messages is not None else request.messages
        # A repair turn carries the original messages plus the reply and the errors shown.
        if len(msgs) <= len(request.messages):
            self.ledger.requests += 1
        else:
            self.ledger.repair_turns += 1
        first = self._mode_override.get(request.model) or resolve_output_mode(
            self.spec.name, request.output_mode)
        modes = list(OUTPUT_MODES[OUTPUT_MODES.index(first):])
        for index, mode in enumerate(modes):
            retrying = AsyncRetrying(
                stop=stop_after_attempt(max(1, self.spec.max_attempts)),
                wait=self._wait,
                retry=retry_if_exception(self._transient),
                reraise=True,
                before_sleep=self._count_retry,
            )
            try:
                turn: Completion = await retrying(self._attempt, request, msgs, mode)
                return turn
            except _ModeRejected as rejected:
                if index + 1 == len(modes):
                    raise PermanentProviderError(str(rejected.cause),
                                                 status=rejected.cause.status) from None
                self._mode_override[request.model] = modes[index + 1]
                self.ledger.fallbacks += 1
        raise AssertionError("unreachable")  # pragma: no cover

    def _transient(self, exc: BaseException) -> bool:
        # A refused connection or an unknown host is retried only once the server has
        # answered: before that it is a judge that cannot work, found on the first call.
        return isinstance(exc, ProviderError) and not isinstance(exc, PermanentProviderError) \
            and not (exc.configuration and not self.answered) \
            and (self.spec.retry_timeouts or exc.status != 408)

    def _count_retry(self, state: Any) -> None:
        self.retries += 1
        exc = state.outcome.exception() if state.outcome else None
        cause = exc.__cause__ if exc is not None and exc.__cause__ is not None else exc
        status = exc.status if isinstance(exc, ProviderError) else None
        self.ledger.retried(retry_reason(status, type(cause).__name__))
