"""Effective settings: default < ``judge.toml`` or ``[tool.judge]`` < environment < overrides.

One pydantic model, :class:`Settings`, defines every setting and its default once; the
file, the environment and a door's overrides (CLI flags, an HTTP body, a pytest option)
are layers over it. Every value remembers where it came from, so ``judge workspace config`` can say
why a run used it. API keys are not settings: providers' keys stay in their usual
environment variables, and a credential inside a URL is masked whenever settings are shown.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator

from ...core.formats.limits import MAX_SETTINGS_BYTES
from ...core.text.errors import UsageError
from ...core.text.frozen import Frozen
from ...core.text.seals import SECRET_ENV
from ...core.text.strict_json import string_problem
from ...core.text.validation_text import format_validation_error
from ...llm.local_weights import WEIGHTS_ENV
from ...system.input_files import read_input
from .bind import TOKEN_ENV

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_SUITE_GLOBS",
    "ENVIRONMENT",
    "ENV_ONLY",
    "ENV_PREFIX",
    "FLAG_ONLY",
    "LOCAL_DEFAULTS",
    "LOCAL_DEFAULT_SOURCE",
    "MAX_SEED",
    "CacheModeName",
    "Settings",
    "ci_set",
    "embedded_defaults",
    "env_name",
    "load_settings",
]

ENV_PREFIX = "JUDGE_"
ENV_ONLY: Final = frozenset({"worker"})
"""Settings a workspace's file cannot set: a cloned repository must not start a process that
holds the caller's keys (:func:`judge.worker.client.enabled`)."""
FLAG_ONLY: Final = frozenset({"cache_allow_unsigned"})
"""Settings only a command's own flag sets (neither a file nor the environment): a waiver of
a check is given per command, never left on for every command after it."""
API_KEY_ENV: Final = "JUDGE_API_KEY"
"""The judges' API key when the provider's own variable is not the one to use."""
ENVIRONMENT: Final[Mapping[str, str]] = {
    # The variables that are not settings: what they are, and why no file can hold them.
    SECRET_ENV: "The team's secret: signs shared cache rows and exports, keys the "
                          "seals of stored rows, baselines, noise, calibration and labels "
                          "files. A secret, so never in a file a repository holds.",
    TOKEN_ENV: "The bearer token every HTTP write needs, and any bind beyond "
                          "loopback. A secret, so never in a file.",
    API_KEY_ENV: "The API key sent to every hosted judge (and to the api_base server) when "
                 "set; else each provider's own variable (OPENAI_API_KEY...). A secret, so "
                 "never in a file.",
    "JUDGE_NO_WORKER": "`1`: never use the warm worker, whatever JUDGE_WORKER says (CI "
                       "does so by itself).",
    WEIGHTS_ENV: "`packaged`: serve the embedded judge's packaged weights as "
                           "they are, instead of their F16 copy (`f16`, the default).",
    "JUDGE_DEBUG": "`1`: an internal error (exit 70) prints its traceback.",
    "CI": "Set (and not `0`, `false` or `no`): a missing baseline fails the gate "
          "(`require_baseline`), the warm worker is off.",
}
"""Environment variables that are not settings, each with its one line for the reference."""
MAX_SEED = 2**63 - 1
"""Providers take a 64-bit signed seed; a larger one is refused here, not by a crash later."""

DEFAULT_SUITE_GLOBS = ("suites/**/*.yaml", "suites/**/*.yml", "suites/**/*.jsonl",
                      "examples/*/suite.yaml")
"""Where a workspace's suites are unless the ``suites`` setting says otherwise."""

LOCAL_DEFAULTS: Final[Mapping[str, Any]] = {"template": "judge-small", "score_mode": "expected"}
"""What the embedded judge gets where these settings are not given: the short prompt written
for small models and the probability-weighted score (docs/embedded-judge.md). With the
``judge`` template and written answers SmolLM2-135M answered 0 to 39 of 42 scores; with these
its scores vary with the case."""
LOCAL_DEFAULT_SOURCE: Final = "default for local/ judges"
"""The source ``judge workspace config`` names for a value :data:`LOCAL_DEFAULTS` set."""

_PATH_SETTINGS: Final = frozenset({"rubric", "cache_dir", "baselines_dir", "suites"})
"""Settings that name files or folders: taken as written, whatever their bytes."""

CacheModeName = Literal["read-write", "read-only", "offline", "refresh", "off"]


_HTTP_URL: Final = re.compile(
    r"https?://(?:[^\s/?#@]+@)?(?:\[[0-9A-Fa-f:.]+\]|[^\s/?#@:\[\]]+)(?::\d{1,5})?(?:[/?#]\S*)?")
