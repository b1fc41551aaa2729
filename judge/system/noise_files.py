"""Noise model files: ``<baselines_dir>/noise/<key>.json``, committed beside the baselines.

A model's file name is its key (judge model, rubric hash, template hash), so a change of any
of the three looks for another file: an old model is never applied to a new judge, rubric or
template. The logic is in :mod:`judge.core.noise`; this module only moves text.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from ..core.canonical import stable_json
from ..core.errors import ConfigError, UsageError
from ..core.noise import NoiseModel
from ..core.rubric import format_validation_error
from .atomic_files import write_atomic

__all__ = ["NOISE_DIR", "load_noise", "noise_path", "save_noise"]

NOISE_DIR = "noise"
"""Folder inside the baselines folder."""


def noise_path(baselines: Path, key: str) -> Path:
    """Where the noise model with ``key`` lives."""
    return baselines / NOISE_DIR / f"{key}.json"


def load_noise(baselines: Path, key: str) -> NoiseModel | None:
    """The stored noise model with ``key``, or None; ConfigError naming a damaged file."""
    path = noise_path(baselines, key)
    if not path.is_file():
        return None
    fix = "delete the file and measure again (`judge noise measure RUN`)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = NoiseModel.model_validate(data)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read noise model: {exc}", file=str(path), fix=fix) from None
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise ConfigError(msg, file=str(path), where=where, fix=fix) from None
    if model.key != key:
        raise ConfigError(f"noise model key {model.key!r} does not match its file name",
                          file=str(path), where="key", fix=fix)
    return model


def save_noise(baselines: Path, model: NoiseModel) -> Path:
    """Write ``model`` whole (stable JSON); returns its path."""
    path = noise_path(baselines, model.key)
    try:
        write_atomic(path, stable_json(model.model_dump(mode="json")))
    except OSError as exc:
        raise UsageError(f"cannot write noise model {path}: {exc}",
                         fix="check the folder's permissions and free space") from None
    return path
