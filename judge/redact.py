"""Credentials out of sight: a URL's password shown as ``***`` wherever a URL is shown."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["mask_url"]

_CREDENTIAL: Final = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)[^@\s]*@")


def mask_url(value: str) -> str:
    """``value`` with the password of every URL in it as ``***`` (``user:***@host``)."""
    return _CREDENTIAL.sub(lambda m: m.group("head") + "***@", value)
