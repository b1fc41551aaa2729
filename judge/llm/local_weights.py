"""The weights the local server computes with: F16 derived once from the packaged GGUF.

The packaged SmolLM2 file is Q4_1. llama.cpp's CPU build has no fast matrix path for Q4_1
(its AVX2 repacking and llamafile's sgemm take Q4_0, Q8_0 and F16), so on these 2-core
machines it evaluated judge prompts at ~140 tokens/s; the same weights converted to F16
evaluate them at ~240-300 tokens/s. A judgment is 1,000-2,000 prompt tokens to evaluate and
~140 to generate, and generation gets a little slower (more bytes read a token), so the
example suite took 0.87-0.94x the time. The conversion
dequantizes each Q4_1 block (``d * q + m``) and stores it as F16: the same model up to F16
rounding (a probe verdict came back byte-identical), 271 MB instead of 98 MB, derived in
about a second.

The derived file is kept in the user's cache directory (``$XDG_CACHE_HOME/judgeflow/models``
or ``~/.cache/...``), named by the packaged file's SHA-256, so it is derived once per
machine and a changed package gives a new file; it is written under a temporary name and
renamed, so a killed conversion leaves nothing that looks finished. Where that directory
cannot be written, the workspace's ``.judge/llm/local/`` is used.

``JUDGE_LOCAL_WEIGHTS=packaged`` serves the packaged file as it is (``f16``, the default,
derives). Either way the choice and the digest are recorded with every verdict (the engine
information of the cache entry): verdict bytes are reproducible per weights, not across them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import TypedDict

from ..core.text.errors import UsageError
from ..system.atomic_files import atomic_path

__all__ = ["WEIGHTS", "WEIGHTS_ENV", "WeightsInfo", "derive_f16", "file_digest", "served_weights",
           "weights_choice"]

WEIGHTS_ENV = "JUDGE_LOCAL_WEIGHTS"
WEIGHTS = ("f16", "packaged")
DERIVE_TIMEOUT = 300.0


class WeightsInfo(TypedDict, total=False):
    """Which weights a local server computes with, as recorded with its verdicts."""

    weights: str
    """``F16`` (derived from the packaged file) or ``packaged``."""
    weightsFrom: str
    weightsFromSha256: str
    weightsSha256: str


def weights_choice(env: dict[str, str] | None = None) -> str:
    """``f16`` (default) or ``packaged``, from :data:`WEIGHTS_ENV`."""
    value = (os.environ if env is None else env).get(WEIGHTS_ENV, "").strip().lower() or "f16"
    if value not in WEIGHTS:
        raise UsageError(f"{WEIGHTS_ENV}={value!r} is not a weights choice",
                         fix=f"set it to one of: {', '.join(WEIGHTS)} (or unset it)")
    return value


def file_digest(path: Path) -> str:
    """SHA-256 of a file, streamed."""
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            sha.update(chunk)
    return sha.hexdigest()


def _cache_dirs(fallback: Path) -> list[Path]:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return [Path(base) / "judgeflow" / "models", fallback]


def served_weights(source: Path, *, fallback: Path, log: Path | None = None,
                   choice: str | None = None) -> tuple[Path, WeightsInfo]:
    """The file to serve for the packaged ``source`` and what to record about it.

    ``log`` gets the conversion's output, and is only created when a conversion runs.
    """
    choice = choice or weights_choice()
    digest = file_digest(source)
    if choice == "packaged":
        return source, {"weights": "packaged", "weightsSha256": digest}
    name = f"{source.stem}.{digest[:16]}.F16.gguf"
    info: WeightsInfo = {"weights": "F16", "weightsFrom": source.name,
                         "weightsFromSha256": digest}
    errors: list[str] = []
    for folder in _cache_dirs(fallback):
        target = folder / name
        if target.is_file():
            return target, info
        try:
            folder.mkdir(parents=True, exist_ok=True)
            derive_f16(source, target, log=log)
        except OSError as exc:
            errors.append(f"{folder}: {exc}")
            continue
        return target, info
    raise UsageError("could not write the local judge's F16 weights: " + "; ".join(errors),
                     fix=f"free disk space or make a cache directory writable, or set "
                         f"{WEIGHTS_ENV}=packaged to serve the packaged file as it is")


def derive_f16(source: Path, target: Path, *, log: Path | None = None) -> None:
    """Convert ``source`` to F16 at ``target`` (atomic: a temporary file, then a rename).

    The conversion runs in a child process so llama.cpp's progress lines go to ``log``
    (the server's log) instead of the user's terminal.
    """
    with atomic_path(target) as tmp:
        with open(log if log is not None else os.devnull, "ab") as out:
            proc = subprocess.run([sys.executable, "-m", "judge.llm.local_weights", str(source),
                                   str(tmp)], stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=DERIVE_TIMEOUT,
                                  check=False)
        if proc.returncode != 0 or tmp.stat().st_size == 0:
            raise OSError(f"the F16 conversion of {source.name} exited with code "
                          f"{proc.returncode}")


def _convert(source: str, target: str) -> int:  # pragma: no cover - runs in the child
    import llama_cpp

    # llama-cpp-python's high-level API has no conversion: its binding of llama.cpp's own
    # ``llama_model_quantize`` is the one way in. Its ``params`` argument is declared a
    # pointer to the struct, so the binding passes the struct by reference itself and this
    # module needs no foreign-function code of its own;
    # tests/llm/test_local_weights.py::test_the_binding_is_what_the_conversion_calls fails
    # when that declaration or the struct's fields change.
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_F16
    params.allow_requantize = True
    params.nthread = 2
    return int(llama_cpp.llama_model_quantize(source.encode(), target.encode(), params))


if __name__ == "__main__":  # pragma: no cover - the child of derive_f16
    sys.exit(_convert(sys.argv[1], sys.argv[2]))
