"""Secrets in prose: the shapes a suite's own text is masked with, and credentials by value.

Each of the corpus's fifteen prose shapes (``Authorization`` headers, bearer tokens,
``api_key=…``-style assignments in free text, JSON and escaped JSON, keys split by
zero-width characters) is masked by the suite's shapes (``formats_only``) and by every
masker, in a case and in a JSON text (which stays JSON); prose *about* credentials is left
as it is; a configured credential's value is masked wherever it appears, whatever its shape.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secret_corpus import CONFIGURED, PROSE, PROSE_KEPT

from judge.core.formats.suite import Case, as_masked_case, masked_case, masking_context
from judge.core.text import secrets
from judge.core.text.secrets import MASK, Redactor, mask_text, mask_value, values_pattern

INVISIBLE = str.maketrans("", "", "\u200b\u200d")


def _clean(text: str, core: str) -> bool:
    return core not in text.translate(INVISIBLE)


@pytest.mark.parametrize(("text", "core"), [(t, c) for _, t, c in PROSE],
                         ids=[name for name, _, _ in PROSE])
@pytest.mark.parametrize("formats_only", [True, False])
def test_each_prose_shape_is_masked(text: str, core: str, formats_only: bool) -> None:
    masked, count = mask_text(text, formats_only=formats_only)
    assert count and MASK in masked and _clean(masked, core), masked
    case = masked_case({"id": "c", "output": text, "input": {"note": text},
                        "evidence": {"agentLogs": [{"text": text}]}})
    assert _clean(json.dumps(case, ensure_ascii=False), core), case


@pytest.mark.parametrize("text", PROSE_KEPT)
def test_prose_about_credentials_is_left_as_it_is(text: str) -> None:
    assert mask_text(text, formats_only=True) == (text, 0)
    raw = {"id": "c", "output": text}
    assert masked_case(raw) is raw


def test_a_configured_value_is_masked_wherever_it_is() -> None:
    values = values_pattern(CONFIGURED.values())
    assert values is not None
    for value in CONFIGURED.values():
        raw = {"id": "c", "output": f"x{value}y", "evidence": {"agentLogs": [{value: value}]}}
        assert value in json.dumps(masked_case(raw))  # no shape of its own: kept without it
        masked = json.dumps(masked_case(raw, values))
        assert value not in masked and MASK in masked
        case = Case.model_validate(raw, context=masking_context(values))
        assert value not in case.model_dump_json()
        assert value not in as_masked_case(Case.model_validate(raw), values).model_dump_json()
        assert value not in Redactor(CONFIGURED.values())(f"log: {value}")
    plain = Case.model_validate({"id": "c", "output": "nothing secret"})
    assert as_masked_case(plain, values) is plain  # nothing to mask: the same case


_prose = st.sampled_from([text for _, text, _ in PROSE])
_words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
                 max_size=10)
_json = st.recursive(st.one_of(st.none(), st.integers(), _words, _prose,
                               st.builds("{} {} {}".format, _words, _prose, _words)),
                     lambda inner: st.one_of(st.lists(inner, max_size=4),
                                             st.dictionaries(_words, inner, max_size=4)),
                     max_leaves=10)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_json, ascii_only=st.booleans(), formats_only=st.booleans())
def test_a_json_text_of_prose_secrets_stays_json(value: Any, ascii_only: bool,
                                                 formats_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    masked, _ = mask_text(text, formats_only=formats_only)
    json.loads(masked)  # no shape crosses a quote or eats an escape, escaped JSON included
    dumped = json.dumps(mask_value(value, formats_only=formats_only)[0], ensure_ascii=False)
    for _, prose, core in PROSE:
        if prose in json.dumps(value, ensure_ascii=False):
            assert _clean(dumped, core), (prose, dumped)


FORMAT_LITERALS = ["-----BEGIN", "k-", "k_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_",
                   "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-", "glft-", "glimt-",
                   "gloas-", "f_", "m_", "SG.", "_v1_", "dapi", "AKIA", "ASIA", "AIza", "xox",
                   "xapp", ".slack.com/", "ya29.", "GOCSPX-", "eyJ", "=", "://"]
WORDS = ["authorization", "Bearer", "API_KEY", "api-key", "ApiKey", "TOKEN", "Secret",
         "Password", "passwd", "credential", "private_key", "PRIVATE-KEY", "privatekey",
         "a\u200bb", "a\\u200Db", "\ufeff", "to\u212aen"]


@pytest.mark.parametrize("literal", FORMAT_LITERALS)
def test_the_filter_finds_every_format_literal_as_written(literal: str) -> None:
    assert secrets._holds_literal(f"in {literal} here", secrets._FORMAT_WORDS)
    assert secrets._holds_literal(literal, secrets._FORMAT_WORDS)


@pytest.mark.parametrize("word", WORDS)
def test_the_filter_finds_every_word_in_any_case(word: str) -> None:
    assert secrets._holds_literal(f"in {word} here", secrets._FORMAT_WORDS)


def test_the_filter_lets_ordinary_text_through() -> None:
    """Not vacuous: upper-case ticket ids (TASK-1234: no "k-") and plain prose are not hits."""
    for text in ("TASK-1234 SHOP-77 DESK_9", "the build passed; see the report", "a: b; c"):
        assert not secrets._holds_literal(text, secrets._FORMAT_WORDS), text
