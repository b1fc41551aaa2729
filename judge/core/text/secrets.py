"""Secrets out of text and data: the one table of secret shapes and the one masker.

Every door that lets text out passes it here: collected artefacts before they become a case
(commit messages, review comments, agent logs, test output), error texts before they are
stored, logged or shown (a provider may echo anything back: a 401 body quoting the
``Authorization`` header, a URL with a password), and cache entries before they are written.
Two layers: the *values* of every credential the process holds are replaced wherever they
appear, and *shapes* that are secrets whatever their value (known key formats, bearer tokens,
a URL's password, ``api_key=…`` assignments, in plain, JSON or escaped-JSON text) are masked
by :data:`SHAPES`, after terminal escapes and invisible characters (a zero-width space
splitting a key) are taken out. Every mask is :data:`MASK`. Pure: the caller collects the
values (from the environment, the client's own key) and passes them
(:func:`values_pattern`).

The shapes are deliberately specific (known key formats, ``Authorization`` schemes, a
password inside a URL, ``secret=value`` assignments): a false positive hides a word of
evidence, a false negative leaks a credential, so the assignment rule is broad on the key
name and leaves only bare numbers alone (``max_tokens=1024`` is not a secret).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "MASK",
    "PROSE_SHAPES",
    "SHAPES",
    "Redactor",
    "formats_may_mask",
    "is_secret_key",
    "mask_text",
    "mask_url",
    "mask_value",
    "masked_fields",
    "secret_paths",
    "secret_values",
    "values_pattern",
]

MASK = "[REDACTED]"

# The user information of a URL: from "scheme://" to the *last* "@" before the host (a
# password may hold "@": "u:p@ss@host" masks "p@ss"). It never crosses a quote, a backslash
# or a space, so a URL inside a JSON text stays inside its string.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#\s\"'<>\\]*)@")
# A query parameter whose name says it holds a secret.
_SECRET_QUERY = re.compile(
    r"(?P<name>[?&][^=&#\s]*(?:key|token|secret|password|passwd|pwd|auth|sig)[^=&#\s]*)"
    r"=[^&#\s\"'\\]*", re.IGNORECASE)
# Terminal escape sequences (CSI like colours, OSC like titles), raw or as JSON spells them
# inside a string: a key wrapped in colour codes has no word boundary before it.
_TERMINAL = re.compile(r"(?:\x1b|\\u001[bB])(?:\[[0-9;?]*[ !#-&(-/]*[@-\[\]-~]"
                       r"|\][^\x07\x1b\"\\]*(?:\x07|\x1b\\|\\u0007)?|[@-Z\]^_])")

# Where a key may start: not inside a word, or right after a JSON string escape ("\nsk-…" in
# a JSON text is a newline before the key, and \b sees no boundary after the "n").
_B = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrtbf]))"

# An optional quote after a name or before a value, JSON-escaped any number of times.
_QUOTE = r"(?:\\*[\"'])?"
# An Authorization (or Proxy-Authorization) header's name and separator, quotes allowed.
_AUTHORIZATION = (r"\b(?:proxy-)?authorization" + _QUOTE + r"\s*[:=]\s*" + _QUOTE + r"\s*")
# A value that looks like a token: 8 or more token characters, one of them a digit.
_TOKENISH = r"(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,}"
# Characters that show nothing: a key split by one ("sk-proj-ab\u200bcd…") is matched
# with them taken out. Raw, or as JSON spells them inside a string.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff]"
                        r"|\\u(?:00[aA][dD]|180[eE]|200[b-fB-F]|206[0-4]|[fF][eE][fF][fF])")

# Every pattern matches only characters a JSON string holds unescaped and never a quote, so
# masking a whole JSON text (the server redacts response bodies) leaves valid JSON: see the
# "secret assignment" rule and tests/core/test_secret_shapes.py.
SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # PEM (RSA, EC, OpenSSH, PKCS#8) and PGP armour. Unterminated, it ends at a quote (the end
    # of a JSON string; base64 holds none) or at the end of the text.
    ("private key block", re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[^\"]*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?=\")|\Z)")),
    ("authorization scheme", re.compile(
        r"(?i)(?P<keep>" + _B + r"(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=-]{8,}")),
    ("OpenAI/Anthropic key", re.compile(_B + r"(?:sk|pk|rk)-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}")),
    ("Stripe key", re.compile(_B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}")),
    ("GitHub token", re.compile(
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("GitLab token", re.compile(
        _B + r"gl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|oas)-[A-Za-z0-9_-]{20,}")),
    ("Hugging Face token", re.compile(_B + r"hf_[A-Za-z0-9]{30,}")),
    ("npm token", re.compile(_B + r"npm_[A-Za-z0-9]{36,}")),
    ("Groq key", re.compile(_B + r"gsk_[A-Za-z0-9]{20,}")),
    ("SendGrid key", re.compile(_B + r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    ("DigitalOcean token", re.compile(_B + r"do[opr]_v1_[a-f0-9]{64}\b")),
    ("Databricks token", re.compile(_B + r"dapi[a-f0-9]{32}(?:-\d+)?\b")),
    ("AWS access key id", re.compile(_B + r"(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("Slack token", re.compile(_B + r"x(?:ox[abeoprs]|app)-[A-Za-z0-9-]{10,}")),
    ("Slack webhook", re.compile(
        r"(?P<keep>\bhooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/-]{8,}")),
    ("Google API key", re.compile(_B + r"AIza[0-9A-Za-z_-]{30,}")),
    ("Google OAuth", re.compile(_B + r"(?:ya29\.[A-Za-z0-9_-]{20,}|GOCSPX-[A-Za-z0-9_-]{20,})")),
    # Azure: a SAS signature anywhere (not only in a query), a storage or bus key in a
    # connection string.
    ("Azure signature", re.compile(r"(?P<keep>" + _B + r"sig=)[A-Za-z0-9%+/=_-]{10,}")),
    ("Azure key", re.compile(
        r"(?i)(?P<keep>" + _B + r"(?:AccountKey|SharedAccessKey|SharedAccessSignature)=)"
        r"[^;\s\"'\\]{8,}")),
    ("JWT", re.compile(_B + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    # Credentials in prose, specific enough for a suite's own text (not in PROSE_SHAPES): an
    # Authorization header's value, a bearer token that looks like one (a digit, 16 or more
    # characters), and a credential-named assignment whose value looks like one (a digit, 8
    # or more characters, not a number): "Testing token: curl" and "max_tokens=1024" stay.
    # Quotes around the name and the value may be JSON-escaped ({\"api_key\": \"…\"}).
    ("authorization header", re.compile(
        r"(?i)(?P<keep>" + _AUTHORIZATION + r"(?:bearer|basic|token|digest|api-?key)\s+)"
        r"[A-Za-z0-9._~+/=-]{8,}")),
    ("authorization value", re.compile(r"(?i)(?P<keep>" + _AUTHORIZATION + ")" + _TOKENISH)),
    ("bearer token", re.compile(
        r"(?i)(?P<keep>\bbearer\s+)(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,}")),
    ("credential assignment", re.compile(
        r"(?i)(?P<keep>\b[A-Za-z0-9_.-]*(?:api[_-]?key|apikey|token|secret|passwd|password|"
        r"credentials?|private[_-]?key)s?" + _QUOTE + r"\s*[:=]\s*" + _QUOTE + r"\s*)"
        r"(?!-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:[\s\"',;}\])]|$))"
        r"(?=[^\s\"'\\,;{}\[\]()]*[0-9])[^\s\"'\\,;{}\[\]()]{8,}")),
    # api_key=..., "password": "...", SECRET_TOKEN: ... Numbers (negative and exponent ones
    # too) and JSON's literals are left alone ("promptTokens": 12, "token": null), an
    # unquoted value ends at a closing bracket or a backslash, so a JSON text stays JSON.
    ("secret assignment", re.compile(
        r"(?i)(?P<keep>\b[A-Za-z0-9_.-]*(?:api[_-]?key|secret|token|passwd|password|pwd|"
        r"access[_-]?key|credential)s?[A-Za-z0-9_]*\"?'?\s*[:=]\s*\"?'?)"
        r"(?!(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|null|true|false)(?:[\s\"',;}\])]|$))"
        r"(?!\[REDACTED\])"
        r"[^\s\"'\\,;{}\[\]()]{4,}")),
)
"""(name, pattern) of every secret shape; a ``keep`` group is a label that stays readable."""

# Environment variables whose value is a credential. ``PWD`` only with a prefix (``DB_PWD``):
# the shell's own ``PWD``/``OLDPWD`` are the working directory, which every path contains.
_SECRET_ENV = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD)$|_PWD$",
                         re.IGNORECASE)
# Dict keys (compared lower-cased, without separators) that name credentials or endpoints.
# Exact names, not substrings: "promptTokens" or a rubric category must not trip them.
_SECRET_KEYS = frozenset({
    "apikey", "xapikey", "apibase", "apiurl", "baseurl", "authorization",
    "proxyauthorization", "accesstoken", "apitoken", "apisecret", "clientsecret",
    "secretkey", "awssecretaccesskey", "password",
})
# A key whose *string* value is masked whole ({"api_key": "..."}): broader, by suffix, since a
# false positive there only hides one value ("promptTokens": 12 is a number and stays).
_MASKED_KEY = re.compile(r"(?i)(api[_-]?key|secret|token|passwd|password|pwd|access[_-]?key|"
                         r"credential|authorization)s?$")
_MIN_SECRET = 6
"""Shorter values are not replaced by value (``"1"`` would mask every digit 1)."""


def _masked(match: re.Match[str]) -> str:
    keep = match.groupdict().get("keep") or ""
    return keep + MASK


def mask_url(text: str) -> str:
    """``text`` with a URL's password (or a lone user token) and secret query values masked.

    ``http://user:secret@host/v1`` → ``http://user:[REDACTED]@host/v1``;
    ``https://TOKEN@host`` → ``https://[REDACTED]@host``; ``…?api_key=k`` →
    ``…?api_key=[REDACTED]``. Everything else is kept byte for byte.
    """
    def userinfo(match: re.Match[str]) -> str:
        user, colon, _secret = match["info"].partition(":")
        return f"{match['scheme']}{user}:{MASK}@" if colon else f"{match['scheme']}{MASK}@"

    masked = _USERINFO.sub(userinfo, text)
    return _SECRET_QUERY.sub(lambda m: f"{m['name']}={MASK}", masked)


PROSE_SHAPES = frozenset({"authorization scheme", "secret assignment"})
"""Shapes that also match prose ("Created token deploy-ci-2025-03", "Testing token: curl"):
left out by ``formats_only``, which a suite's own text is masked with at load (its authors
write about tokens). A key *format* pasted into it is still masked, and so are the narrower
prose shapes: an ``Authorization`` header's value, a bearer token and a credential-named
assignment whose values look like keys."""


def mask_text(text: str, values: re.Pattern[str] | None = None, *,
              formats_only: bool = False) -> tuple[str, int]:
    r"""``text`` with known ``values`` and every secret shape masked, and how many were.

    ``formats_only`` leaves out :data:`PROSE_SHAPES`. Shapes are matched after terminal
    escapes (``\x1b[32msk-…``, each one replaced by a space) and invisible characters (a
    zero-width space inside a key) are taken out: when that finds a secret the text is
    returned so, otherwise unchanged.
    """
    plain = _as_read(text)
    if plain != text:
        masked, count = _mask(plain, values, formats_only)
        if count:
            return masked, count
    return _mask(text, values, formats_only)


def _as_read(text: str) -> str:
    """``text`` as a person reads it: terminal escapes as spaces, invisible characters out."""
    if "\x1b" in text or "\\u001" in text:
        text = _TERMINAL.sub(" ", text)  # a space: "ab\x1b[32msk-…" is two words
    if _may_hide(text):
        text = _INVISIBLE.sub("", text)
    return text


def _may_hide(text: str) -> bool:
    """Whether ``text`` holds an invisible character (raw, or JSON-escaped)."""
    return (not text.isascii() or "\\u" in text) and _INVISIBLE.search(text) is not None


def values_pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern of the secret ``values`` (the longest first; short ones left out), or None.

    What :func:`mask_text`, :func:`mask_value` and :class:`Redactor` take to mask a value
    wherever it appears, whatever its shape.
    """
    kept = sorted({v for v in values if len(v) >= _MIN_SECRET}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, kept))) if kept else None


