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

from judge.core.secrets import MASK, SHAPES, mask_text, mask_value

A = "a1B2c3D4e5F6g7H8i9J0"  # 20 mixed characters
HEX = "0123456789abcdef"

CORPUS: list[tuple[str, str]] = [
    ("OpenAI", "sk-" + "proj-" + A + A),
    ("OpenAI service account", "sk-" + "svcacct-" + A + A),
    ("Anthropic", "sk-" + "ant-api03-" + A + A + "-" + A),
    ("Google API key", "AI" + "za" + "Sy" + A + "xyz_-123456"),
    ("Google OAuth access token", "ya" + "29." + A + A),
    ("Google OAuth client secret", "GOC" + "SPX-" + A + "abcd"),
    ("AWS access key id", "AK" + "IA" + "IOSFODNN7EXAMPLE"),
    ("AWS temporary key id", "AS" + "IA" + "IOSFODNN7EXAMPLE"),
    ("Azure SAS signature", "sig" + "=" + "q9Z%2Bk3" + A + "%3D"),
    ("Azure storage key", "Account" + "Key=" + A + "+/" + A + "=="),
    ("Azure bus key", "SharedAccess" + "Key=" + A + A),
    ("GitHub classic", "gh" + "p_" + A + A[:16]),
    ("GitHub OAuth", "gh" + "o_" + A + A[:16]),
    ("GitHub fine-grained", "github" + "_pat_" + "11ABC" + A + "_" + A + A),
    ("GitLab personal", "gl" + "pat-" + A),
    ("GitLab deploy", "gl" + "dt-" + A),
    ("Hugging Face", "hf" + "_" + A + A[:14]),
    ("Stripe secret", "sk" + "_live_" + A + A),
    ("Stripe restricted", "rk" + "_live_" + A + A),
    ("Stripe test", "sk" + "_test_" + A),
    ("Slack bot", "xo" + "xb-" + "1234567890-" + A),
    ("Slack app", "xa" + "pp-" + "1-A0123-" + A),
    ("Slack webhook", "https://hooks.slack.com/services/" + "T0123ABCD/B0123ABCD/" + A),
    ("npm", "np" + "m_" + A + A[:16]),
    ("Groq", "gs" + "k_" + A + A + A[:12]),
    ("SendGrid", "SG" + "." + A + "ab" + "." + A + A + "abc"),
    ("DigitalOcean", "do" + "p_v1_" + HEX * 4),
    ("Databricks", "da" + "pi" + HEX * 2),
    ("JWT", "ey" + "JhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxIn0" + "." + A),
    ("Bearer header", "Bearer " + A + A),
    ("RSA private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + A + "\n"
                        "-----END RSA PRIVATE KEY-----"),
    ("OpenSSH private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn" + A + "\n"
                            "-----END OPENSSH PRIVATE KEY-----"),
    ("PGP private key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF" + A + "\n=Ab12\n"
                        "-----END PGP PRIVATE KEY BLOCK-----"),
]
"""(provider, secret) — the table in docs/integrity-hostile.md ("Secret shapes")."""

# The secret part of each that must not survive (a keep label like "sig=" may stay).
def _core(secret: str) -> str:
    for label in ("sig=", "AccountKey=", "SharedAccessKey=", "Bearer ",
                  "https://hooks.slack.com/services/"):
        secret = secret.removeprefix(label)
    return secret[-16:] if "PRIVATE KEY" not in secret else A


PLACES = [
    "{}",
    "deploy failed: {} was rejected",
    '{{"note": "{}", "n": 1}}',
    "\x1b[32m{}\x1b[0m",
    "\x1b[1;31mkey:\x1b[0m \x1b[32m{}\x1b[0m ok",
    '{{"log": "\\u001b[32m{}\\u001b[0m"}}',
    "(see {})",
]

URLS = [
    ("https://user:p@ss@word@db.example.com/x", "p@ss@word"),
    ("postgresql://app:s3cr3t-pass@127.0.0.1:5432/judge", "s3cr3t-pass"),
    ("https://" + A + "@github.com/org/repo.git", A),
    ("https://x.blob.core.windows.net/c?sv=2022-11-02&se=2026&sig=" + A + "%3D", A),
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
_strings = st.one_of(_words, st.builds(lambda a, l, s, r, b: a + l + s + r + b,
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
