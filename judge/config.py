"""Effective settings: defaults < ``judge.toml`` or ``[tool.judge]`` < environment < flags.

Every value remembers where it came from, so ``judge config`` can say why a run used it.
API keys are not settings: providers' keys stay in their usual environment variables.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import UsageError
from .rubric import format_validation_error

__all__ = ["ENV_PREFIX", "Config", "FileSettings", "load_config"]

ENV_PREFIX = "JUDGE_"


class FileSettings(BaseModel):
    """What ``judge.toml`` (or ``[tool.judge]``) may set; a typo is an error, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: list[str] | str | None = None
    """Judge models by LiteLLM name: ``openai/gpt-4o-mini``, ``hosted_vllm/x``."""
    rubric: str | None = None
    concurrency: int = Field(default=16, ge=1, le=1024)
    cache_dir: str = "cache"
    cache_mode: Literal["read-write", "read-only", "offline", "refresh", "off"] = "read-write"
    store_url: str = "sqlite:///.judge/judge.db"
    seed: int | None = 42
    temperature: float = Field(default=0.0, ge=0, le=2)
    output_mode: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    api_base: str | None = None
    timeout: float = Field(default=60.0, gt=0)
    max_attempts: int = Field(default=4, ge=1, le=20)
    max_repairs: int = Field(default=1, ge=0, le=5)
    max_tokens: int = Field(default=1024, ge=16)
    llm: bool = True
    """Judge LLM cases (``--no-llm`` runs only the deterministic ones)."""
    template: str = "judge"
    samples: int = Field(default=1, ge=1, le=50)
    panel: Literal["median", "mean"] = "median"
    """How several judges' AI scores combine into the panel result, per category."""
    threshold: float = Field(default=0.05, ge=0, le=1)
    block_on_regression: bool = True
    baselines_dir: str = "baselines"


_DEFAULTS = FileSettings()


@dataclass(frozen=True)
class Config:
    """Effective values and their sources."""

    values: Mapping[str, Any]
    sources: Mapping[str, str]
    workspace: Path

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def models(self) -> list[str]:
        """Judge models as a list (one or several)."""
        value = self.values.get("model")
        if value is None:
            return []
        if isinstance(value, str):
            return [m.strip() for m in value.split(",") if m.strip()]
        return list(value)


def _file_values(workspace: Path) -> tuple[dict[str, Any], str | None]:
    judge_toml = workspace / "judge.toml"
    pyproject = workspace / "pyproject.toml"
    for path, section in ((judge_toml, None), (pyproject, ("tool", "judge"))):
        if not path.is_file():
            continue
        try:
            data: Any = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"invalid TOML: {exc}", file=str(path),
                             fix="check the syntax near the place named") from None
        if section is not None:
            for part in section:
                data = data.get(part) if isinstance(data, dict) else None
            if data is None:
                continue
        where = "[tool.judge]" if section else None
        try:
            FileSettings.model_validate(data)
        except ValidationError as exc:
            place, msg = format_validation_error(exc)
            raise UsageError(msg, file=str(path), where=f"{where + '.' if where else ''}{place}",
                             fix="see `judge config` for the known settings") from None
        return dict(data), path.name if section is None else "pyproject.toml [tool.judge]"
    return {}, None


def _env_values(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for name in FileSettings.model_fields:
        raw = env.get(ENV_PREFIX + name.upper())
        if raw is not None and raw != "":
            out[name] = (raw, f"env {ENV_PREFIX}{name.upper()}")
    return out


def load_config(workspace: Path, flags: Mapping[str, Any] | None = None,
                env: Mapping[str, str] | None = None) -> Config:
    """Merge the layers; ``flags`` holds only values the user actually passed."""
    env = os.environ if env is None else env
    values: dict[str, Any] = _DEFAULTS.model_dump()
    sources = dict.fromkeys(values, "default")
    file_values, file_name = _file_values(workspace)
    for key, value in file_values.items():
        values[key], sources[key] = value, file_name or "file"
    for key, (raw, source) in _env_values(env).items():
        values[key], sources[key] = raw, source
    for key, value in (flags or {}).items():
        if value is not None:
            values[key], sources[key] = value, "flag"
    try:
        checked = FileSettings.model_validate(
            {k: v for k, v in values.items() if k in FileSettings.model_fields})
    except ValidationError as exc:
        place, msg = format_validation_error(exc)
        raise UsageError(msg, where=f"setting {place} (from {sources.get(place, '?')})",
                         fix="correct the value") from None
    merged = checked.model_dump()
    return Config(values=merged, sources=sources, workspace=workspace)