def _loosened(patterns: Iterable[re.Pattern[str]]) -> re.Pattern[str]:
    """One pattern that matches wherever any of ``patterns`` would, and maybe elsewhere.

    Each is taken without its leading word boundary (:data:`_B`) and its group names, its
    ``(?i)`` made a scoped ``(?i:…)``. Taking out a zero-width condition only widens what a
    pattern matches, so where this finds nothing none of them would match: ``_mask`` then
    returns the text without running them. Why it exists: a pattern that starts with a
    lookbehind gives ``re`` no first character to skip to, so each of the ~20 shapes tried
    every position of every string; the loosened ones start with a literal or a character
    class, and one search replaces ~22 (masking 2,000 generated cases took 5.5 s before it,
    1.6 s with it).
    """
    parts = []
    for pattern in patterns:
        if pattern.flags & ~(re.IGNORECASE | re.UNICODE):
            raise ValueError(f"no loosened form for the flags of {pattern.pattern!r}")
        source = _GROUP_NAME.sub("(?:", pattern.pattern).replace(_B, "")
        if pattern.flags & re.IGNORECASE:
            source = f"(?i:{source.removeprefix('(?i)')})"
        parts.append(f"(?:{source})")
    return re.compile("|".join(parts))


_GROUP_NAME = re.compile(r"\(\?P<\w+>")
_URL_SHAPES = (_USERINFO, _SECRET_QUERY)
_MAYBE_ANY = _loosened([*(p for _, p in SHAPES), *_URL_SHAPES])
_MAYBE_FORMAT = _loosened([*(p for n, p in SHAPES if n not in PROSE_SHAPES), *_URL_SHAPES])


