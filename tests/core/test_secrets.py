"""Secrets never survive an error text: by value, by shape, inside URLs."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from judge.core.text.secrets import MASK, Redactor, secret_paths, secret_values

ENV = {
    "OPENAI_API_KEY": "sk-live-0123456789abcdefXYZ",
    "JUDGE_API_KEY": "local-judge-key-42",
    "JUDGE_API_BASE": "http://svc:hunter2-pass@127.0.0.1:9/v1",
    "JUDGE_STORE_URL": "postgresql+psycopg://app:pg-secret-9@127.0.0.1/judge",
    "HOME": "/root",
    "JUDGE_SEED": "42",
}


@pytest.mark.parametrize("text", [
    "401: {'error': 'bad key', 'headers': {'Authorization': 'Bearer sk-live-0123456789abcdefXYZ'}}",
    "invalid api key local-judge-key-42 for model x",
    "cannot reach http://svc:hunter2-pass@127.0.0.1:9/v1/chat/completions",
    "password authentication failed: pg-secret-9",
    "echo: Authorization: Bearer abcdefghijklmnop1234",
    "unknown key sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA",
    "GET /v1/models?api_key=whatever123&x=1",
])
def test_secrets_are_masked(text: str) -> None:
    redact = Redactor(secret_values(ENV))
    out = redact(text)
    for secret in ("sk-live-0123456789abcdefXYZ", "local-judge-key-42", "hunter2-pass",
                   "pg-secret-9", "abcdefghijklmnop1234", "AAAAAAAAAAAAAAAAAAAAAAAA",
                   "whatever123"):
        assert secret not in out, out
    assert MASK in out


def test_ordinary_text_and_short_values_are_kept() -> None:
    redact = Redactor(secret_values(ENV))
    text = "score 42 for case fix-login-redirect at /root/ws (seed 42)"
    assert redact(text) == text
    assert "/root" not in secret_values(ENV) and "42" not in secret_values(ENV)


def test_the_working_directory_is_not_a_secret() -> None:
    # The shell's PWD/OLDPWD are in every path an error names: masking them would print
    # "[REDACTED]/judge.toml". A prefixed *_PWD is a password.
    env = {"PWD": "/home/someone/project", "OLDPWD": "/home/someone",
           "DB_PWD": "hunter2-long"}
    found = secret_values(env)
    assert found == ("hunter2-long",)
    assert Redactor(found)("bad /home/someone/project/judge.toml") == \
        "bad /home/someone/project/judge.toml"


@pytest.mark.parametrize(("value", "paths"), [
    ({"a": {"api_key": 1, "x": [{"Authorization": 2}, ({"apiKey": 3},)]},
      "api-key": MappingProxyType({"password": [1]}), 5: {"base_url": "u"}},
     ["5.base_url", "a.api_key", "a.x[0].Authorization", "a.x[1][0].apiKey", "api-key",
      "api-key.password"]),
    ([{"apiKey": "x"}, "api_key", ("t", {"k": {"client_secret": {}}})],
     ["[0].apiKey", "[2][1].k.client_secret"]),
    ("api_key", []),
    (MappingProxyType({"token": 1, "api_key": {"api_key": None}}),
     ["api_key", "api_key.api_key"]),
    ({"messages": [{"role": "user", "content": "api_key=sk-x"}], "params": {"top_p": 1}}, []),
])
def test_secret_paths_name_every_credential_key_at_any_depth(value: Any, paths: list[str]) -> None:
    assert secret_paths(value) == paths
