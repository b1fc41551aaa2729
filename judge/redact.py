"""Secrets out of text: every error message passes here before it is stored, logged or shown.

Two layers, because a provider may echo anything back (a 401 body quoting the
``Authorization`` header, a URL with a password): the *values* of every credential the
process holds are replaced wherever they appear, and shapes that are secrets whatever their
value (bearer tokens, ``sk-…`` keys, a URL's password, ``?api_key=…``) are masked too. Pure:
the caller collects the values (from the environment, the client's own key) and passes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["MASK", "Redactor", "mask_url", "secret_values"]

MASK = "***"

# The user information of a URL: from "scheme://" to the last "@" before the host ends.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#\s@]*)@")
# A query parameter whose name says it holds a secret.
_SECRET_QUERY = re.compile(
    r"(?P<name>[?&][^=&#\s]*(?:key|token|secret|password|passwd|pwd|auth|sig)[^=&#\s]*)"
    r"=[^&#\s]*", re.IGNORECASE)
# Shapes that are secrets whatever their value: a bearer token, provider key formats.
_SHAPES = re.compile(
    r"(?P<bearer>\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|\b(?:sk|pk|rk)-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
    r"|\bAIza[0-9A-Za-z_-]{30,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abpr]-[A-Za-z0-9-]{10,}")
# Environment variables whose value is a credential. ``PWD`` only with a prefix (``DB_PWD``):
# the shell's own ``PWD``/``OLDPWD`` are the working directory, which every path contains.
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD)$|_PWD$",
                          re.IGNORECASE)
_MIN_SECRET = 6
"""Shorter values are not replaced by value (``"1"`` would mask every digit 1)."""


def mask_url(text: str) -> str:
    """``text`` with a URL's password (or a lone user token) and secret query values masked.

    ``http://user:secret@host/v1`` → ``http://user:***@host/v1``;
    ``https://TOKEN@host`` → ``https://***@host``; ``…?api_key=k`` → ``…?api_key=***``.
    Everything else is kept byte for byte.
    """
    def userinfo(match: re.Match[str]) -> str:
        user, colon, _secret = match["info"].partition(":")
        return f"{match['scheme']}{user}:{MASK}@" if colon else f"{match['scheme']}{MASK}@"

    masked = _USERINFO.sub(userinfo, text)
    return _SECRET_QUERY.sub(lambda m: f"{m['name']}={MASK}", masked)


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
        if _SECRET_NAME.search(name):
            found.add(value)
        if "://" in value:
            found.update(_url_secrets(value))
    found.update(v for v in extra if v)
    return tuple(sorted((v for v in found if len(v) >= _MIN_SECRET), key=len, reverse=True))


class Redactor:
    """Replaces known secret values and secret shapes in text with ``***``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if len(s) >= _MIN_SECRET}, key=len, reverse=True)
        self._values = re.compile("|".join(map(re.escape, values))) if values else None

    def __call__(self, text: str) -> str:
        """``text`` with every secret masked."""
        if self._values is not None:
            text = self._values.sub(MASK, text)
        text = _SHAPES.sub(lambda m: (m["bearer"] or "") + MASK, text)
        return mask_url(text)