def _mask(text: str, values: re.Pattern[str] | None, formats_only: bool) -> tuple[str, int]:
    count = 0
    if values is not None:
        text, count = values.subn(MASK, text)
    words, maybe = (_FORMAT_WORDS, _MAYBE_FORMAT) if formats_only else (_ANY_WORDS, _MAYBE_ANY)
    if not _holds_literal(text, words) or maybe.search(text) is None:
        return text, count
    for name, pattern in SHAPES:
        if formats_only and name in PROSE_SHAPES:
            continue
        text, n = pattern.subn(_masked, text)
        count += n
    masked = mask_url(text)
    return masked, count + (masked != text)


# A text that a format shape or URL pattern matches holds one of these (each shape's
# loosened form in _MAYBE_FORMAT starts with or contains it; "=" for the Azure, signature
# and query shapes), so a text holding none is left as it is by every one of them: _mask
# and formats_may_mask look for them first (:func:`_holds_literal`). The format literals
# as written; the words of the prose shapes in any case, in the text lower-cased. Each is
# found from one of its rarer bytes, the rest checked around it ("k-" as a "-" after a
# "k"): the search then stops at few positions of ordinary text (14 µs for a generated
# case's 2.3 KB where the literals listed as they start took 45-65 µs).
_FORMAT_LITERALS = re.compile(
    rb"-(?:----BEGIN|(?<=k-)|(?<=glpat-)|(?<=gldt-)|(?<=glrt-)|(?<=glptt-)|(?<=glcbt-)"
    rb"|(?<=glsoat-)|(?<=glft-)|(?<=glimt-)|(?<=gloas-))"
    rb"|_(?:(?<=k_)|(?<=[fm]_)|(?<=gh[pousr]_)|(?<=github_)|v1_)"
    rb"|\.slack\.com/|:(?=//)|=|A(?:KIA|SIA|Iza)|GOCSPX-|SG\.|p(?<=dap)i|J(?<=eyJ)|x(?:ox|app)"
    rb"|ya29\.")
