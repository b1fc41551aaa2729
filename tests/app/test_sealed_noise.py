"""A stored noise model decides the gate, so it is sealed and read strictly.

Editing its spread to 50 turned a real regression into "within noise", exit 0; a spread of
``Infinity`` or a 5,000-digit degrees of freedom was exit 70. Now each is exit 2 naming the
file and the fix, and the workspace is left byte-identical. A loopback judge of known noise;
three runs: a ``--samples 2`` run the noise is measured from, the baseline's run, and the
run checked (both asked once, so the gate reads the stored model for them).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, load_fake_server, run_judge

from judge.core.stats.noise import NoiseModel
from judge.core.text.errors import ConfigError
from judge.core.text.seals import NO_SECRET, Sealer
from judge.system.noise_files import load_noise, noise_path, save_noise

NOISY = "hosted_vllm/fake-judge~8"


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A workspace with a measured noise model, a baseline, and the run to check."""
    ws = tmp_path_factory.mktemp("noise") / "ws"
    (ws / "suites").mkdir(parents=True)
    shutil.copy(EXAMPLE_SUITE, ws / "suites" / "suite.yaml")
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    base = ["suites/suite.yaml", "--model", NOISY, "--api-base", server.base_url + "/v1"]
    try:
        sampled = run_judge(["run", *base, "--samples", "2", "--no-check", "--json"], ws)
        assert sampled.returncode == 0, sampled.stderr
        run = json.loads(sampled.stdout)["run"]["id"]
        assert run_judge(["judges", "noise", run], ws).returncode == 0
        assert run_judge(["run", *base, "--seed", "1"], ws).returncode == 0  # the baseline
        checked = run_judge(["run", *base, "--seed", "2", "--no-check", "--json"], ws)
        assert checked.returncode == 0, checked.stderr
        yield ws, json.loads(checked.stdout)["run"]["id"]
    finally:
        server.stop()


def _noise_file(ws: Path) -> Path:
    (path,) = (ws / "baselines" / "noise").glob("*.json")
    return path


def _snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a regular file by its digest, anything else by its type."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            out[str(path.relative_to(root))] = (
                hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(mode)
                else stat.filemode(mode))
    return out


def _edit(key: str, value: str) -> Callable[[Path], None]:
    """Replace the first ``"key": <number>`` of the file by ``"key": value``."""
    def apply(path: Path) -> None:
        text = path.read_text(encoding="utf-8")
        at = text.index(f'"{key}": ') + len(key) + 4
        end = next(i for i in range(at, len(text)) if text[i] in ",\n}")
        path.write_text(text[:at] + value + text[end:], encoding="utf-8")
    return apply


def _replace(make: Callable[[Path], None]) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        path.unlink()
        make(path)
    return apply


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "spread edited to 50 (the issue's case)": (_edit("sd", "50"), "edited by hand"),
    "spread Infinity (was exit 70)": (_edit("sd", "Infinity"), "Infinity is not a JSON number"),
    "df of 5,000 digits (was exit 70)": (_edit("df", "9" * 5000), "5,000 digits"),
    "spread 1e999": (_edit("sd", "1e999"), "infinity"),
    "df as a string": (_edit("df", '"20"'), "valid integer"),
    "a duplicate key": (_edit("asks", '30, "asks": 3'), "duplicate key 'asks'"),
    "nested 100,000 deep": (_edit("asks", "[" * 100_000 + "]" * 100_000), "nested deeper"),
    "a FIFO": (_replace(os.mkfifo), "FIFO"),
    "a folder": (_replace(lambda p: p.mkdir()), "folder"),
    "a link to /dev/zero": (_replace(lambda p: p.symlink_to("/dev/zero")), "character device"),
    "over 1 MiB": (_edit("source", '"' + "x" * (1024 * 1024) + '"'), "file too large"),
}


def test_the_intact_model_is_what_the_gate_reads(measured: tuple[Path, str]) -> None:
    proc = run_judge(["check", measured[1], "--json"], measured[0])
    assert proc.returncode in (0, 1), proc.stderr
    source = json.loads(proc.stdout)["test"]["noiseAfter"]["source"]
    assert "samples of run" in source  # the stored model, measured from the --samples run
    assert json.loads(_noise_file(measured[0]).read_text())["digest"].startswith("sha256:")


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_noise_model_is_exit_2_naming_the_file_and_writes_nothing(
        measured: tuple[Path, str], tmp_path: Path, damage: str) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(measured[0], ws)
    path = _noise_file(ws)
    change, words = DAMAGE[damage]
    change(path)
    before = _snapshot(ws)
    proc = run_judge(["check", measured[1], "--json"], ws)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-300:], proc.stderr[-1000:])
    assert "internal error" not in proc.stderr and proc.stdout == ""
    assert str(path) in proc.stderr and words in proc.stderr, proc.stderr[-1000:]
    assert "fix:" in proc.stderr and len(proc.stderr) < 20_000
    assert _snapshot(ws) == before


def _model(measured: tuple[Path, str]) -> NoiseModel:
    path = _noise_file(measured[0])
    return load_noise(path.parent.parent, path.stem, NO_SECRET) or pytest.fail("no model")


def test_under_the_secret_only_a_model_sealed_with_it_is_used(
        measured: tuple[Path, str], tmp_path: Path) -> None:
    model, team = _model(measured), Sealer("team-secret")
    with pytest.raises(ConfigError, match="carries no seal"):  # written without the secret
        save_noise(tmp_path, model, NO_SECRET)
        load_noise(tmp_path, model.key, team)
    path = save_noise(tmp_path, model, team)
    assert load_noise(tmp_path, model.key, team) == model
    assert load_noise(tmp_path, model.key, NO_SECRET) == model  # the digest, for the rest
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    data["overall"]["sd"] = 50.0
    path.write_text(json.dumps(data), encoding="utf-8")  # edited, seals kept
    for reader in (team, NO_SECRET):
        with pytest.raises(ConfigError, match="edited by hand"):
            load_noise(tmp_path, model.key, reader)
    del data["seal"], data["digest"]  # stripped: a file from before seals, to look at
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="carries no seal"):
        load_noise(tmp_path, model.key, team)
    assert load_noise(tmp_path, model.key, NO_SECRET) is not None  # as a baseline without one
    assert noise_path(tmp_path, model.key) == path
