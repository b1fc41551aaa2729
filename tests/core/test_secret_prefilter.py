"""The masker's pre-filter (``_loosened`` in core/text/secrets.py) changes no byte of its output.

Masking with the pre-filter and with it forced to "maybe" everywhere (every shape run, as
before it existed) must give the same text and the same count: on the secret corpus in every
place the shape tests use, on near misses that only the loosened patterns match, on the
corpus glued to words (where the boundary decides), and on generated mixtures. And wherever
any shape or URL pattern would match, the pre-filter matches too (else it could hide one).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secret_corpus import CORPUS, URLS
from test_secret_shapes import PLACES

from judge.app.workspace.fixtures import generate_cases
from judge.core.formats.suite import masked_case
from judge.core.text import secrets
from judge.core.text.secrets import MASK, SHAPES, Redactor, formats_may_mask, mask_text, mask_value
from judge.system.resources import load_rubric

ALWAYS = re.compile("")
"""Matches every text: the pre-filter switched off."""

TEXTS = [
    *(place.format(secret) for _, secret in CORPUS for place in PLACES),
    *(f"clone {url} now" for url, _ in URLS),
    *(f"x{secret}" for _, secret in CORPUS),  # glued to a word: no boundary, left alone
    *(f"_{secret}y" for _, secret in CORPUS),
    *(f"\\n{secret}" for _, secret in CORPUS),  # after a JSON escape: a boundary
    "api_key=abcd1234", "token: null", "max_tokens=1024", "Testing token: curl",
    "Bearer abcdefgh12345678", "see https://u:p@host/x?a=1&sig=zzzzzzzzzzzz ok",
    "plain prose with no secret at all", "", "-----BEGIN RSA PRIVATE KEY-----\nabc",
    '{"promptTokens": 12, "password": "hunter22"}', "\x1b[32mnothing here\x1b[0m",
]


def _unfiltered(call: Callable[[], object]) -> object:
    """``call()`` with the pre-filter switched off: every shape runs on every text."""
    names = ("_MAYBE_ANY", "_MAYBE_FORMAT")
    saved = [getattr(secrets, name) for name in names] + [secrets._holds_literal]
    for name in names:
        setattr(secrets, name, ALWAYS)
    secrets._holds_literal = lambda *_: True  # type: ignore[assignment]
    try:
        return call()
    finally:
        for name, value in zip((*names, "_holds_literal"), saved, strict=True):
            setattr(secrets, name, value)


def _both(text: str, formats_only: bool) -> None:
    fast = mask_text(text, formats_only=formats_only)
    assert fast == _unfiltered(lambda: mask_text(text, formats_only=formats_only)), text


@pytest.mark.parametrize("formats_only", [False, True])
def test_the_prefilter_changes_no_output(formats_only: bool) -> None:
    for text in TEXTS:
        _both(text, formats_only)


def test_the_prefilter_sees_every_text_a_pattern_matches() -> None:
    patterns = [p for _, p in SHAPES] + [secrets._USERINFO, secrets._SECRET_QUERY]
    matched = 0
    for text in TEXTS:
        if any(p.search(text) for p in patterns):
            matched += 1
            assert secrets._MAYBE_ANY.search(text), text
            assert secrets._holds_literal(text, secrets._ANY_WORDS), text
        if any(p.search(text) for n, p in SHAPES if n not in secrets.PROSE_SHAPES):
            assert secrets._MAYBE_FORMAT.search(text), text
    assert matched > len(CORPUS)  # not vacuous: most of the texts hold a secret


def test_the_prefilter_does_let_clean_text_through() -> None:
    """Not vacuous the other way: text without a secret is not scanned by every shape."""
    assert secrets._MAYBE_ANY.search("plain prose with no secret at all") is None
    assert secrets._MAYBE_FORMAT.search("Testing token: curl") is None
    assert not secrets._holds_literal('{"score": 80, "rationale": "tests pass"}',
                                     secrets._ANY_WORDS)


PIECES = st.sampled_from([s for _, s in CORPUS] + [u for u, _ in URLS] + [
    " ", "x", "_", "\\n", "=", ":", '"', "'", "api_key", "token", "sk-", "ghp_", "AKIA",
    "\x1b[32m", "\\u001b[0m", "?", "&", "://", "@", "sig=", "Bearer ", "-----BEGIN "])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=8).map("".join), st.booleans())
def test_generated_mixtures_mask_the_same(text: str, formats_only: bool) -> None:
    _both(text, formats_only)


def test_values_and_structures_mask_the_same() -> None:
    secret = CORPUS[0][1]
    value = {"evidence": [f"log {secret}", {"api_key": "abc123456"}], "n": 3, "clean": "ok"}
    redact = Redactor(["hunter2hunter2"])

    def every() -> object:
        return (mask_value(value), mask_value(value, formats_only=True),
                redact("pw hunter2hunter2 and nothing else"))
    fast = every()
    assert fast == _unfiltered(every)
    assert isinstance(fast, tuple) and "hunter2hunter2" not in fast[2]


# -- the case-level check (formats_may_mask): one search over a case's strings joined --


def test_every_text_a_format_pattern_matches_holds_a_literal() -> None:
    patterns = [p for n, p in SHAPES if n not in secrets.PROSE_SHAPES] + [
        secrets._USERINFO, secrets._SECRET_QUERY]
    matched = 0
    for text in TEXTS:
        if secrets._MAYBE_FORMAT.search(text) or any(p.search(text) for p in patterns):
            matched += 1
            assert secrets._holds_literal(text, secrets._FORMAT_WORDS), text
            assert formats_may_mask({"evidence": {"logs": [{"text": text}]}}), text
    assert matched > len(CORPUS)


def _as_case(text: str) -> dict[str, object]:
    """``text`` in every place of a case that is masked: input, output, evidence, a key."""
    return {"id": "c", "input": text, "output": {"text": text, text: 1},
            "evidence": {"agentLogs": [text, {"message": text}]}, "metadata": {"note": text},
            "tags": [text]}


def _walked(raw: dict[str, object]) -> object:
    """``masked_case`` with the case-level check forced to "maybe": every string walked."""
    saved = secrets.formats_may_mask
    secrets.formats_may_mask = lambda *_: True  # type: ignore[assignment]
    try:
        return masked_case(raw)
    finally:
        secrets.formats_may_mask = saved


@pytest.mark.parametrize("text", TEXTS)
def test_the_case_check_changes_no_masked_case(text: str) -> None:
    raw = _as_case(text)
    assert masked_case(raw) == _walked(raw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=8).map("".join))
def test_generated_cases_mask_the_same(text: str) -> None:
    raw = _as_case(text)
    assert masked_case(raw) == _walked(raw)


def test_credential_named_keys_and_escapes_are_walked() -> None:
    assert formats_may_mask({"note": {"api_key": "abc123456"}})
    assert formats_may_mask(["plain \x1b[32mtext"])
    # A credential's name is a literal of the prose-safe shapes: walked, and a number kept.
    assert formats_may_mask({"api_key": "1024", "message": "plain prose"})
    assert mask_value({"api_key": "1024"}, formats_only=True) == ({"api_key": "1024"}, 0)
    assert not formats_may_mask({"count": "1024", "message": "plain prose"})
    assert masked_case({"id": "c", "metadata": {"API-Key": "hunter22"}})["metadata"] == {
        "API-Key": MASK}


@pytest.mark.parametrize("text", ["to\u212aen: abcd1234efgh", "\u017fecret: abcd1234efgh",
                                  "credent\u0131al: abcd1234efgh", "Author\u0130zation: abcd1234"])
def test_a_character_that_folds_to_a_words_letter_is_not_filtered_out(text: str) -> None:
    """A case-insensitive shape reads the Kelvin sign as "k", the long s as "s", both odd i's
    as "i": the words' filter, which lowers ASCII only, lets such a text through to it."""
    assert mask_text(text, formats_only=True)[1] == 1, text
    assert _unfiltered(lambda: mask_text(text, formats_only=True)) == mask_text(
        text, formats_only=True)


def test_the_case_check_lets_a_generated_case_through() -> None:
    """Not vacuous: the generated bench suite's first case needs no walk."""
    case = generate_cases("s", 1, rubric=load_rubric("task-evaluation")).cases[0]
    raw = case.model_dump(mode="json", exclude_defaults=True)
    assert not formats_may_mask([raw[n] for n in ("input", "output", "evidence") if n in raw])