# With the words: the UTF-8 of an invisible character (raw or \u-escaped), since a key split
# by one holds no literal whole, and of a character a case-insensitive shape reads as an
# ASCII letter of a word (the Kelvin sign as "k", the long s as "s", the dotted and dotless
# i as "i"), since lower-casing the bytes leaves it as it is.
_FORMAT_WORDS = re.compile(
    rb"z(?<=authoriz)|b(?=earer)|k(?:(?<=api_k)|(?<=api-k)|(?<=apik))ey|k(?<=tok)en"
    rb"|cr(?:(?<=secr)et|edential)|w(?<=passw)|v(?<=priv)ate[_-]?key"
    rb"|\xe2(?:\x80[\x8b-\x8f]|\x81[\xa0-\xa4]|\x84\xaa)|\xef\xbb\xbf|\xc2\xad|\xe1\xa0\x8e"
    rb"|\\u(?:200[b-f]|206[0-4]|feff|00ad|180e)|\xc5\xbf|\xc4[\xb0\xb1]")
# The same with the words of the prose shapes (PROSE_SHAPES), for masking with every shape.
_ANY_WORDS = re.compile(_FORMAT_WORDS.pattern + rb"|basic|pwd|access[_-]?key")


def _holds_literal(text: str, words: re.Pattern[bytes]) -> bool:
    """Whether ``text`` holds a format literal as written, or one of ``words`` in any case.

    Searched as UTF-8 bytes, the words in them lower-cased (ASCII only): 14 µs for a
    generated case's 2.3 KB of text, where a case-insensitive search of the words took 320.
    """
    data = text.encode("utf-8", "surrogatepass")
    return _FORMAT_LITERALS.search(data) is not None or words.search(data.lower()) is not None


