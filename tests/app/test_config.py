"""Settings: defaults < judge.toml (or [tool.judge]) < JUDGE_* environment < flags, with sources."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, judge_env, run_judge

from judge.app.workspace.configview import config_view
from judge.app.workspace.settings import LOCAL_DEFAULT_SOURCE, LOCAL_DEFAULTS, Settings
from judge.app.workspace.workspace import Workspace
from judge.core.text.errors import UsageError
from judge.core.text.secrets import mask_url

TOML = """\
model = "openai/gpt-4o-mini"
seed = 1
concurrency = 3
cache_dir = "my-cache"
timeout = 12.5
"""


def test_precedence_and_sources(workspace: Path) -> None:
    (workspace / "judge.toml").write_text(TOML)
    env = {"JUDGE_SEED": "5", "JUDGE_CONCURRENCY": "8", "JUDGE_SAMPLES": "2",
           "JUDGE_TIMEOUT": "", "OTHER": "x"}
    cfg = Workspace.open(workspace, {"concurrency": 32, "seed": None, "template": "mine"}, env=env)
    expected = {
        "model": (("openai/gpt-4o-mini",), "judge.toml"),
        "cache_dir": ("my-cache", "judge.toml"),
        "timeout": (12.5, "judge.toml"),  # an empty env value does not count
        "seed": (5, "env JUDGE_SEED"),  # a None flag was not passed
        "samples": (2, "env JUDGE_SAMPLES"),
        "concurrency": (32, "flag"),
        "template": ("mine", "flag"),
        "cache_mode": ("read-write", "default"),
        "temperature": (0.0, "default"),
    }
    for key, (value, source) in expected.items():
        assert (getattr(cfg.settings, key), cfg.sources[key]) == (value, source), key
    assert set(cfg.settings.model_dump()) == set(Settings.model_fields)
    assert list(cfg.settings.models) == ["openai/gpt-4o-mini"]
    assert cfg.root == workspace


def test_defaults_without_any_file(workspace: Path) -> None:
    # No judge configured: the embedded local judge is the default, with its own prompt
    # and score mode; everything else is Settings' own default.
    cfg = Workspace.open(workspace, env={})
    assert cfg.settings.model_dump() == Settings().model_copy(update=LOCAL_DEFAULTS).model_dump()
    assert {cfg.sources[k] for k in LOCAL_DEFAULTS} == {LOCAL_DEFAULT_SOURCE}
    assert {v for k, v in cfg.sources.items() if k not in LOCAL_DEFAULTS} == {"default"}
    assert cfg.settings.seed == 42 and list(cfg.settings.models) == []


@pytest.mark.parametrize(("models", "local"), [
    ("local/smollm2", True), ("local/smollm2,local/other", True),
    ("openai/gpt-4o-mini", False), ("local/smollm2,openai/gpt-4o-mini", False)])
def test_the_embedded_judges_defaults_follow_the_judges(workspace: Path, models: str,
                                                        local: bool) -> None:
    cfg = Workspace.open(workspace, env={"JUDGE_MODEL": models})
    want = LOCAL_DEFAULTS if local else {"template": "judge", "score_mode": "direct"}
    assert {k: getattr(cfg.settings, k) for k in LOCAL_DEFAULTS} == want
    # A door's --model worked out again: a hosted judge given by flag gets the plain
    # defaults back, and a local one given by flag gets the embedded ones.
    other = cfg.with_overrides({"model": "openai/gpt-4o-mini" if local else "local/smollm2"})
    back = {"template": "judge", "score_mode": "direct"} if local else LOCAL_DEFAULTS
    assert {k: getattr(other.settings, k) for k in LOCAL_DEFAULTS} == back
    assert other.sources["template"] == ("default" if local else LOCAL_DEFAULT_SOURCE)


@pytest.mark.parametrize("where", ["file", "env", "flag"])
def test_a_given_template_or_score_mode_wins_over_the_embedded_defaults(
        workspace: Path, where: str) -> None:
    given = {"template": "judge", "score_mode": "direct"}
    env: dict[str, str] = {}
    flags: dict[str, Any] = {}
    if where == "file":
        (workspace / "judge.toml").write_text('template = "judge"\nscore_mode = "direct"\n')
    elif where == "env":
        env = {"JUDGE_TEMPLATE": "judge", "JUDGE_SCORE_MODE": "direct"}
    else:
        flags = dict(given)
    cfg = Workspace.open(workspace, flags, env=env)
    assert {k: getattr(cfg.settings, k) for k in given} == given
    assert LOCAL_DEFAULT_SOURCE not in cfg.sources.values()


def test_env_model_list(workspace: Path) -> None:
    cfg = Workspace.open(workspace, env={"JUDGE_MODEL": "a/x, b/y"})
    assert list(cfg.settings.models) == ["a/x", "b/y"]


def test_pyproject_tool_judge_when_no_judge_toml(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.judge]\nseed = 9\nmodel = ["a/m1", "b/m2"]\n')
    cfg = Workspace.open(workspace, env={})
    assert cfg.settings.seed == 9 and list(cfg.settings.models) == ["a/m1", "b/m2"]
    assert cfg.sources["seed"] == "pyproject.toml [tool.judge]"
    # judge.toml wins over pyproject.toml entirely.
    (workspace / "judge.toml").write_text("seed = 3\n")
    cfg = Workspace.open(workspace, env={})
    assert (cfg.settings.seed, cfg.sources["seed"]) == (3, "judge.toml")
    assert list(cfg.settings.models) == [] and cfg.sources["model"] == "default"


def test_pyproject_without_tool_judge_is_ignored(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.ruff]\nx = 1\n')
    assert set(Workspace.open(workspace, env={}).sources.values()) == {"default",
                                                                         LOCAL_DEFAULT_SOURCE}


def test_typo_in_judge_toml_names_file_and_key(workspace: Path) -> None:
    (workspace / "judge.toml").write_text("seed = 7\nconcurency = 4\n")
    with pytest.raises(UsageError) as info:
        Workspace.open(workspace, env={})
    text = str(info.value)
    assert str(workspace / "judge.toml") in text and "concurency" in text
    proc = run_judge(["workspace", "config"], workspace)
    assert proc.returncode == 2
    assert "judge.toml" in proc.stderr and "concurency" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_typo_in_tool_judge_names_the_section(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text("[tool.judge]\nsede = 1\n")
    with pytest.raises(UsageError) as info:
        Workspace.open(workspace, env={})
    assert "pyproject.toml" in str(info.value) and "[tool.judge].sede" in str(info.value)


def test_bad_values_name_their_origin(workspace: Path) -> None:
    with pytest.raises(UsageError) as info:
        Workspace.open(workspace, env={"JUDGE_CONCURRENCY": "abc"})
    assert "concurrency" in str(info.value) and "env JUDGE_CONCURRENCY" in str(info.value)
    proc = run_judge(["workspace", "config"], workspace, env=judge_env(JUDGE_CONCURRENCY="abc"))
    assert proc.returncode == 2
    assert "env JUDGE_CONCURRENCY" in proc.stderr and "Traceback" not in proc.stderr

    with pytest.raises(UsageError, match=r"cache_mode \(from flag\)"):
        Workspace.open(workspace, {"cache_mode": "sometimes"}, env={})
    (workspace / "judge.toml").write_text("concurrency = 0\n")
    with pytest.raises(UsageError) as info:
        Workspace.open(workspace, env={})
    assert "judge.toml" in str(info.value) and "concurrency" in str(info.value)
    (workspace / "judge.toml").write_text("seed = [\n")
    with pytest.raises(UsageError, match="invalid TOML"):
        Workspace.open(workspace, env={})


def test_config_json_shows_value_and_source(workspace: Path) -> None:
    (workspace / "judge.toml").write_text('model = "hosted_vllm/x"\nseed = 7\n')
    proc = run_judge(["workspace", "config", "--json"], workspace, env=judge_env(JUDGE_SAMPLES="3"))
    assert proc.returncode == 0, proc.stderr
    shown: dict[str, Any] = json.loads(proc.stdout)
    assert set(shown) == set(Settings.model_fields)
    assert all(set(v) == {"value", "source"} for v in shown.values())
    assert shown["model"] == {"value": ["hosted_vllm/x"], "source": "judge.toml"}
    assert shown["seed"] == {"value": 7, "source": "judge.toml"}
    assert shown["samples"] == {"value": 3, "source": "env JUDGE_SAMPLES"}
    assert shown["concurrency"] == {"value": 16, "source": "default"}
    human = run_judge(["workspace", "config"], workspace)
    assert human.returncode == 0 and "judge.toml" in human.stdout


def test_config_masks_credentials_inside_urls(workspace: Path) -> None:
    (workspace / "judge.toml").write_text(
        'api_base = "http://user:s3cret@127.0.0.1:9/v1"\n'
        'store_url = "postgresql://app:pw-xyz@db.internal/judge?sslmode=require"\n')
    view = config_view(Workspace.open(workspace, env={"JUDGE_MODEL": "hosted_vllm/x"}))
    shown = view.public()
    assert shown["api_base"] == {"value": "http://user:[REDACTED]@127.0.0.1:9/v1",
                                 "source": "judge.toml"}
    assert shown["store_url"]["value"] == "postgresql://app:[REDACTED]@db.internal/judge?sslmode=require"
    assert shown["model"] == {"value": ["hosted_vllm/x"], "source": "env JUDGE_MODEL"}
    assert [s.name for s in view.settings] == list(Settings.model_fields)
    for args in (["workspace", "config", "--json"], ["workspace", "config"]):
        proc = run_judge(args, workspace, env=judge_env(COLUMNS="200"))
        assert proc.returncode == 0, proc.stderr
        assert "s3cret" not in proc.stdout and "pw-xyz" not in proc.stdout
        assert "user:[REDACTED]@127.0.0.1" in proc.stdout


@pytest.mark.parametrize(("url", "shown"), [
    ("https://TOKEN@host/v1", "https://[REDACTED]@host/v1"),
    ("http://h:8080/v1?api_key=k1&x=1", "http://h:8080/v1?api_key=[REDACTED]&x=1"),
    ("sqlite:///.judge/judge.db", "sqlite:///.judge/judge.db"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("openai/gpt-4o-mini", "openai/gpt-4o-mini"),
])
def test_mask_url(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_run_honours_judge_toml(fake_server: Any, workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    (workspace / "judge.toml").write_text(
        f'model = "hosted_vllm/fake-judge"\napi_base = "{fake_server.base_url}/v1"\nseed = 7\n')
    proc = run_judge(["run", "suite.yaml", "--case", "fix-login-redirect", "--json",
                      "--no-check"], workspace)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["run"]["seed"] == 7
    assert payload["run"]["models"] == ["hosted_vllm/fake-judge"]
    (case,) = payload["cases"]
    assert case["status"] == "scored"
    assert case["judge"]["seed"] == 7 and case["judge"]["model"] == "hosted_vllm/fake-judge"
    assert fake_server.stats()["requests"] == 1
    assert "local judge" not in proc.stderr  # a configured model: no local fallback
    # A flag still beats the file.
    proc = run_judge(["run", "suite.yaml", "--case", "fix-login-redirect", "--json",
                      "--no-check", "--seed", "11"], workspace)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["run"]["seed"] == 11


def test_config_shows_the_local_judges_timeout(tmp_path: Path) -> None:
    """`judge workspace config` said 60 s where a local judge gets 900 s a judgment."""
    (derived,) = config_view(Workspace.open(tmp_path, env={})).derived
    assert (derived.name, derived.value) == ("timeout (local/ judges)", 900.0)
    (given,) = config_view(Workspace.open(tmp_path, env={"JUDGE_TIMEOUT": "30"})).derived
    assert (given.value, given.source) == (30.0, "the timeout setting")
    shown = run_judge(["workspace", "config"], tmp_path)
    assert shown.returncode == 0 and "timeout (local/ judges)" in shown.stdout