"""A model server's base URL: http(s), a host, no whitespace (``file:///etc/passwd`` is none)."""

_STORE_URL: Final = re.compile(r"(?:sqlite(?:\+pysqlite)?|postgresql(?:\+psycopg)?)://")
"""The run store engines judgeflow speaks (SQLite, PostgreSQL through psycopg)."""


class Settings(Frozen):
    """Every setting of a workspace, with its one default; a typo is an error, not ignored."""

    model: tuple[str, ...] = ()
    """Judge models by LiteLLM name (``openai/gpt-4o-mini``, ``hosted_vllm/x``,
    ``local/smollm2``); several make a panel. A comma-separated string is accepted."""
    rubric: str | None = None
    """Rubric id or path; default: the suite's own, else ``task-evaluation``."""
    concurrency: int = Field(default=16, ge=1, le=1024)
    """Model calls in flight."""
    cache_dir: str = "cache"
    """Cache folder, relative to the workspace."""
    cache_mode: CacheModeName = "read-write"
    """How the cache is used: read-write, read-only, offline, refresh or off."""
    store_url: str = "sqlite:///.judge/judge.db"
    """Run store URL; a relative SQLite path is relative to the workspace."""
    cache_url: str | None = None
    """Shared cache tier behind the local cache (``postgresql+psycopg://user@host/db``): a
    local miss asks it before the model, new verdicts go to both; unset: local only."""
    cache_require_signed: bool = False
    """Refuse to use the shared tier without ``JUDGE_CACHE_SECRET`` (and refuse
    ``--allow-unsigned-shared``). With the secret set, shared rows must be signed whatever
    this says; this makes the secret itself required, for a team whose writers all hold it."""
    cache_allow_unsigned: bool = False
    """Take unsigned shared-tier rows although ``JUDGE_CACHE_SECRET`` is set (their digests
    checked, not who wrote them). A command's ``--allow-unsigned-shared`` only: a file or the
    environment cannot waive signatures."""
    seed: int | None = Field(default=42, ge=0, le=MAX_SEED)
    """Judge seed (sample k uses seed + k); None sends none."""
    temperature: float = Field(default=0.0, ge=0, le=2)
    """Sampling temperature sent to the judge."""
    output_mode: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    """Structured-output mode; auto picks per model."""
    stable_schema: bool = False
    """Send one schema per rubric (citations checked after the reply, not by a per-case
    enum), so providers' prompt caches reuse schema + system message across cases."""
    api_base: str | None = None
    """Base URL of the model server (an OpenAI-compatible ``…/v1``)."""
    timeout: float = Field(default=60.0, gt=0, le=86_400)
    """Seconds per model request (a local judge: per judgment queued ahead, default 900 s)."""
    max_attempts: int = Field(default=4, ge=1, le=20)
    """Attempts per request on transport faults (429, 5xx, timeouts, connection errors)."""
    max_repairs: int = Field(default=1, ge=0, le=5)
    """Repair turns for an invalid verdict before the case is unscored."""
    max_tokens: int = Field(default=1024, ge=16, le=1_000_000)
    """Completion token limit per judge call."""
    template: str = "judge"
    """Prompt template id (``prompts/<id>.md.j2``); ``local/`` judges: ``judge-small``
    unless set."""
    score_mode: Literal["direct", "expected"] = "direct"
    """``direct``: the AI score is the answer the judge wrote; ``expected``: the
    probability-weighted value over the allowed answers, from the reply's log-probabilities
    (OpenAI ``logprobs``/``top_logprobs``, llama.cpp's server); no log-probabilities: unscored.
    ``local/`` judges: ``expected`` unless set."""
    samples: int = Field(default=1, ge=1, le=50)
    """Judge each case K times (seed, seed+1, ...); their ``sample_aggregate`` heads."""
    sample_aggregate: Literal["mean", "median"] = "mean"
    """How a judge's K samples combine, per category: the mean (as the published
    meta-evaluations average n samples) or the median; with ``score_mode = "expected"`` each
    sample is already the probability-weighted score. Recorded per run; the gate,
    ``judge judges agreement`` and ``judge compare`` read the one aggregate."""
    panel: Literal["median", "mean"] = "median"
    """How several judges' AI scores combine into the panel result, per category."""
    threshold: float = Field(default=0.05, ge=0, le=1)
    """Largest allowed drop of the mean overall score, as a fraction of 0..100."""
    block_on_regression: bool = True
    """A regression exits non-zero (the gate blocks)."""
    require_baseline: bool | None = None
    """A missing baseline fails the gate (not compared, exit 5) naming the file to commit,
    instead of recording one; unset: on when the environment has ``CI`` set."""
    across_judges: bool = False
    """Compare with a baseline recorded under another judge, rubric or template too (the
    verdict says so); off: such a run is not compared (exit 5)."""
    baselines_dir: str = "baselines"
    """Folder of baseline files (``<suite>.json``), relative to the workspace."""
    suites: tuple[str, ...] = DEFAULT_SUITE_GLOBS
    """Where the workspace's suites are (``judge workspace serve`` lists them by id): glob patterns
    relative to the workspace; a comma-separated string is accepted."""
    monitor_rate: float = Field(default=0.1, ge=0, le=1)
    """Production monitor: the fraction of live records sampled and judged."""
    monitor_seed: int = Field(default=0, ge=0)
    """Production monitor: changes which records are sampled, reproducibly."""
    monitor_min_samples: int = Field(default=20, ge=1)
    """Production monitor: scored samples needed before a verdict."""
    monitor_window: int = Field(default=1000, ge=1, le=1_000_000)
    """Production monitor: the last N records received per suite that the verdict covers."""
    server_max_body: int = Field(default=16 * 1024 * 1024, ge=1024, le=1024 ** 3)
    """``judge workspace serve``: the largest request body in bytes (larger: 413, never read)."""
    server_hosts: tuple[str, ...] = ()
    """``judge workspace serve``: the names the ``Host`` header may carry besides the bind address
    (and, on loopback, ``localhost``); any other is refused (DNS rebinding). A
    comma-separated string is accepted."""
    worker: bool = False
    """Run commands in the warm worker (docs/worker.md). Environment only (``JUDGE_WORKER=1``):
    a workspace's settings file is a file a cloned repository controls, and the worker is a
    long-lived process holding your keys; there it is ignored with a notice.
    ``JUDGE_NO_WORKER=1`` and ``CI`` turn it off. Read by the entry point before the
    application."""
    worker_idle: float = Field(default=600.0, gt=0, le=86_400)
    """Seconds the warm worker stays up with no command before it ends."""

    @field_validator("*", mode="after")
    @classmethod
    def _text(cls, value: Any, info: ValidationInfo) -> Any:
        # A byte that is not UTF-8 in a flag or a variable reads as a lone surrogate, which
        # breaks the first UTF-8 write of the value (a cache key, a stored run): exit 70.
        # A setting that names files may hold any bytes, as a file name may.
        if info.field_name in _PATH_SETTINGS:
            return value
        texts = value if isinstance(value, tuple) else (value,)
        why = next((w for t in texts if isinstance(t, str) and (w := string_problem(t))), None)
        if why is not None:
            raise ValueError(f"not text: {why}; fix: write the value in UTF-8")
        return value

    @field_validator("model", "suites", "server_hosts", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, str):
            return tuple(m.strip() for m in value.split(",") if m.strip())
        return value

    @field_validator("model", mode="after")
    @classmethod
    def _named(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not name.strip() or name != name.strip():
                raise ValueError(f"model name {name!r} is empty or has spaces around it; "
                                 "fix: give a LiteLLM model name, e.g. openai/gpt-4o-mini")
        return value

    @field_validator("rubric", "template", mode="after")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("an empty name; fix: give an id (task-evaluation) or a path, "
                             "or leave the setting out for the default")
        return value

    @field_validator("api_base", mode="after")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not _HTTP_URL.fullmatch(value):
            shown = value if len(value) <= 80 else value[:80] + "… [cut]"
            raise ValueError(f"{shown!r} is not an http(s) URL; fix: give the model "
                             "server's base URL, e.g. http://127.0.0.1:8080/v1")
        return value

    @field_validator("store_url", mode="after")
    @classmethod
    def _store_scheme(cls, value: str) -> str:
        if not _STORE_URL.match(value):
            shown = value if len(value) <= 80 else value[:80] + "… [cut]"
            raise ValueError(f"{shown!r} is not a run store URL; fix: "
                             "sqlite:///.judge/judge.db (a file) or "
                             "postgresql+psycopg://HOST/DB")
        return value

    @field_validator("suites")
    @classmethod
    def _inside(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            if pattern.startswith(("/", "\\")) or ".." in pattern.replace("\\", "/").split("/"):
                raise ValueError(f"suite pattern {pattern!r} must stay inside the workspace "
                                 "(relative, no '..')")
        return value

    @property
    def models(self) -> tuple[str, ...]:
        """The judge models (empty: none configured)."""
        return self.model


def _file_values(workspace: Path) -> tuple[dict[str, Any], str | None]:
    judge_toml = workspace / "judge.toml"
    pyproject = workspace / "pyproject.toml"
    for path, section in ((judge_toml, None), (pyproject, ("tool", "judge"))):
        if path.is_dir():
            raise UsageError("is a folder, not a settings file", file=str(path),
                             fix=f"remove or rename the folder; settings go in a {path.name} "
                                 "file")
        if not path.exists():
            continue
        # A FIFO or a device is refused by type, never read (judge.system.input_files).
        text = read_input(path, UsageError, MAX_SETTINGS_BYTES)
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"invalid TOML: {exc}", file=str(path),
                             fix="check the syntax near the place named") from None
        except RecursionError:
            raise UsageError("nested too deeply to read", file=str(path),
                             fix="flatten the arrays and tables; settings nest a level or "
                                 "two") from None
        if section is not None:
            for part in section:
                data = data.get(part) if isinstance(data, dict) else None
            if data is None:
                continue
        where = "[tool.judge]" if section else None
        try:
            Settings.model_validate(data)
        except ValidationError as exc:
            place, msg = format_validation_error(exc)
            msg, fix = _split_fix(msg, "see `judge workspace config` for the known settings")
            raise UsageError(msg, file=str(path), where=f"{where + '.' if where else ''}{place}",
                             fix=fix) from None
        return dict(data), path.name if section is None else "pyproject.toml [tool.judge]"
    return {}, None


def _split_fix(message: str, default: str) -> tuple[str, str]:
    """A validator's ``problem; fix: what to do`` as (problem, fix)."""
    problem, marker, fix = message.partition("; fix: ")
    return (problem, fix) if marker else (message, default)


def env_name(setting: str) -> str:
    """The environment variable of a setting: ``JUDGE_`` and its name in capitals."""
    return ENV_PREFIX + setting.upper()


def _env_values(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for name in Settings.model_fields:
        raw = env.get(env_name(name))
        if raw is not None and raw != "":
            out[name] = (raw, f"env {env_name(name)}")
    return out


def load_settings(workspace: Path, overrides: Mapping[str, Any] | None,
                  env: Mapping[str, str]) -> tuple[Settings, dict[str, str]]:
    """Merge the layers; ``overrides`` holds only values a door was actually given (None: unset).

    Returns the validated settings and, per setting, where its value came from
    (``default``, ``judge.toml``, ``pyproject.toml [tool.judge]``, ``env JUDGE_X``, ``flag``).
    """
    values: dict[str, Any] = {}
    sources = dict.fromkeys(Settings.model_fields, "default")
    file_values, file_name = _file_values(workspace)
    for key, value in file_values.items():
        if key in ENV_ONLY | FLAG_ONLY:
            only = "environment" if key in ENV_ONLY else "a command's flag"
            sources[key] = f"default ({key} in {file_name} is ignored: {only} only)"
            continue
        values[key], sources[key] = value, file_name or "file"
    for key, (raw, source) in _env_values(env).items():
        if key in FLAG_ONLY:
            sources[key] = f"default ({source} is ignored: a command's flag only)"
            continue
        values[key], sources[key] = raw, source
    for key, value in (overrides or {}).items():
        if key not in Settings.model_fields:
            raise UsageError(f"unknown setting {key!r}", fix="see `judge workspace config`")
        if value is not None:
            values[key], sources[key] = value, "flag"
    try:
        settings = Settings.model_validate(values)
    except ValidationError as exc:
        place, msg = format_validation_error(exc)
        msg, fix = _split_fix(msg, "correct the value")
        raise UsageError(msg, where=f"setting {place} (from {sources.get(place, '?')})",
                         fix=fix) from None
    return embedded_defaults(settings, sources)


def ci_set(env: Mapping[str, str]) -> bool:
    """The environment says this is CI: ``CI`` set and not ``0``, ``false`` or ``no``."""
    return env.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def embedded_defaults(settings: Settings,
                      sources: Mapping[str, str]) -> tuple[Settings, dict[str, str]]:
    """``settings`` with :data:`LOCAL_DEFAULTS` where the judges are local and not given.

    No judge configured counts as local: the embedded judge is then the default one.
    """
    if any(not name.startswith("local/") for name in settings.model):
        return settings, dict(sources)
    unset = {k: v for k, v in LOCAL_DEFAULTS.items() if sources.get(k, "default") == "default"}
    if not unset:
        return settings, dict(sources)
    return (settings.model_copy(update=unset),
            {**sources, **dict.fromkeys(unset, LOCAL_DEFAULT_SOURCE)})