def masked_fields(raw: Any, names: Iterable[str], values: re.Pattern[str] | None = None) -> Any:
    """``raw`` (a mapping read from a suite) with the secrets in its ``names`` fields masked.

    The shapes specific enough for a suite's own text (``formats_only``) and the ``values``
    a caller holds; ``raw`` itself when nothing is masked (its cache keys unchanged), else
    a copy. What every loader of untrusted case text (suites, pair suites) masks with.
    """
    fields = [name for name in names if isinstance(raw, dict) and name in raw]
    if not fields or not formats_may_mask([raw[n] for n in fields], values):
        return raw
    out = raw
    for name in fields:
        value, count = mask_value(raw[name], formats_only=True, values=values)
        if count:
            if out is raw:
                out = dict(raw)
            out[name] = value
    return out


def formats_may_mask(value: Any, values: re.Pattern[str] | None = None) -> bool:
    """False only when ``mask_value(value, formats_only=True, values=values)`` masks nothing.

    One search over every string (keys included) joined, for a literal that every format
    shape's match holds (:func:`_holds_literal`), where the walk runs the pre-filter on
    each string; True at once for a credential-named key holding text, or a terminal
    escape (masked after it is taken out); True for an invisible character (the words'
    search finds it) or one of ``values``. Why it exists: masking a suite's case at load
    was most of validating it.
    """
    texts: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)  # the JSON types first: isinstance of an ABC is slow
        if kind is str or (kind is not dict and kind is not list and isinstance(item, str)):
            texts.append(item)
        elif kind is dict or (kind is not list and isinstance(item, Mapping)):
            for key, sub in item.items():
                if isinstance(key, str):
                    texts.append(key)
                    if isinstance(sub, str) and sub and _masks_whole(key) and not sub.isdigit():
                        return True
                stack.append(sub)
        elif kind is list or isinstance(item, tuple | list):
            stack.extend(item)
    text = "\0".join(texts)
    return "\x1b" in text or "\\u001" in text \
        or _holds_literal(text, _FORMAT_WORDS) \
        or (values is not None and values.search(text) is not None)


