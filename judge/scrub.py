"""Credentials out of collected text: tokens, keys and passwords become ``[REDACTED]``.

Collected artefacts (agent logs above all, but also commit messages, review comments and
test output) carry whatever the tools printed, and a case file is meant to be committed
and sent to a judge. Every string of a collected case passes through :func:`scrub_text`.

The patterns are deliberately specific (known key shapes, ``Authorization`` schemes, a
password inside a URL, ``secret=value`` assignments): a false positive hides a word of
evidence, a false negative leaks a credential, so the assignment rule is broad on the key
name and leaves only bare numbers alone (``max_tokens=1024`` is not a secret).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "scrub_text", "scrub_value"]

REDACTED = "[REDACTED]"

# (pattern, replacement); the replacement keeps the label so the evidence still reads.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE "
                r"KEY-----|\Z)", re.S), REDACTED),
    # scheme://user:password@host — the user stays, the password goes.
    (re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+):[^/\s@]+@"), rf"\1:{REDACTED}@"),
    (re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),  # OpenAI, Anthropic (sk-ant-...)
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),  # AWS access key ids
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), REDACTED),  # Slack
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), REDACTED),  # Google API keys
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),
    # api_key=..., "password": "...", SECRET_TOKEN: ... (bare numbers are left alone)
    (re.compile(r"(?i)\b([A-Za-z0-9_.-]*(?:api[_-]?key|secret|token|passwd|password|pwd|"
                r"access[_-]?key|credential)s?[A-Za-z0-9_]*)(\"?'?\s*[:=]\s*\"?'?)"
                r"(?!\d+(?:[\s\"',;]|$))(?!\[REDACTED\])[^\s\"',;]{4,}"), rf"\1\2{REDACTED}"),
)


_SECRET_KEY = re.compile(r"(?i)(api[_-]?key|secret|token|passwd|password|pwd|access[_-]?key|"
                         r"credential|authorization)s?$")


def scrub_text(text: str) -> tuple[str, int]:
    """``text`` with every credential replaced by ``[REDACTED]``, and how many were replaced."""
    count = 0
    for pattern, replacement in _RULES:
        text, n = pattern.subn(replacement, text)
        count += n
    return text, count


def scrub_value(value: Any) -> tuple[Any, int]:
    """Scrub every string (keys included) of a JSON-like value; the copy and the count."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            clean_key, n = scrub_text(key) if isinstance(key, str) else (key, 0)
            if isinstance(key, str) and isinstance(item, str) and item \
                    and _SECRET_KEY.search(key) and not item.isdigit():
                clean, m = REDACTED, 1  # {"api_key": "..."}: the value is the secret
            else:
                clean, m = scrub_value(item)
            out[clean_key] = clean
            total += n + m
        return out, total
    if isinstance(value, list | tuple):
        items = [scrub_value(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0
