"""The one secret detector against a corpus of provider formats, in every place text hides them.

Every secret below is synthetic (built from parts, so no scanner mistakes this file for a
leak) but has its provider's real shape. Each is embedded plainly, quoted in JSON, wrapped in
terminal colour codes (raw and JSON-escaped), inside a sentence and after ``key=``; in every
one the secret is gone and what is left is still readable. A JSON text masked whole stays
valid JSON with the same structure (the server redacts response bodies that way).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secret_corpus import CORPUS, URLS
from secret_corpus import secret_core as _core

from judge.core.text.secrets import MASK, SHAPES, mask_text, mask_value

PLACES = [
    "{}",
    "deploy failed: {} was rejected",
    '{{"note": "{}", "n": 1}}',
    "\x1b[32m{}\x1b[0m",
    "\x1b[1;31mkey:\x1b[0m \x1b[32m{}\x1b[0m ok",
    '{{"log": "\\u001b[32m{}\\u001b[0m"}}',
    "(see {})",
]

@pytest.mark.parametrize(("provider", "secret"), CORPUS, ids=[p for p, _ in CORPUS])
@pytest.mark.parametrize("place", PLACES)
def test_every_provider_shape_is_masked_everywhere(provider: str, secret: str,
                                                   place: str) -> None:
    if place.startswith("{{") and "\n" in secret:
        secret = secret.replace("\n", "\\n")  # as JSON writes it
    text = place.format(secret)
    masked, count = mask_text(text)
    assert _core(secret) not in masked, (provider, masked)
    assert count >= 1 and MASK in masked
    if text.startswith("{\""):
        assert json.loads(masked).keys() == json.loads(text).keys()


@pytest.mark.parametrize(("url", "password"), URLS)
def test_url_credentials_are_masked_whole(url: str, password: str) -> None:
    masked, _ = mask_text(f"clone {url} now")
    assert password not in masked and "now" in masked
    # the host stays readable
    assert any(h in masked for h in ("db.example.com", "127.0.0.1", "github.com", "windows"))


def test_shape_names_are_unique_and_the_table_is_covered() -> None:
    names = [name for name, _ in SHAPES]
    assert len(names) == len(set(names))
    for _provider, secret in CORPUS:
        assert any(pattern.search(secret) for _n, pattern in SHAPES), secret


@pytest.mark.parametrize("text", [
    "max_tokens=1024 and the token count", "see https://example.com/a?page=2",
    "the \x1b[31mred\x1b[0m build", "sk-short", "the skeleton key", "AIza is a prefix",
    "email a@b.example.com", "commit 0123456789abcdef0123456789abcdef01234567",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert mask_text(text) == (text, 0)


# --- a masked JSON text is still JSON ------------------------------------------------------

_secrets = st.sampled_from([s for _, s in CORPUS] + [u for u, _ in URLS])
_words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
                 max_size=12)
# A secret stands as a token: what is around it is not a letter or a digit ("0sk-proj-…" is
# one word, and "task-…" must not read as a key).
_seps = st.sampled_from([" ", "\n", "\t", ":", "=", "(", ")", "'", '"', ",", "/", "|", "<"])
_strings = st.one_of(_words, st.builds(lambda a, left, s, right, b: a + left + s + right + b,
                                       _words, _seps, _secrets, _seps, _words),
                     st.builds(lambda s: "\x1b[32m" + s + "\x1b[0m", _secrets))
_keys = st.one_of(_words, st.sampled_from(["api_key", "token", "password", "promptTokens",
                                           "AccountKey", "sig", "url"]))
_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), _strings),
                     lambda inner: st.one_of(st.lists(inner, max_size=4),
                                             st.dictionaries(_keys, inner, max_size=4)),
                     max_leaves=12)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_json, compact=st.booleans())
def test_masking_a_json_text_leaves_valid_json(value: Any, compact: bool) -> None:
    text = json.dumps(value, separators=(",", ":") if compact else None,
                      ensure_ascii=bool(compact))
    masked, _ = mask_text(text)
    json.loads(masked)  # never raises: no shape crosses a quote or eats an escape


@settings(max_examples=200, deadline=None)
@given(value=_json)
def test_mask_value_removes_every_corpus_secret(value: Any) -> None:
    masked, _ = mask_value(value)
    dumped = json.dumps(masked, ensure_ascii=False)
    for _provider, secret in CORPUS:
        assert _core(secret) not in dumped
