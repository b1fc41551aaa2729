"""The local judge's served weights: which file, where it is kept, what is recorded.

The real conversion of the packaged model (and a server computing with it) is exercised in
test_local_model.py (marked ``local_model``); here the choice, the cache location, reuse,
the fallback and a failed conversion are checked without llama.cpp.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from judge.core.errors import UsageError
from judge.llm.local import served_engine
from judge.llm.local_weights import WEIGHTS_ENV, served_weights, weights_choice


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