def is_secret_key(key: str) -> bool:
    """Whether a mapping key is exactly a credential's or endpoint's name (``api_key``).

    Exact names, so a structure holding one (a cache entry, a schema) can be refused.
    """
    return _normal_key(key) in _SECRET_KEYS


@functools.lru_cache(maxsize=4096)
def _masks_whole(key: str) -> bool:
    """Whether a string under ``key`` is masked whole (a credential-named key)."""
    return bool(_MASKED_KEY.search(key)) or is_secret_key(key)


@functools.lru_cache(maxsize=4096)
def _normal_key(key: str) -> str:
    return "".join(c for c in key.lower() if c.isalnum())


def mask_value(value: Any, *, formats_only: bool = False,
               values: re.Pattern[str] | None = None) -> tuple[Any, int]:
    """Mask every string (keys included) of a JSON-like value; the copy and the count.

    A string under a credential-named key is the secret whole (``{"api_key": "…"}``), unless
    it is a bare number. ``formats_only`` and ``values``: as :func:`mask_text`.
    """
    if isinstance(value, str):
        return mask_text(value, values, formats_only=formats_only)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            clean_key, n = mask_text(key, values, formats_only=formats_only) \
                if isinstance(key, str) else (key, 0)
            if isinstance(key, str) and isinstance(item, str) and item \
                    and _masks_whole(key) and not item.isdigit():
                clean, m = MASK, 1
            else:
                clean, m = mask_value(item, formats_only=formats_only, values=values)
            out[clean_key] = clean
            total += n + m
        return out, total
    if isinstance(value, list | tuple):
        items = [mask_value(v, formats_only=formats_only, values=values) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0


def _url_secrets(value: str) -> list[str]:
    out = []
    for match in _USERINFO.finditer(value):
        _user, colon, secret = match["info"].partition(":")
        out.append(secret if colon else match["info"])
    return out


def secret_values(env: Mapping[str, str], extra: Iterable[str | None] = ()) -> tuple[str, ...]:
    """The credential values a process holds, longest first.

    Key/token/secret variables, passwords inside URL-valued variables, and ``extra`` (a
    client's own key).
    """
    found: set[str] = set()
    for name, value in env.items():
        if not value:
            continue
        if _SECRET_ENV.search(name):
            found.add(value)
        if "://" in value:
            found.update(_url_secrets(value))
    found.update(v for v in extra if v)
    return tuple(sorted((v for v in found if len(v) >= _MIN_SECRET), key=len, reverse=True))


def secret_paths(value: Any) -> list[str]:
    """The sorted paths (``request.params.api_key``) of credential-like keys in ``value``."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, node = stack.pop()
        kind = type(node)  # the JSON types first: isinstance of an ABC is slow
        if kind is dict or (kind is not list and kind is not tuple and isinstance(node, Mapping)):
            for k, v in node.items():
                secret = is_secret_key(str(k))
                nested = _nested(v)
                if secret or nested:  # a path is written only where it is needed
                    where = f"{path}.{k}" if path else str(k)
                    if secret:
                        found.append(where)
                    if nested:
                        stack.append((where, v))
        elif kind is list or kind is tuple or isinstance(node, list | tuple):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node) if _nested(v))
    return sorted(found)


def _nested(value: Any) -> bool:
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        return True
    return kind is not str and isinstance(value, Mapping | list | tuple)


class Redactor:
    """Masks the secret values it was given and every secret shape in a text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._values = values_pattern(secrets)

    def __call__(self, text: str) -> str:
        """``text`` with every secret masked."""
        return mask_text(text, self._values)[0]
