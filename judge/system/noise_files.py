"""Noise model files: ``<baselines_dir>/noise/<key>.json``, committed beside the baselines.

A model's file name is its key (judge model, rubric hash, template hash), so a change of any
of the three looks for another file: an old model is never applied to a new judge, rubric or
template. The logic is in :mod:`judge.core.stats.noise`; this module only moves text.

A noise model decides the gate (a spread edited from 2 to 50 turned a real regression into
"within noise"), so its file is sealed as a baseline is (:mod:`judge.core.text.seals`): read
strictly, bounded, and refused when its digest, or under the team secret its seal, does
not verify.
"""

from __future__ import annotations

from pathlib import Path

from ..core.formats.limits import MAX_NOISE_BYTES
from ..core.stats.noise import NoiseModel
from ..core.text.errors import ConfigError, UsageError
from ..core.text.seals import Sealer, checked_file, sealed_text
from ..core.text.strict_json import strict_document
from .atomic_files import write_atomic
from .input_files import read_input

__all__ = ["NOISE_DIR", "load_noise", "noise_path", "parse_noise", "save_noise"]

NOISE_DIR = "noise"
"""Folder inside the baselines folder."""

_FIX = ("measure it again (`judge judges noise RUN` from a --samples run, or `judge judges noise "
        "probe SUITE`), with JUDGE_CACHE_SECRET set if the team uses one; never edit it by hand")


def noise_path(baselines: Path, key: str) -> Path:
    """Where the noise model with ``key`` lives."""
    return baselines / NOISE_DIR / f"{key}.json"


def parse_noise(text: str, source: str, key: str, sealer: Sealer) -> NoiseModel:
    """A noise model file's model; ConfigError naming ``source``, the place and the fix."""
    model = checked_file(strict_document(text, source, ConfigError, _FIX), source, NoiseModel,
                         sealer, error=ConfigError, what="a noise model", fix=_FIX)
    if model.key != key:
        raise ConfigError(f"noise model key {model.key!r} does not match its file name",
                          file=source, where="key", fix=_FIX)
    return model


def load_noise(baselines: Path, key: str, sealer: Sealer) -> NoiseModel | None:
    """The stored noise model with ``key``, or None; ConfigError naming a damaged file."""
    path = noise_path(baselines, key)
    if not path.exists() and not path.is_symlink():
        return None
    text = read_input(path, ConfigError, MAX_NOISE_BYTES, _FIX)
    return parse_noise(text, str(path), key, sealer)


def save_noise(baselines: Path, model: NoiseModel, sealer: Sealer) -> Path:
    """Write ``model`` whole (stable JSON, sealed); returns its path."""
    path = noise_path(baselines, model.key)
    try:
        write_atomic(path, sealed_text(model, sealer))
    except OSError as exc:
        raise UsageError(f"cannot write noise model {path}: {exc}",
                         fix="check the folder's permissions and free space") from None
    return path
